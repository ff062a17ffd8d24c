/* `make bench`, PAM part: times whole logins as a PAM application makes them (login, sshd, su:
 * the account stack, a session opened and closed), COUNT times, and prints the p50, p95 and
 * maximum in milliseconds.
 *
 *   pam-logins SERVICE USER COUNT
 */
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int converse(int count, const struct pam_message **messages, struct pam_response **responses,
                    void *data) {
    (void)messages;
    (void)data;
    *responses = calloc((size_t)count, sizeof **responses);
    return *responses == NULL ? PAM_BUF_ERR : PAM_SUCCESS;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s SERVICE USER COUNT\n", argv[0]);
        return 64;
    }
    int count = atoi(argv[3]);
    if (count < 1) return 64;
    double *times = calloc((size_t)count, sizeof *times);
    if (times == NULL) return 1;
    struct pam_conv conversation = {converse, NULL};
    for (int i = 0; i < count; i++) {
        double began = now();
        pam_handle_t *handle = NULL;
        if (pam_start(argv[1], argv[2], &conversation, &handle) != PAM_SUCCESS) return 2;
        pam_set_item(handle, PAM_TTY, "tty9");
        int result = pam_acct_mgmt(handle, 0);
        if (result == PAM_SUCCESS) result = pam_open_session(handle, 0);
        if (result == PAM_SUCCESS) result = pam_close_session(handle, 0);
        pam_end(handle, result);
        if (result != PAM_SUCCESS) {
            fprintf(stderr, "pam-logins: %s's login through %s failed: %d\n", argv[2], argv[1], result);
            return 3;
        }
        times[i] = now() - began;
    }
    qsort(times, (size_t)count, sizeof *times, ascending);
    printf("%.2f %.2f %.2f\n", times[count / 2], times[(count * 95) / 100], times[count - 1]);
    return 0;
}
