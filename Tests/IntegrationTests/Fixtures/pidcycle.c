/* Makes the kernel hand out a given pid to this program's child, after a storm of processes: the
 * hardening tests use it to give root the pid a child's frozen process had, as a busy machine
 * would, while the agent's buffer of process events overflows.
 *
 * First STORM children are forked and let exit (the events an agent that stopped reading loses).
 * Then the target pid is asked of the kernel (clone3 with set_tid, root only), tried again while
 * something else holds it; where clone3 cannot (an old kernel), children are forked until one
 * gets it. The target child execs PROGRAM.
 *
 * Usage: pidcycle TARGET STORM PROGRAM [ARGS...]; exits 0 once the target child runs, 1 after
 * giving up, 2 when clone3 refused for another reason than the pid being taken. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int forked_until(pid_t target, char **argv) {
    for (long tries = 0; tries < 200000; tries++) {
        pid_t pid = fork();
        if (pid < 0) continue;
        if (pid == 0) {
            if (getpid() == target) {
                execv(argv[0], argv);
                _exit(127);
            }
            _exit(0);
        }
        if (pid == target) return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) return 64;
    pid_t target = (pid_t)atoi(argv[1]);
    long storm = atol(argv[2]);
    char **program = argv + 3;
    signal(SIGCHLD, SIG_IGN); /* children reaped by the kernel: nothing to wait for */
    for (long i = 0; i < storm; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
    }
    /* The storm's last children may still hold the pid a moment: tried for up to 30 s. */
    for (int attempt = 0; attempt < 3000; attempt++) {
        pid_t wanted = target;
        struct clone_args args;
        memset(&args, 0, sizeof args);
        args.exit_signal = SIGCHLD;
        args.set_tid = (uint64_t)(uintptr_t)&wanted;
        args.set_tid_size = 1;
        long pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0) {
            execv(program[0], program);
            _exit(127);
        }
        if (pid == target) return 0;
        if (pid > 0) return 1;
        if (errno == ENOSYS) return forked_until(target, program);
        if (errno != EEXIST) {
            fprintf(stderr, "pidcycle: clone3: %s\n", strerror(errno));
            return 2;
        }
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return 1;
}
