/* Makes the kernel hand out a given pid to this program's child: forks (and lets exit) until a
 * child gets the target pid, which then execs the program named after it. The hardening tests
 * use it to give root the pid a child's frozen process had, as a busy machine would.
 *
 * Usage: pidcycle TARGET PROGRAM [ARGS...]; exits 0 once the target child runs, 1 after giving up. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 64;
    pid_t target = (pid_t)atoi(argv[1]);
    signal(SIGCHLD, SIG_IGN);  /* children reaped by the kernel: nothing to wait for */
    for (long tries = 0; tries < 200000; tries++) {
        pid_t pid = fork();
        if (pid < 0) continue;
        if (pid == 0) {
            if (getpid() == target) {
                execv(argv[2], argv + 2);
                _exit(127);
            }
            _exit(0);
        }
        if (pid == target) return 0;
    }
    return 1;
}
