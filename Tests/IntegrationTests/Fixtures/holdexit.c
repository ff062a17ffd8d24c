// holdexit PID HELD: holds a process at its end, as a loaded machine may for a while: traced
// (PTRACE_O_TRACEEXIT), it stops in exit before its files are closed, so whoever reads a pipe
// of it sees no end yet. Writes HELD once it holds it; on SIGTERM lets it end. Exit status: 0 held
// and let go, 1 could not trace it, 2 it ended otherwise (killed), 3 stopped before it held it.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void stop(int signal) {
    (void)signal;
    stopping = 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: holdexit PID HELD-FILE\n");
        return 1;
    }
    pid_t pid = (pid_t)atoi(argv[1]);
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    struct sigaction action = {0};
    action.sa_handler = stop;  // no SA_RESTART: a wait is interrupted
    sigaction(SIGTERM, &action, NULL);
    if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)PTRACE_O_TRACEEXIT) != 0) {
        perror("holdexit: PTRACE_SEIZE");
        return 1;
    }
    for (;;) {
        int status;
        pid_t got = waitpid(pid, &status, __WALL);
        if (got < 0) {
            if (errno == EINTR && !stopping) continue;
            return 3;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) return 2;
        if (!WIFSTOPPED(status)) continue;
        if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
            int file = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (file >= 0) {
                if (write(file, "held\n", 5) != 5) perror("holdexit: write");
                close(file);
            }
            sigprocmask(SIG_BLOCK, &term, &old);
            while (!stopping) sigsuspend(&old);
            ptrace(PTRACE_DETACH, pid, NULL, NULL);
            return 0;
        }
        // Any other stop: the signal delivered as it would have been (none for a group stop).
        int signal = (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
        ptrace(PTRACE_CONT, pid, NULL, (void *)(long)signal);
    }
}
