/* The child's exec storm (the attack of 2026-12-02): forks N processes as fast as it can, each of
 * which execs PROGRAM with DIRECTORY/c.INDEX as its argument (the counter, which makes that file
 * first thing in main()), then waits. Prints how many it forked. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) return 64;
    int n = atoi(argv[1]);
    int forked = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/c.%d", argv[3], i);
            execl(argv[2], argv[2], path, (char *)NULL);
            _exit(127);
        }
        if (pid < 0) break;
        forked++;
    }
    printf("forked %d\n", forked);
    fflush(stdout);
    for (;;) pause();
}
