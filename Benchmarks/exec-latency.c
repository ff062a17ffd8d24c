/* `make bench`, process half: how soon a shielded program is stopped after it starts.
 *
 *   exec-latency UID PROBE COUNT [poll|main]
 *
 * Starts PROBE as UID, COUNT times, one after another. The child notes the time just before
 * execve; this parent then watches it until it can no longer run: stopped (waitpid with
 * WUNTRACED, for the baseline's SIGSTOP and the agent's) or moved into a frozen cgroup (its
 * /proc/PID/cgroup names a group ending in /frozen — the agent's freezer can catch the task
 * before it takes the SIGSTOP). The watch is a busy loop, a few microseconds per look. The probe writes one byte to fd 3 first
 * thing in main(), so each run also says whether the program reached main() before it was
 * stopped. In the "main" mode the probe's own write wakes this real-time parent. With "poll", a thread here plays the baseline: it reads /proc once a second and stops
 * every process of UID running PROBE (how polling tools like Timekpr find programs).
 * With "main", nothing is expected to stop it: the time to main() (the kernel's exec and the
 * loader) is measured instead, for comparison. Before each exec the child, already the user,
 * waits until the agent has looked at it and let it be.
 * With EXEC_LATENCY_GAP=MICROSECONDS, each exec comes that long after the last run settled, the
 * machine idle between: a child's start of an app now and then, not one start after another.
 * Prints one line per run: microseconds, and 1 if main() ran. Needs root. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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
    struct sched_param normal = {0};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
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
    int main_mode = argc > 4 && strcmp(argv[4], "main") == 0;
    if (argc > 4 && strcmp(argv[4], "poll") == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, poller, NULL);
    }
    /* The watch below looks every 50 µs from the real-time FIFO class, at a priority below the
     * agent's gate thread (40) and its process watcher (50): it notices a move or a stop within
     * tens of microseconds even when both cores are busy, and sleeping between looks, it never
     * holds up the agent or the probe. (A busy watcher of the normal class, used before, measured
     * its own wait for a time slice when the cores were busy: about 8 ms at p99, the same with
     * or without the agent. One of the idle class never runs when they are.) With
     * EXEC_LATENCY_WATCH=idle the old idle-class busy watcher is used instead. */
    const char *watch = getenv("EXEC_LATENCY_WATCH");
    int idle_watch = watch && strcmp(watch, "idle") == 0;
    struct sched_param idle = {0}, watcher = {.sched_priority = 20};
    if (idle_watch ? sched_setscheduler(0, SCHED_IDLE, &idle) != 0 : sched_setscheduler(0, SCHED_FIFO, &watcher) != 0)
        perror("sched_setscheduler");
    const struct timespec look_again = {0, 50000};
    const char *gap_text = getenv("EXEC_LATENCY_GAP");
    useconds_t gap = gap_text ? (useconds_t)atoi(gap_text) : 0;
    double *started = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < count; i++) {
        int marker[2], go[2];
        if (pipe2(marker, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            struct sched_param normal = {0};
            sched_setscheduler(0, SCHED_OTHER, &normal);
            dup2(marker[1], 3);
            close(go[1]);
            if (setgid(100) != 0 || setuid(target_uid) != 0) _exit(126);
            /* The agent looks at a process that becomes the child's (it may stop it while it
             * reads what it runs): that is not the exec being measured, so wait until told. */
            char byte;
            if (read(go[0], &byte, 1) != 1) _exit(125);
            char *args[] = {(char *)probe, NULL};
            *started = now_us();
            execv(probe, args);
            _exit(127);
        }
        close(marker[1]);
        close(go[0]);
        int status = 0;
        char stat_path[64], cgroup_path[64];
        snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", pid);
        snprintf(cgroup_path, sizeof cgroup_path, "/proc/%d/cgroup", pid);
        /* Go once it sleeps in that read, its uid change judged and any stop taken back. */
        for (int settled = 0; settled < 3;) {
            usleep(2000);
            while (waitpid(pid, &status, WNOHANG | WUNTRACED | WCONTINUED) == pid) settled = 0;
            char text[512];
            int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
            ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
            if (fd >= 0) close(fd);
            char *close_paren = n > 0 ? (text[n] = 0, strrchr(text, ')')) : NULL;
            settled = close_paren && close_paren[2] == 'S' ? settled + 1 : 0;
        }
        *started = 0;
        if (gap) usleep(gap);
        if (write(go[1], "g", 1) != 1) return 1;
        close(go[1]);
        if (main_mode) {
            char byte;
            if (read(marker[0], &byte, 1) != 1) return 1;
            printf("%.1f 1\n", now_us() - *started);
            fflush(stdout);
            waitpid(pid, &status, WNOHANG);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            close(marker[0]);
            continue;
        }
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
            if (!idle_watch) nanosleep(&look_again, NULL);
        }
        double stopped = now_us();
        if (*started == 0) { /* stopped by something else before its exec: not a measurement */
            fprintf(stderr, "run %d: stopped before its exec; run again\n", i);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            close(marker[0]);
            i--;
            continue;
        }
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
