// The DNS fast path's kernel side, loaded through libbpf (Debian's libbpf-dev): the two programs
// of bpf/dns-fast-path.bpf.c pinned where iptables' `bpf` match finds them, and their table.
#ifndef C_DNS_FAST_PATH_H
#define C_DNS_FAST_PATH_H

#include <stddef.h>
#include "dns_fast_path_types.h"

struct dns_fast_path;

/// Mounts a bpf file system of the caller's own on `directory` (made if missing; whatever was
/// mounted there before is detached: an agent killed before it could clean up) and loads the
/// programs and their table. Returns 0, or a negative errno with `*stage` naming the step that
/// failed.
int dns_fast_path_open(const char *directory, struct dns_fast_path **out, const char **stage);

/// Frees, unmounts and removes the directory. The rules that use the programs keep them (and
/// their table) alive in the kernel.
void dns_fast_path_close(struct dns_fast_path *path, const char *directory);

/// Detaches the file system `dns_fast_path_open` mounted and removes the directory (the
/// programs and table stay loaded).
void dns_fast_path_unmount(const char *directory);

/// Pins the programs in `directory` (the file system `dns_fast_path_open` mounted) as `question`,
/// `answer` and `hello`, for iptables to find. Needs no capability. Returns 0 or a negative errno.
int dns_fast_path_pin(struct dns_fast_path *path, const char *directory);

/// Removes the pins (a rule made meanwhile holds its program itself).
void dns_fast_path_unpin(const char *directory);

/// Puts an entry in the table (replacing one), giving the hits of the one it replaced (0 for
/// none). Returns 0 or a negative errno.
int dns_fast_path_put(
    struct dns_fast_path *path, const struct dns_fast_path_key *key, __u64 expires, __u64 generation,
    __u64 *replaced_hits);

/// Removes an entry, giving its hits (0 for none).
int dns_fast_path_remove(struct dns_fast_path *path, const struct dns_fast_path_key *key, __u64 *hits);

/// Makes every entry of another generation void.
int dns_fast_path_set_generation(struct dns_fast_path *path, __u64 generation);

/// Calls `each` with every entry whose hits are not zero, and zeroes them (an entry the kernel
/// changes meanwhile keeps what it adds after the read). At most `limit` entries.
int dns_fast_path_take_hits(
    struct dns_fast_path *path, void *context,
    void (*each)(void *context, const struct dns_fast_path_key *key, __u64 hits), int limit);

/// The number of entries in the table now (expired ones included), or a negative errno.
int dns_fast_path_count(struct dns_fast_path *path);

/// Runs the program `name` (`question`, `answer` or `hello`) on `packet` (an Ethernet frame: the program
/// sees it from its IP header on, as from iptables, with a socket of uid 0) through the kernel's
/// test run, and gives what it returned: 1, a match. With `segment_size`, the packet is one sent
/// in segments of that size (UDP_SEGMENT). For the tests. Returns 0 or a negative errno.
int dns_fast_path_run(
    struct dns_fast_path *path, const char *name, const void *packet, __u32 length, __u32 segment_size,
    __u32 *result);

/// Puts an entry in the hello table (replacing one), giving the hits of the one it replaced.
/// Returns 0 or a negative errno.
int hello_fast_path_put(
    struct dns_fast_path *path, const struct hello_fast_path_key *key, __u64 expires, __u64 generation,
    __u64 *replaced_hits);

/// Removes an entry of the hello table, giving its hits (0 for none).
int hello_fast_path_remove(struct dns_fast_path *path, const struct hello_fast_path_key *key, __u64 *hits);

/// The number of entries in the hello table now (expired ones included), or a negative errno.
int hello_fast_path_count(struct dns_fast_path *path);

/// CLOCK_MONOTONIC in nanoseconds, the kernel side's clock (bpf_ktime_get_ns).
__u64 dns_fast_path_now(void);

#endif
