/* An exec that waits on its own process (the hostile-child attack of 2026-12-02, second round):
 * a process of two threads besides its first; one thread is traced by this program's first
 * process, the other execs PROGRAM FILE. The exec must see the traced thread gone first, and a
 * traced thread is gone only once its tracer has waited for it: this program waits SECONDS
 * before it does. Meanwhile the first thread of the exec'ing process has been ended (a zombie)
 * and the exec is still going. Usage: tracedsibling SECONDS PROGRAM FILE. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int told[2], go[2];
static char **arguments;

static void *traced(void *unused) {
    pid_t thread = (pid_t)syscall(SYS_gettid);
    if (write(told[1], &thread, sizeof thread) != sizeof thread) _exit(1);
    for (;;) pause();
}

static void *executing(void *unused) {
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(1);
    execl(arguments[2], arguments[2], arguments[3], (char *)NULL);
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc < 4) return 64;
    arguments = argv;
    if (pipe(told) || pipe(go)) return 1;
    pid_t process = fork();
    if (process == 0) {
        pthread_t one, two;
        pthread_create(&one, NULL, traced, NULL);
        pthread_create(&two, NULL, executing, NULL);
        for (;;) pause();
    }
    pid_t thread;
    if (read(told[0], &thread, sizeof thread) != sizeof thread) return 1;
    if (ptrace(PTRACE_SEIZE, thread, 0, 0)) {
        perror("PTRACE_SEIZE");
        return 1;
    }
    printf("%d\n", process);
    fflush(stdout);
    if (write(go[1], "x", 1) != 1) return 1;
    sleep((unsigned)atoi(argv[1]));
    int status;
    waitpid(thread, &status, __WALL);
    for (;;) pause();
}
