#include "CDNSFastPath.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dns_fast_path_object.h"

struct dns_fast_path {
    struct bpf_object *object;
    int names;
    int generation;
    int hellos;
};

// libbpf's own messages: its warnings go to the agent's standard error (the journal), its
// debugging (every relocation) nowhere.
static int quiet(enum libbpf_print_level level, const char *format, va_list arguments) {
    if (level == LIBBPF_DEBUG) return 0;
    return vfprintf(stderr, format, arguments);
}

static int pin_path(char *buffer, size_t size, const char *directory, const char *name) {
    int written = snprintf(buffer, size, "%s/%s", directory, name);
    return written < 0 || (size_t)written >= size ? -ENAMETOOLONG : 0;
}

static const char *const programs[] = {"question", "answer", "hello", "acknowledged", "asked"};
#define PROGRAMS (int)(sizeof(programs) / sizeof(programs[0]))

int dns_fast_path_open(const char *directory, struct dns_fast_path **out, const char **stage) {
    *out = NULL;
    *stage = "make the directory";
    if (mkdir(directory, 0700) < 0 && errno != EEXIST) return -errno;
    // A file system of its own: a test's agent and the installed one never see each other's
    // programs, and one left by an agent killed before it could clean up goes.
    while (umount2(directory, MNT_DETACH) == 0) {}
    *stage = "mount a bpf file system";
    if (mount("screentime", directory, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0) return -errno;
    libbpf_set_print(quiet);
    struct dns_fast_path *path = calloc(1, sizeof(*path));
    int error = -ENOMEM;
    if (!path) goto failed;
    *stage = "open the programs";
    LIBBPF_OPTS(bpf_object_open_opts, options, .object_name = "screentime_dns");
    path->object = bpf_object__open_mem(dns_fast_path_object, sizeof(dns_fast_path_object), &options);
    error = libbpf_get_error(path->object);
    if (error) {
        path->object = NULL;
        goto failed;
    }
    *stage = "load the programs (the kernel's verifier)";
    if ((error = bpf_object__load(path->object))) goto failed;
    *stage = "find the tables";
    path->names = bpf_object__find_map_fd_by_name(path->object, "names");
    path->generation = bpf_object__find_map_fd_by_name(path->object, "generation");
    path->hellos = bpf_object__find_map_fd_by_name(path->object, "hellos");
    if (path->names < 0 || path->generation < 0 || path->hellos < 0) {
        error = -ENOENT;
        goto failed;
    }
    *out = path;
    *stage = NULL;
    return 0;
failed:
    dns_fast_path_close(path, directory);
    return error < 0 ? error : -error;
}

void dns_fast_path_close(struct dns_fast_path *path, const char *directory) {
    if (path) {
        if (path->object) bpf_object__close(path->object);
        free(path);
    }
    dns_fast_path_unmount(directory);
}

void dns_fast_path_unmount(const char *directory) {
    umount2(directory, MNT_DETACH);
    rmdir(directory);
}

int dns_fast_path_pin(struct dns_fast_path *path, const char *directory) {
    dns_fast_path_unpin(directory);
    for (int i = 0; i < PROGRAMS; i++) {
        char pin[4096];
        int error = pin_path(pin, sizeof(pin), directory, programs[i]);
        struct bpf_program *program = bpf_object__find_program_by_name(path->object, programs[i]);
        if (!error && !program) error = -ENOENT;
        if (!error) error = bpf_program__pin(program, pin);
        if (error) {
            dns_fast_path_unpin(directory);
            return error < 0 ? error : -error;
        }
    }
    return 0;
}

void dns_fast_path_unpin(const char *directory) {
    for (int i = 0; i < PROGRAMS; i++) {
        char pin[4096];
        if (pin_path(pin, sizeof(pin), directory, programs[i]) == 0) unlink(pin);
    }
}

// An entry of either table (names or hellos: the same value), its hits given back.
static int table_put(int table, const void *key, __u64 expires, __u64 generation, __u64 *replaced_hits) {
    struct dns_fast_path_value value = {0};
    *replaced_hits = 0;
    if (bpf_map_lookup_elem(table, key, &value) == 0) *replaced_hits = value.hits;
    value.expires = expires;
    value.generation = generation;
    value.hits = 0;
    return bpf_map_update_elem(table, key, &value, BPF_ANY) < 0 ? -errno : 0;
}

static int table_remove(int table, const void *key, __u64 *hits) {
    struct dns_fast_path_value value = {0};
    *hits = 0;
    if (bpf_map_lookup_elem(table, key, &value) < 0) return errno == ENOENT ? 0 : -errno;
    *hits = value.hits;
    return bpf_map_delete_elem(table, key) < 0 && errno != ENOENT ? -errno : 0;
}

// The entries of a table whose keys are at most `size` bytes, up to `limit`.
static int table_count(int table, size_t size, int limit) {
    unsigned char key[sizeof(struct hello_fast_path_key) > sizeof(struct dns_fast_path_key)
                          ? sizeof(struct hello_fast_path_key)
                          : sizeof(struct dns_fast_path_key)],
        next[sizeof(key)];
    if (size > sizeof(key)) return -EINVAL;
    const void *previous = NULL;
    int count = 0;
    while (bpf_map_get_next_key(table, previous, next) == 0) {
        memcpy(key, next, size);
        previous = key;
        if (++count >= limit) break;
    }
    return count;
}

int dns_fast_path_put(
    struct dns_fast_path *path, const struct dns_fast_path_key *key, __u64 expires, __u64 generation,
    __u64 *replaced_hits) {
    return table_put(path->names, key, expires, generation, replaced_hits);
}

int dns_fast_path_remove(struct dns_fast_path *path, const struct dns_fast_path_key *key, __u64 *hits) {
    return table_remove(path->names, key, hits);
}

int dns_fast_path_set_generation(struct dns_fast_path *path, __u64 generation) {
    __u32 zero = 0;
    return bpf_map_update_elem(path->generation, &zero, &generation, BPF_ANY) < 0 ? -errno : 0;
}

int dns_fast_path_take_hits(
    struct dns_fast_path *path, void *context,
    void (*each)(void *context, const struct dns_fast_path_key *key, __u64 hits), int limit) {
    struct dns_fast_path_key key, next;
    const void *previous = NULL;
    int seen = 0;
    while (seen < limit && bpf_map_get_next_key(path->names, previous, &next) == 0) {
        key = next;
        previous = &key;
        seen++;
        struct dns_fast_path_value value;
        if (bpf_map_lookup_elem(path->names, &key, &value) < 0 || value.hits == 0) continue;
        __u64 hits = value.hits;
        value.hits = 0;
        if (bpf_map_update_elem(path->names, &key, &value, BPF_EXIST) < 0) continue;
        each(context, &key, hits);
    }
    return seen;
}

int dns_fast_path_count(struct dns_fast_path *path) {
    return table_count(path->names, sizeof(struct dns_fast_path_key), DNS_FAST_PATH_ENTRIES * 2);
}

int dns_fast_path_run(
    struct dns_fast_path *path, const char *name, const void *packet, __u32 length, __u32 segment_size,
    __u32 *result) {
    struct bpf_program *program = bpf_object__find_program_by_name(path->object, name);
    if (!program) return -ENOENT;
    struct __sk_buff context = {0};
    if (segment_size) {
        context.gso_size = segment_size;
        context.gso_segs = (length + segment_size - 1) / segment_size;
    }
    LIBBPF_OPTS(
        bpf_test_run_opts, options, .data_in = packet, .data_size_in = length, .repeat = 1,
        .ctx_in = segment_size ? &context : NULL, .ctx_size_in = segment_size ? sizeof(context) : 0);
    if (bpf_prog_test_run_opts(bpf_program__fd(program), &options) < 0) return -errno;
    *result = options.retval;
    return 0;
}

int hello_fast_path_put(
    struct dns_fast_path *path, const struct hello_fast_path_key *key, __u64 expires, __u64 generation,
    __u64 *replaced_hits) {
    return table_put(path->hellos, key, expires, generation, replaced_hits);
}

int hello_fast_path_remove(struct dns_fast_path *path, const struct hello_fast_path_key *key, __u64 *hits) {
    return table_remove(path->hellos, key, hits);
}

int hello_fast_path_count(struct dns_fast_path *path) {
    return table_count(path->hellos, sizeof(struct hello_fast_path_key), HELLO_FAST_PATH_ENTRIES * 2);
}

__u64 dns_fast_path_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
}
