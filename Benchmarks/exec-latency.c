/* `make bench`, process half: how soon a shielded program is stopped after it starts.
 *
 *   exec-latency UID PROBE COUNT [poll]
 *
 * Starts PROBE as UID, COUNT times, one after another. The child notes the time just before
 * execve; this parent then watches it until it can no longer run: stopped (waitpid with
 * WUNTRACED, for the baseline's SIGSTOP and the agent's) or moved into a frozen cgroup (its
 * /proc/PID/cgroup names a group ending in /frozen — the agent's freezer can catch the task
 * before it takes the SIGSTOP). The watch is a busy loop, a few microseconds per look. The probe writes one byte to fd 3 first
 * thing in main(), so each run also says whether the program reached main() before it was
 * stopped. With "poll", a thread here plays the baseline: it reads /proc once a second and stops
 * every process of UID running PROBE (how polling tools like Timekpr find programs).
 * Prints one line per run: microseconds, and 1 if main() ran. Needs root. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uid_t target_uid;
static const char *probe;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void *poller(void *unused) {
    (void)unused;
    char resolved[4096];
    if (!realpath(probe, resolved)) return NULL;
    for (;;) {
        sleep(1);
        DIR *proc = opendir("/proc");
        if (!proc) continue;
        struct dirent *entry;
        while ((entry = readdir(proc))) {
            int pid = atoi(entry->d_name);
            if (pid <= 0) continue;
            char path[64], exe[4096];
            struct stat info;
            snprintf(path, sizeof path, "/proc/%d", pid);
            if (stat(path, &info) != 0 || info.st_uid != target_uid) continue;
            snprintf(path, sizeof path, "/proc/%d/exe", pid);
            ssize_t n = readlink(path, exe, sizeof exe - 1);
            if (n <= 0) continue;
            exe[n] = 0;
            if (strcmp(exe, resolved) == 0) kill(pid, SIGSTOP);
        }
        closedir(proc);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: exec-latency UID PROBE COUNT [poll]\n");
        return 64;
    }
    target_uid = (uid_t)atoi(argv[1]);
    probe = argv[2];
    int count = atoi(argv[3]);
    if (argc > 4 && strcmp(argv[4], "poll") == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, poller, NULL);
    }
    double *started = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < count; i++) {
        int marker[2];
        if (pipe2(marker, O_CLOEXEC) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(marker[1], 3);
            if (setgid(100) != 0 || setuid(target_uid) != 0) _exit(126);
            char *args[] = {(char *)probe, NULL};
            *started = now_us();
            execv(probe, args);
            _exit(127);
        }
        close(marker[1]);
        int status = 0;
        char cgroup_path[64];
        snprintf(cgroup_path, sizeof cgroup_path, "/proc/%d/cgroup", pid);
        for (;;) {
            pid_t waited = waitpid(pid, &status, WNOHANG | WUNTRACED);
            if (waited == pid && WIFSTOPPED(status)) break;
            if (waited == pid) {
                fprintf(stderr, "run %d: the probe ended (status %d) without being stopped\n", i, status);
                return 1;
            }
            char text[512];
            int fd = open(cgroup_path, O_RDONLY | O_CLOEXEC);
            ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
            if (fd >= 0) close(fd);
            if (n > 0) {
                text[n] = 0;
                if (strstr(text, "/frozen\n")) break;
            }
        }
        double stopped = now_us();
        char byte;
        fcntl(marker[0], F_SETFL, O_NONBLOCK);
        int ran = read(marker[0], &byte, 1) == 1;
        printf("%.1f %d\n", stopped - *started, ran);
        fflush(stdout);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        close(marker[0]);
    }
    return 0;
}
