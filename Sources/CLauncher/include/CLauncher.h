// CLauncher — the launcher's fork-to-exec code (Sources/LinuxSupport/Launcher.swift), with
// prefixed symbols. Apart from CLinuxShim because bringing up an extension's loopback goes
// through libnl-route-3, and CLinuxShim (used by the client library) links nothing beyond libc.
#ifndef CLAUNCHER_H
#define CLAUNCHER_H

#include <sys/types.h>

/// prctl(PR_SET_PDEATHSIG, SIGKILL) (variadic), then whether the parent is already gone:
/// 0, or -1 with errno set (ESRCH when the parent died first).
int screentime_die_with_parent(void);

/// What `screentime_launch` starts: every string and array ready before the fork (the child may
/// not allocate). A limit below zero is left as it is.
struct screentime_launch_spec {
    const char *program;
    char *const *arguments;
    char *const *environment;
    const char *directory;
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    int group_count;
    int new_network;
    long long cpu_seconds;
    long long memory_bytes;
    long long processes;
    long long open_files;
    /// A pid namespace and a mount namespace of its own, with its own /proc and an empty /tmp: it
    /// sees no other process, nothing it leaves outlives it (the kernel ends a namespace's every
    /// process with its first), and nothing of another's it can reach in /tmp.
    int new_pid;
    /// Descriptors to hand over: `sources[i]` becomes descriptor `targets[i]` (0, 1, 2 are /dev/null
    /// unless given).
    const int *sources;
    const int *targets;
    int descriptor_count;
};

/// The step of `screentime_launch` that failed, with the errno it failed with.
enum {
    SCREENTIME_LAUNCH_STEP_PIPE = 1,
    SCREENTIME_LAUNCH_STEP_FORK,
    SCREENTIME_LAUNCH_STEP_SIGNALS,
    SCREENTIME_LAUNCH_STEP_PARENT,
    SCREENTIME_LAUNCH_STEP_SESSION,
    SCREENTIME_LAUNCH_STEP_NETWORK,
    SCREENTIME_LAUNCH_STEP_LOOPBACK,
    SCREENTIME_LAUNCH_STEP_LIMITS,
    SCREENTIME_LAUNCH_STEP_STDIO,
    SCREENTIME_LAUNCH_STEP_GROUPS,
    SCREENTIME_LAUNCH_STEP_GID,
    SCREENTIME_LAUNCH_STEP_UID,
    SCREENTIME_LAUNCH_STEP_DIRECTORY,
    SCREENTIME_LAUNCH_STEP_EXEC,
    SCREENTIME_LAUNCH_STEP_MOUNTS,
    SCREENTIME_LAUNCH_STEP_DESCRIPTORS,
};

/// Forks (into new pid and mount namespaces if asked) and, in the child, puts it in a session of
/// its own (dying with the caller), a new network namespace if asked (with its loopback up,
/// through libnl-route-3), its own /proc and /tmp if in a pid namespace of its own, the limits,
/// /dev/null as standard input, output and error unless descriptors are handed over for them, the
/// groups, gid and uid, the directory, then execs the program with exactly that environment.
/// Returns the child's pid once it has exec'd, or -1 with the failed step and errno (the child
/// then reaped). For a single-threaded caller (the launcher).
pid_t screentime_launch(const struct screentime_launch_spec *spec, int *failed_step, int *failed_errno);

#endif
