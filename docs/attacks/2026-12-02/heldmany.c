// exec the shielded program N times (each held frozen), keep them. bounded.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]); const char *prog = argc > 2 ? argv[2] : "/usr/local/lib/hktest/hkprobe";
    int fails = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) { execl(prog, prog, (char*)0); _exit(127); }
        if (p < 0) { perror("fork"); break; }
    }
    printf("spawned %d\n", n); fflush(stdout);
    for (;;) pause();
}
