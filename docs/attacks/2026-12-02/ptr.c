// tracer: fork a tracee that PTRACE_TRACEME + execs the shielded program; at the exec stop, PTRACE_CONT; also try PTRACE_SEIZE/INTERRUPT on a held process.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]); int ok = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) { ptrace(PTRACE_TRACEME, 0, 0, 0); raise(SIGSTOP); execl("/usr/local/lib/hktest/hkprobe", "hkprobe", (char*)0); _exit(127); }
        int st; waitpid(p, &st, 0);
        ptrace(PTRACE_SETOPTIONS, p, 0, PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
        ptrace(PTRACE_CONT, p, 0, 0);
        waitpid(p, &st, 0);
        if (WIFSTOPPED(st) && (st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) ok++;
        // continue it repeatedly; if it ran, it would exit
        ptrace(PTRACE_CONT, p, 0, 0);
        for (int k = 0; k < 5; k++) { usleep(20000); ptrace(PTRACE_INTERRUPT, p, 0, 0); ptrace(PTRACE_CONT, p, 0, SIGCONT); }
        usleep(100000);
        int r = waitpid(p, &st, WNOHANG);
        printf("tracee %d: exec-stop=%d exited=%d\n", p, ok, r == p && WIFEXITED(st));
        if (r == p && WIFEXITED(st)) continue;
        // detach and leave it
        kill(p, SIGSTOP); ptrace(PTRACE_DETACH, p, 0, SIGCONT);
    }
    sleep(1);
    return 0;
}
