// CPAM — a PAM conversation, which needs a C callback that answers prompts from an app-data
// pointer; written in C it keeps the Swift side to one call. Apart from CLinuxShim so that only
// the agent links libpam (the client library and the CLI do not).
#ifndef CPAM_H
#define CPAM_H

/// Checks a user's password through PAM (pam_authenticate, then pam_acct_mgmt) with the named
/// service. Returns PAM_SUCCESS (0) or a PAM error code; `message` receives pam_strerror's text.
int screentime_pam_check(const char *service, const char *user, const char *password, char *message,
                         unsigned long message_size);

#endif
