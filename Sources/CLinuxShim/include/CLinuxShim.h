// CLinuxShim — the few things Swift cannot reach through Glibc, with prefixed symbols.
//
// - struct ucred / SO_PEERCRED is only declared with _GNU_SOURCE, which Swift's Glibc module does
//   not define: the caller's uid, gid and pid on a Unix socket come from here.
// - getgrouplist is variadic-free but its group buffer sizing dance is kept in one place.
// - recvmmsg (a burst of datagrams in one call) needs _GNU_SOURCE too.
// - Passing open files over a Unix socket (SCM_RIGHTS) needs the CMSG_* macros, which Swift
//   cannot call: a caller's program is opened by the caller and its descriptor sent to the agent.
// The PAM conversation is in CPAM, and the launcher's fork-to-exec code (which brings up a
// loopback through libnl-route-3) in CLauncher, so that this shim (used by the client library
// too) links nothing beyond libc.
#ifndef CLINUXSHIM_H
#define CLINUXSHIM_H

#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/types.h>

/// recv/send flags, which the release build of Swift's Glibc module does not always show.
static inline int screentime_msg_dontwait(void) { return MSG_DONTWAIT; }
/// Opens a path without opening what it names (no device's open runs), for a look before the
/// real open: O_PATH needs _GNU_SOURCE, which Swift's Glibc does not see.
int screentime_open_path(const char *path, int follow_symlinks);
static inline int screentime_msg_nosignal(void) { return MSG_NOSIGNAL; }
/// The calling thread's id (glibc declares gettid only with _GNU_SOURCE).
int screentime_thread_id(void);

/// A spawn's file action closing every descriptor from `from` up (glibc declares it only with
/// _GNU_SOURCE).
#include <spawn.h>
int screentime_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

/// glibc's malloc tuning and trimming (malloc.h, which Swift's Glibc module does not show): at
/// most `count` arenas, and the free pages of all of them given back to the kernel.
#include <malloc.h>
static inline void screentime_limit_malloc_arenas(int count) { (void)mallopt(M_ARENA_MAX, count); }
static inline void screentime_malloc_trim(void) { (void)malloc_trim(0); }

/// Names the calling thread for ps, top and /proc (at most 15 bytes are kept); 0 or -1 with errno.
int screentime_name_thread(const char *name);

/// The peer's credentials on a connected Unix socket. Returns 0, or -1 with errno set.
int screentime_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// accept4 with SOCK_CLOEXEC (accept4 needs _GNU_SOURCE). Returns the new descriptor or -1.
int screentime_accept(int fd);

/// pipe2 with O_CLOEXEC (pipe2 needs _GNU_SOURCE). Returns 0, or -1 with errno set.
int screentime_pipe(int fds[2]);

/// The inode generation of an open file (FS_IOC_GETVERSION; ioctl is variadic): with the device
/// and inode number it tells a file from a later one that reused the number. Returns 0, or -1
/// with errno set (ENOTTY where the file system keeps none).
int screentime_inode_generation(int fd, unsigned int *generation);

/// The file system type (`f_type` of fstatfs, which Swift's Glibc does not import) of an open
/// file. Returns 0, or -1 with errno set.
int screentime_filesystem_type(int fd, long *type);

/// setns(2) into a network namespace (CLONE_NEWNET) for the calling thread, through syscall (not
/// declared for Swift without _GNU_SOURCE). Returns 0, or -1 with errno set.
int screentime_enter_network_namespace(int fd);

/// pidfd_open(2) and pidfd_send_signal(2), through syscall (variadic, and not wrapped by
/// Debian 12's glibc headers for Swift). Return a descriptor / 0, or -1 with errno set.
int screentime_pidfd_open(int pid);
int screentime_pidfd_send_signal(int pidfd, int signal);

/// A file system's reconfiguration through the mount API (fspick(2), fsconfig(2); through syscall,
/// not wrapped for Swift): `screentime_fspick` opens the file system mounted at `path` (close-on-
/// exec), `screentime_fsconfig_set` sets one option on it (a flag, or `key=value` when `value` is
/// not NULL), `screentime_fsconfig_reconfigure` applies them. Only the file system's own options
/// change, not the mount's (nosuid and the like). Return a descriptor / 0, or -1 with errno set.
int screentime_fspick(const char *path);
int screentime_fsconfig_set(int fd, const char *key, const char *value);
int screentime_fsconfig_reconfigure(int fd);

/// A new pseudo-terminal (/dev/ptmx, unlocked; ioctl is variadic): its master, non-blocking and
/// close-on-exec, and the number N of its /dev/pts/N. Returns the master, or -1 with errno set.
int screentime_open_pty(int *number);

/// The most descriptors one message carries.
#define SCREENTIME_MAX_DESCRIPTORS 16

/// sendmsg of `length` bytes with up to SCREENTIME_MAX_DESCRIPTORS open descriptors attached
/// (SCM_RIGHTS), MSG_NOSIGNAL. Returns the bytes sent, or -1 with errno set.
long screentime_send_with_descriptors(int fd, const void *bytes, unsigned long length, const int *descriptors,
                                      int count);

/// recvmsg into `bytes`; descriptors that came with the bytes are stored in `descriptors` (close
/// on exec) up to `capacity_descriptors`, the rest closed; `*count` says how many were stored.
/// `flags` are recvmsg's (MSG_DONTWAIT). Returns the bytes received (0 at end), or -1 with errno.
long screentime_receive_with_descriptors(int fd, void *bytes, unsigned long capacity, int *descriptors,
                                         int capacity_descriptors, int *count, int flags);

/// Every group of `user` (its primary group `gid` included) into `groups` (capacity `*count`).
/// On return `*count` is the number of groups; returns -1 if the buffer was too small (then
/// `*count` is the number needed), 0 otherwise.
int screentime_group_list(const char *user, gid_t gid, gid_t *groups, int *count);

/// The most datagrams one `screentime_receive_datagrams` takes.
#define SCREENTIME_MAX_DATAGRAMS 64

/// recvmmsg(2) (needs _GNU_SOURCE) without blocking: up to `count` (at most
/// SCREENTIME_MAX_DATAGRAMS) datagrams into slots of `slot_size` bytes laid end to end in
/// `buffer`, datagram i in slot i with its length in `lengths[i]` (a larger one is cut to the
/// slot). Returns how many, or -1 with errno set (EAGAIN when none waits).
int screentime_receive_datagrams(int fd, void *buffer, unsigned int slot_size, unsigned int count,
                                 unsigned int *lengths);

#endif
