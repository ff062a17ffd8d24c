// Starting a program as another user, for the launcher (Sources/LinuxSupport/Launcher.swift).
//
// In C because everything between fork and execve must be async-signal-safe: no allocation, no
// locks, no Swift runtime. The caller prepares every string and array before the fork; the child
// makes only system calls, in an order where each step still has the privilege it needs (the
// network namespace and limits while root, then groups, gid, uid last), and reports the errno of
// the first step that failed through a close-on-exec pipe: nothing arrives when execve succeeded.
//
// The one step that uses a library, bringing up an extension's loopback, keeps to that: libnl's
// socket and request are made before the fork, and the child only connects, sends and reads the
// kernel's answer into its stack.
#define _GNU_SOURCE
#include "CLauncher.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/if.h>
#include <linux/sched.h>
#include <linux/close_range.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/socket.h>
#include <netlink/route/link.h>

static void screentime_launch_fail(int pipe_fd, int step) {
    int report[2] = {step, errno};
    ssize_t ignored = write(pipe_fd, report, sizeof report);
    (void)ignored;
    _exit(127);
}

/// In the child: PR_SET_PDEATHSIG, then whether the launcher is still there (by its pidfd in a pid
/// namespace of the child's own, where getppid() says 0; else by getppid()). 0, or -1.
static int screentime_launch_tie(int parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    if (parent >= 0) {
        struct pollfd gone = {parent, POLLIN, 0};
        if (poll(&gone, 1, 0) != 0) {
            errno = ESRCH;
            return -1;
        }
        return 0;
    }
    if (getppid() == 1) {
        errno = ESRCH;
        return -1;
    }
    return 0;
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

/// A request that brings up the interface `lo`, and the socket to send it on, both made before
/// the fork: making them allocates.
struct screentime_loopback {
    struct nl_sock *socket;
    struct nl_msg *request;
};

static void screentime_loopback_free(struct screentime_loopback *loopback) {
    if (loopback->request != NULL) nlmsg_free(loopback->request);
    if (loopback->socket != NULL) nl_socket_free(loopback->socket);
}

static int screentime_loopback_prepare(struct screentime_loopback *loopback) {
    loopback->socket = nl_socket_alloc();
    loopback->request = NULL;
    struct rtnl_link *original = rtnl_link_alloc();
    struct rtnl_link *changes = rtnl_link_alloc();
    int result = -1;
    if (loopback->socket != NULL && original != NULL && changes != NULL) {
        // By name, not by index: the link is looked up in the namespace the request is sent in.
        rtnl_link_set_name(changes, "lo");
        rtnl_link_set_flags(changes, IFF_UP);
        if (rtnl_link_build_change_request(original, changes, 0, &loopback->request) == 0) result = 0;
    }
    if (original != NULL) rtnl_link_put(original);
    if (changes != NULL) rtnl_link_put(changes);
    if (result != 0) {
        screentime_loopback_free(loopback);
        errno = ENOMEM;
        return -1;
    }
    // A port of its own: the namespace it is used in is new and empty, so none can be taken, and
    // libnl does not pick one (under a lock) in the child.
    nl_socket_set_local_port(loopback->socket, 1);
    return 0;
}

/// In the child, inside its new network namespace: 0 once the kernel acknowledged the change,
/// or -1 with errno set.
static int screentime_loopback_up(struct screentime_loopback *loopback) {
    errno = 0;
    if (nl_connect(loopback->socket, NETLINK_ROUTE) < 0 || nl_send_auto(loopback->socket, loopback->request) < 0) {
        if (errno == 0) errno = EPROTO;
        return -1;
    }
    // The kernel's acknowledgement (or error), read into the stack: nl_wait_for_ack allocates.
    int fd = nl_socket_get_fd(loopback->socket);
    unsigned char answer[4096] __attribute__((aligned(8)));
    for (;;) {
        ssize_t got = recv(fd, answer, sizeof answer, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        int remaining = (int)got;
        for (struct nlmsghdr *header = (struct nlmsghdr *)answer; nlmsg_ok(header, remaining);
             header = nlmsg_next(header, &remaining)) {
            if (header->nlmsg_type != NLMSG_ERROR) continue;
            if (nlmsg_datalen(header) < (int)sizeof(struct nlmsgerr)) {
                errno = EPROTO;
                return -1;
            }
            const struct nlmsgerr *error = nlmsg_data(header);
            if (error->error == 0) return 0;
            errno = -error->error;
            return -1;
        }
    }
}

pid_t screentime_launch(const struct screentime_launch_spec *spec, int *failed_step, int *failed_errno) {
    struct screentime_loopback loopback = {NULL, NULL};
    if (spec->new_network && screentime_loopback_prepare(&loopback) != 0) {
        *failed_step = SCREENTIME_LAUNCH_STEP_LOOPBACK;
        *failed_errno = errno;
        return -1;
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        *failed_step = SCREENTIME_LAUNCH_STEP_PIPE;
        *failed_errno = errno;
        screentime_loopback_free(&loopback);
        return -1;
    }
    // The launcher's own pidfd, for a child in a pid namespace of its own: there getppid() says 0
    // whoever the parent is, so whether the launcher died first is asked of this instead.
    int parent = spec->new_pid ? (int)syscall(SYS_pidfd_open, getpid(), 0) : -1;
    if (spec->new_pid && parent < 0) {
        *failed_step = SCREENTIME_LAUNCH_STEP_FORK;
        *failed_errno = errno;
        close(report[0]);
        close(report[1]);
        screentime_loopback_free(&loopback);
        return -1;
    }
    pid_t pid;
    if (spec->new_pid) {
        // clone3 without a stack is a fork whose child is the first process of new pid and mount
        // namespaces (glibc's fork handlers do not run; the child makes only system calls).
        struct clone_args arguments = {0};
        arguments.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC;
        arguments.exit_signal = SIGCHLD;
        pid = (pid_t)syscall(SYS_clone3, &arguments, sizeof arguments);
    } else {
        pid = fork();
    }
    if (pid < 0) {
        if (parent >= 0) close(parent);
        *failed_step = SCREENTIME_LAUNCH_STEP_FORK;
        *failed_errno = errno;
        close(report[0]);
        close(report[1]);
        screentime_loopback_free(&loopback);
        return -1;
    }
    if (pid == 0) {
        close(report[0]);
        // Above any descriptor number a program is handed (0 to 9), so none overwrites it.
        int out = fcntl(report[1], F_DUPFD_CLOEXEC, 100);
        if (out < 0) out = report[1];
        sigset_t none;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_SIGNALS);
        struct sigaction default_action = {0};
        default_action.sa_handler = SIG_DFL;
        for (int number = 1; number < NSIG; number++) sigaction(number, &default_action, NULL);
        // Dies with the launcher: nothing it started outlives the agent. Set here, and again once
        // the uid changed (changing credentials clears it), each time followed by a look at
        // whether the launcher is still there.
        if (screentime_launch_tie(parent) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_PARENT);
        if (setsid() < 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_SESSION);
        if (spec->new_network) {
            if (unshare(CLONE_NEWNET) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_NETWORK);
            // Loopback only: a program may talk to itself; there is still no route out.
            if (screentime_loopback_up(&loopback) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_LOOPBACK);
        }
        if (spec->new_pid) {
            // Nothing mounted here reaches the machine's namespace; then the namespace's own /proc
            // (only its processes), and a /tmp of its own.
            if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
                mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
                screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_MOUNTS);
            }
            // Every place anyone may write, empty and its own: nothing one run leaves there reaches
            // another, nor stays after it.
            static const char *const shared[] = {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"};
            for (unsigned index = 0; index < sizeof shared / sizeof shared[0]; index++) {
                struct stat place;
                if (stat(shared[index], &place) != 0 || !S_ISDIR(place.st_mode)) continue;
                if (mount("tmpfs", shared[index], "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777") != 0) {
                    screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_MOUNTS);
                }
            }
        }
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
        // Nothing the launcher itself inherited goes on to the program: every descriptor from 3
        // up closes at exec, but for the targets made below.
        syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
        // Each descriptor first to a number above any target, so that no target overwrites a
        // source not yet moved; then to its target (dup2 leaves it open across exec).
        int moved[16];
        if (spec->descriptor_count < 0 || spec->descriptor_count > 16) {
            errno = EINVAL;
            screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_DESCRIPTORS);
        }
        for (int index = 0; index < spec->descriptor_count; index++) {
            moved[index] = fcntl(spec->sources[index], F_DUPFD_CLOEXEC, 64);
            if (moved[index] < 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_DESCRIPTORS);
        }
        for (int index = 0; index < spec->descriptor_count; index++) {
            if (dup2(moved[index], spec->targets[index]) < 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_DESCRIPTORS);
        }
        if (setgroups((size_t)spec->group_count, spec->groups) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_GROUPS);
        if (setresgid(spec->gid, spec->gid, spec->gid) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_GID);
        // Every uid non-zero: the kernel clears the permitted and effective capabilities.
        if (setresuid(spec->uid, spec->uid, spec->uid) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_UID);
        if (screentime_launch_tie(parent) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_PARENT);
        if (parent >= 0) close(parent);
        if (chdir(spec->directory) != 0) screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_DIRECTORY);
        execve(spec->program, spec->arguments, spec->environment);
        screentime_launch_fail(out, SCREENTIME_LAUNCH_STEP_EXEC);
    }
    close(report[1]);
    if (parent >= 0) close(parent);
    screentime_loopback_free(&loopback);
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
