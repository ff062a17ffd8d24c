/* Preloaded into a game (LD_PRELOAD): before its main() runs, the game forks with CLONE_PARENT
 * and ends, so that the process that plays is reported as a fork of the game's parent (the
 * shell), not of the game. Built as a shared library by the process-shield tests. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((constructor)) static void leave(void) {
    long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
    if (pid > 0) _exit(0);
}
