// A child's attempt on the windows the agent starts in her session: it watches for a new
// process of hers running `screentime-shield` and tries to trace it from its first moments (before
// the window's own prctl), as a program that would make a notice run her game would.
//   windowtrace SECONDS
// Prints "attached PID" (and lets it go) or "refused PID: ERROR" for the first such process it
// sees, or "none" when none came within SECONDS.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int is_window(const char *pid) {
    char path[300], name[32] = {0};
    snprintf(path, sizeof path, "/proc/%s/comm", pid);
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    int found = fgets(name, sizeof name, file) && strncmp(name, "screentime-shie", 15) == 0;
    fclose(file);
    return found;
}

int main(int argc, char **argv) {
    double end = now() + (argc > 1 ? atof(argv[1]) : 30);
    while (now() < end) {
        DIR *proc = opendir("/proc");
        if (!proc) return 2;
        struct dirent *entry;
        while ((entry = readdir(proc))) {
            if (entry->d_name[0] < '1' || entry->d_name[0] > '9' || !is_window(entry->d_name)) continue;
            pid_t pid = atoi(entry->d_name);
            // Tried again and again for a second: a window caught in any moment of its start.
            int error = 0;
            for (double until = now() + 1; now() < until;) {
                if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0) {
                    waitpid(pid, NULL, __WALL);
                    ptrace(PTRACE_DETACH, pid, 0, 0);
                    printf("attached %d\n", pid);
                    return 0;
                }
                error = errno;
                if (error == ESRCH) break;
            }
            printf("refused %d: %s\n", pid, strerror(error));
            return 0;
        }
        closedir(proc);
    }
    printf("none\n");
    return 0;
}
