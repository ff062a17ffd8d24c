/* A fork storm for the proc-connector benchmark: `fork-storm WORKERS SECONDS` starts WORKERS
 * processes that each fork a child that exits at once, and reap it, as fast as they can for
 * SECONDS (two process events a fork: the fork and the child's exit). Prints the forks done. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fork-storm WORKERS SECONDS\n");
        return 2;
    }
    int workers = atoi(argv[1]);
    double deadline = now() + atof(argv[2]);
    int counts[2];
    if (pipe(counts) != 0) return 1;
    for (int worker = 0; worker < workers; worker++) {
        if (fork() != 0) continue;
        long forks = 0;
        while (now() < deadline) {
            pid_t child = fork();
            if (child == 0) _exit(0);
            if (child < 0) continue;
            waitpid(child, NULL, 0);
            forks++;
        }
        (void)write(counts[1], &forks, sizeof forks);
        _exit(0);
    }
    close(counts[1]);
    long total = 0, forks;
    while (read(counts[0], &forks, sizeof forks) == (ssize_t)sizeof forks) total += forks;
    while (wait(NULL) > 0) {}
    printf("%ld\n", total);
    return 0;
}
