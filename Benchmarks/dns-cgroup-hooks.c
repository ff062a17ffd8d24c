/* For dns-cgroup-hooks.sh: loads the DNS fast path's programs rebuilt as cgroup programs
 * (cg_egress runs `question`, then `asked` on what it let go; cg_ingress runs `answer`), puts
 * host1..N.allowed.test (type A) in their table for one uid, as the agent would after judging
 * each once, and attaches both to a cgroup v2 directory. Says "attached" on stdout, waits for
 * SIGTERM, then prints the programs' runs and time a run (kernel.bpf_stats_enabled, if it was on)
 * and how many questions the table let go, and detaches. An object with a table `small_names`
 * (STAGE=small) has the same names put there too, by their hash, and its hits counted too.
 *   dns-cgroup-hooks OBJECT CGROUP_DIRECTORY UID NAMES */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../Sources/CDNSFastPath/include/dns_fast_path_types.h"

static volatile sig_atomic_t done;
static void stop(int signal_number) {
    (void)signal_number;
    done = 1;
}

static int fail(const char *what) {
    perror(what);
    return 1;
}

/* STAGE=small's key: her uid, the type, the name's length and its 64-bit FNV-1a hash. */
struct small_key {
    __u32 uid;
    __u16 type;
    __u16 length;
    __u64 hash;
};

/* The questions a table of names let go: its entries' hits, summed (keys of at most 256 bytes). */
static unsigned long long hits_of(int table) {
    __u8 key[256], next[256];
    struct dns_fast_path_value value;
    unsigned long long hits = 0;
    void *after = NULL;
    while (bpf_map_get_next_key(table, after, next) == 0) {
        if (bpf_map_lookup_elem(table, next, &value) == 0) hits += value.hits;
        memcpy(key, next, sizeof key);
        after = key;
    }
    return hits;
}

/* The wire form of hostI.allowed.test, its final zero included; its length. */
static unsigned wire_name(unsigned i, __u8 *name) {
    char label[16];
    int n = snprintf(label, sizeof label, "host%u", i);
    __u8 *at = name;
    *at++ = (__u8)n;
    memcpy(at, label, n);
    at += n;
    *at++ = 7;
    memcpy(at, "allowed", 7);
    at += 7;
    *at++ = 4;
    memcpy(at, "test", 4);
    at += 4;
    *at++ = 0;
    return (unsigned)(at - name);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: dns-cgroup-hooks OBJECT CGROUP_DIRECTORY UID NAMES\n");
        return 2;
    }
    unsigned uid = (unsigned)strtoul(argv[3], NULL, 10), names = (unsigned)strtoul(argv[4], NULL, 10);
    struct bpf_object *object = bpf_object__open_file(argv[1], NULL);
    if (!object || bpf_object__load(object)) return fail("loading the programs");
    int generation = bpf_map__fd(bpf_object__find_map_by_name(object, "generation"));
    int table = bpf_map__fd(bpf_object__find_map_by_name(object, "names"));
    struct bpf_map *small_map = bpf_object__find_map_by_name(object, "small_names");
    int small = small_map ? bpf_map__fd(small_map) : -1;
    __u32 zero = 0;
    __u64 current = 1;
    if (bpf_map_update_elem(generation, &zero, &current, BPF_ANY)) return fail("the generation");
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (unsigned i = 1; i <= names; i++) {
        struct dns_fast_path_key key;
        memset(&key, 0, sizeof key);
        key.uid = uid;
        key.type = 1;
        key.length = (__u16)wire_name(i, key.name);
        struct dns_fast_path_value value = {
            .expires = ((__u64)now.tv_sec + 3600) * 1000000000ull, .generation = current};
        if (bpf_map_update_elem(table, &key, &value, BPF_ANY)) return fail("the names");
        if (small >= 0) {
            struct small_key small_key = {.uid = uid, .type = key.type, .length = key.length, .hash = 0xcbf29ce484222325ull};
            for (unsigned j = 0; j < key.length; j++) small_key.hash = (small_key.hash ^ key.name[j]) * 0x100000001b3ull;
            if (bpf_map_update_elem(small, &small_key, &value, BPF_ANY)) return fail("the names by hash");
        }
    }
    int cgroup = open(argv[2], O_RDONLY | O_DIRECTORY);
    if (cgroup < 0) return fail(argv[2]);
    int egress = bpf_program__fd(bpf_object__find_program_by_name(object, "cg_egress"));
    int ingress = bpf_program__fd(bpf_object__find_program_by_name(object, "cg_ingress"));
    if (bpf_prog_attach(egress, cgroup, BPF_CGROUP_INET_EGRESS, BPF_F_ALLOW_MULTI)) return fail("attaching egress");
    if (bpf_prog_attach(ingress, cgroup, BPF_CGROUP_INET_INGRESS, BPF_F_ALLOW_MULTI))
        return fail("attaching ingress");
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    printf("attached\n");
    fflush(stdout);
    while (!done) pause();
    int programs[2] = {egress, ingress};
    const char *hooks[2] = {"egress (question, asked)", "ingress (answer)"};
    for (int i = 0; i < 2; i++) {
        struct bpf_prog_info info;
        __u32 size = sizeof info;
        memset(&info, 0, sizeof info);
        if (bpf_obj_get_info_by_fd(programs[i], &info, &size) == 0 && info.run_cnt > 0)
            printf("%s: %.0f ns a run (%llu runs)\n", hooks[i], (double)info.run_time_ns / info.run_cnt,
                (unsigned long long)info.run_cnt);
    }
    unsigned long long passed = hits_of(table) + (small >= 0 ? hits_of(small) : 0);
    printf("passed %llu\n", passed);
    bpf_prog_detach2(egress, cgroup, BPF_CGROUP_INET_EGRESS);
    bpf_prog_detach2(ingress, cgroup, BPF_CGROUP_INET_INGRESS);
    return 0;
}
