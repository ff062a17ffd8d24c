// CCapability — libcap (Debian's libcap-dev), for the agent's dropping of the capabilities it
// does not need once its setup is done.
#ifndef CCAPABILITY_SHIM_H
#define CCAPABILITY_SHIM_H

#include <sys/capability.h>
#include <sys/prctl.h>

/// prctl(2) is variadic, which Swift cannot call.
static inline int screentime_set_no_new_privs(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

#endif
