/* A child's program that keeps a stream of short-lived grandchildren going by double forks: every
 * few milliseconds it forks, and that child forks again and exits at once, so each grandchild is
 * born of a process already gone. A grandchild lives two seconds (sleeping in small steps) and
 * ends. Locked in the middle, every one of them must be held: one that runs on has escaped.
 *
 * It is its grandchildren's subreaper and reaps them as it goes, so that they do not pile up as
 * zombies of the machine's init. */
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pause_ms(long ms) {
    struct timespec step = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&step, NULL);
}

int main(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    for (;;) {
        pid_t middle = fork();
        if (middle == 0) {
            if (fork() == 0) {
                setsid();
                for (int i = 0; i < 200; i++) pause_ms(10);
                _exit(0);
            }
            _exit(0);
        }
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        pause_ms(5);
    }
}
