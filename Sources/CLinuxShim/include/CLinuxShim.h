// CLinuxShim — the few things Swift cannot reach through Glibc, with prefixed symbols.
//
// - struct ucred / SO_PEERCRED is only declared with _GNU_SOURCE, which Swift's Glibc module does
//   not define: the caller's uid, gid and pid on a Unix socket come from here.
// - getgrouplist is variadic-free but its group buffer sizing dance is kept in one place.
// - A PAM conversation needs a C callback that answers prompts from an app-data pointer; writing
//   it in C keeps the Swift side to one call.
#ifndef CLINUXSHIM_H
#define CLINUXSHIM_H

#include <sys/types.h>

/// The peer's credentials on a connected Unix socket. Returns 0, or -1 with errno set.
int screentime_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// accept4 with SOCK_CLOEXEC (accept4 needs _GNU_SOURCE). Returns the new descriptor or -1.
int screentime_accept(int fd);

/// Every group of `user` (its primary group `gid` included) into `groups` (capacity `*count`).
/// On return `*count` is the number of groups; returns -1 if the buffer was too small (then
/// `*count` is the number needed), 0 otherwise.
int screentime_group_list(const char *user, gid_t gid, gid_t *groups, int *count);

/// Checks a user's password through PAM (pam_authenticate, then pam_acct_mgmt) with the named
/// service. Returns PAM_SUCCESS (0) or a PAM error code; `message` receives pam_strerror's text.
int screentime_pam_check(const char *service, const char *user, const char *password, char *message,
                         unsigned long message_size);

#endif
