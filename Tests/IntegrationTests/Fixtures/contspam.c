/* What a child runs to keep a program going while the agent holds it: starts PROGRAM ARG and,
 * for SECONDS, sends it SIGCONT as fast as it can (undoing any SIGSTOP at once), then exits and
 * leaves it running. Prints the program's pid. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) return 64;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        /* Not the caller's pipes: the program outlives this launcher, held. */
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        execl(argv[1], argv[1], argv[2], (char *)NULL);
        _exit(127);
    }
    printf("%d\n", pid);
    fflush(stdout);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    double seconds = atof(argv[3]);
    do {
        kill(pid, SIGCONT);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    return 0;
}
