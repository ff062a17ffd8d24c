// Exec a shielded program in various ways, N times; count marker files.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/ptrace.h>
#include <sys/mman.h>
#include <linux/sched.h>

static const char *prog = "/usr/local/lib/hktest/hkprobe";
static char *const argvv[] = {"hkprobe", NULL};
static char *const envv[] = {NULL};

static int count_markers(void) {
    DIR *d = opendir("/tmp/hkmark"); int n = 0; struct dirent *e;
    if (!d) return -1;
    while ((e = readdir(d))) if (e->d_name[0] == 'm') n++;
    closedir(d); return n;
}

static void do_exec(const char *mode) {
    if (!strcmp(mode, "plain")) execve(prog, argvv, envv);
    else if (!strcmp(mode, "execveat_opath")) {
        int fd = open(prog, O_PATH | O_CLOEXEC);
        if (fd < 0) { perror("open O_PATH"); _exit(2); }
        syscall(SYS_execveat, fd, "", argvv, envv, AT_EMPTY_PATH);
    } else if (!strcmp(mode, "execveat_opath_nocloexec")) {
        int fd = open(prog, O_PATH);
        syscall(SYS_execveat, fd, "", argvv, envv, AT_EMPTY_PATH);
    } else if (!strcmp(mode, "procfd")) {
        int fd = open(prog, O_PATH); char p[64]; snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        execve(p, argvv, envv);
    } else if (!strcmp(mode, "script")) {
        execve("/tmp/attack/hkscript", argvv, envv);
    } else if (!strcmp(mode, "symlink")) {
        execve("/tmp/attack/hklink", argvv, envv);
    } else if (!strcmp(mode, "ldso")) {
        char *a[] = {"ld", (char*)"/usr/local/lib/hktest/hkprobe-dyn", NULL};
        execve("/lib64/ld-linux-x86-64.so.2", a, envv);
    } else if (!strcmp(mode, "interp")) {
        execve("/tmp/attack/interp_user", argvv, envv);
    }
    _exit(126);
}

static const char *gmode;
static int child_fn(void *arg) { do_exec(gmode); return 0; }

static void *thread_exec(void *a) { usleep(1000); do_exec(gmode); return NULL; }
static void *thread_fork(void *a) { for (;;) { pid_t p = fork(); if (p == 0) _exit(0); if (p > 0) waitpid(p, 0, 0);} return NULL; }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: modes HOW N [WAITMS] [EXECMODE]\n"); return 64; }
    const char *how = argv[1]; int n = atoi(argv[2]); int waitms = argc > 3 ? atoi(argv[3]) : 300;
    gmode = argc > 4 ? argv[4] : "plain";
    int before = count_markers();
    pid_t *pids = calloc(n, sizeof(pid_t)); int errs = 0;
    for (int i = 0; i < n; i++) {
        pid_t p;
        if (!strcmp(how, "fork")) {
            p = fork(); if (p == 0) do_exec(gmode);
        } else if (!strcmp(how, "vfork")) {
            p = vfork(); if (p == 0) do_exec(gmode);
        } else if (!strcmp(how, "clone_parent")) {
            // fork a middle process that clone(CLONE_PARENT)s the exec'er and exits
            p = fork();
            if (p == 0) {
                static char stack[65536];
                clone(child_fn, stack + sizeof stack, CLONE_PARENT | SIGCHLD, NULL);
                _exit(0);
            }
        } else if (!strcmp(how, "thread_exec")) {
            // multithreaded: a non-leader thread execs while another forks; leader pthread_exits
            p = fork();
            if (p == 0) {
                pthread_t t1, t2;
                pthread_create(&t2, 0, thread_fork, 0);
                pthread_create(&t1, 0, thread_exec, 0);
                pthread_exit(0);
            }
        } else if (!strcmp(how, "sigcont")) {
            // exec, and hammer SIGCONT at it from the parent
            p = fork(); if (p == 0) do_exec(gmode);
            for (int k = 0; k < 20000; k++) kill(p, SIGCONT);
        } else { fprintf(stderr, "bad how\n"); return 64; }
        if (p < 0) errs++;
        pids[i] = p;
    }
    usleep(waitms * 1000);
    int after = count_markers();
    // status of a few
    int frozen = 0, gone = 0;
    for (int i = 0; i < n; i++) {
        char path[64], buf[4096]; snprintf(path, sizeof path, "/proc/%d/cgroup", pids[i]);
        int fd = open(path, O_RDONLY); if (fd < 0) { gone++; continue; }
        int r = read(fd, buf, sizeof buf - 1); close(fd); if (r > 0) { buf[r] = 0; if (strstr(buf, "0::/screentime/frozen")) frozen++; }
    }
    printf("how=%s exec=%s n=%d fork-errors=%d markers-new=%d frozen(direct pids)=%d gone=%d\n", how, gmode, n, errs, after - before, frozen, gone);
    return 0;
}
