// Starting a program as another user, for the launcher (Sources/LinuxSupport/Launcher.swift).
//
// In C because everything between fork and execve must be async-signal-safe: no allocation, no
// locks, no Swift runtime. The caller prepares every string and array before the fork; the child
// makes only system calls, in an order where each step still has the privilege it needs (the
// network namespace and limits while root, then groups, gid, uid last), and reports the errno of
// the first step that failed through a close-on-exec pipe: nothing arrives when execve succeeded.
#define _GNU_SOURCE
#include "CLinuxShim.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void screentime_launch_fail(int pipe_fd, int step) {
    int report[2] = {step, errno};
    ssize_t ignored = write(pipe_fd, report, sizeof report);
    (void)ignored;
    _exit(127);
}

int screentime_die_with_parent(void) {
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    if (getppid() != parent) {
        errno = ESRCH;
        return -1;
    }
    return 0;
}

pid_t screentime_launch(const struct screentime_launch_spec *spec, int *failed_step, int *failed_errno) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        *failed_step = SCREENTIME_LAUNCH_STEP_PIPE;
        *failed_errno = errno;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *failed_step = SCREENTIME_LAUNCH_STEP_FORK;
        *failed_errno = errno;
        close(report[0]);
        close(report[1]);
        return -1;
    }
    if (pid == 0) {
        close(report[0]);
        int out = report[1];
        sigset_t none;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_SIGNALS);
        struct sigaction default_action = {0};
        default_action.sa_handler = SIG_DFL;
        for (int number = 1; number < NSIG; number++) sigaction(number, &default_action, NULL);
        // Dies with the launcher: nothing it started outlives the agent.
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_PARENT);
        if (setsid() < 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_SESSION);
        if (spec->new_network && unshare(CLONE_NEWNET) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_NETWORK);
        struct { int resource; long long value; } limits[] = {
            {RLIMIT_CPU, spec->cpu_seconds}, {RLIMIT_AS, spec->memory_bytes}, {RLIMIT_NPROC, spec->processes},
            {RLIMIT_NOFILE, spec->open_files},
        };
        for (unsigned index = 0; index < sizeof limits / sizeof limits[0]; index++) {
            if (limits[index].value < 0) continue;
            struct rlimit limit = {(rlim_t)limits[index].value, (rlim_t)limits[index].value};
            if (setrlimit(limits[index].resource, &limit) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_LIMITS);
        }
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) {
            screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_STDIO);
        }
        if (null > 2) close(null);
        if (setgroups((size_t)spec->group_count, spec->groups) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_GROUPS);
        if (setresgid(spec->gid, spec->gid, spec->gid) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_GID);
        // Every uid non-zero: the kernel clears the permitted and effective capabilities.
        if (setresuid(spec->uid, spec->uid, spec->uid) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_UID);
        if (chdir(spec->directory) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_DIRECTORY);
        execve(spec->program, spec->arguments, spec->environment);
        screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_EXEC);
    }
    close(report[1]);
    int received[2] = {0, 0};
    ssize_t got;
    do {
        got = read(report[0], received, sizeof received);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof received) {
        *failed_step = received[0];
        *failed_errno = received[1];
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return -1;
    }
    return pid;
}
