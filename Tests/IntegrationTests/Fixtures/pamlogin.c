/* A login as a PAM application does it (login, sshd, su): the account stack, then a session,
 * held open for SECONDS (or until a signal), then closed. What the modules say to the
 * person logging in is printed as "say: ..." lines; each step's outcome as "STEP: result".
 *
 *   pamlogin SERVICE USER TTY [SECONDS]
 */
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int converse(int count, const struct pam_message **messages, struct pam_response **responses,
                    void *data) {
    (void)data;
    struct pam_response *replies = calloc((size_t)count, sizeof *replies);
    if (replies == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        if (messages[i]->msg_style == PAM_TEXT_INFO || messages[i]->msg_style == PAM_ERROR_MSG) {
            printf("say: %s\n", messages[i]->msg);
            fflush(stdout);
        }
    }
    *responses = replies;
    return PAM_SUCCESS;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SERVICE USER TTY [SECONDS]\n", argv[0]);
        return 64;
    }
    struct pam_conv conversation = {converse, NULL};
    pam_handle_t *handle = NULL;
    int result = pam_start(argv[1], argv[2], &conversation, &handle);
    if (result != PAM_SUCCESS) {
        printf("start: %s\n", pam_strerror(handle, result));
        return 3;
    }
    pam_set_item(handle, PAM_TTY, argv[3]);
    result = pam_acct_mgmt(handle, 0);
    printf("account: %s\n", result == PAM_SUCCESS ? "ok" : pam_strerror(handle, result));
    fflush(stdout);
    if (result != PAM_SUCCESS) {
        pam_end(handle, result);
        return 1;
    }
    result = pam_open_session(handle, 0);
    printf("session: %s\n", result == PAM_SUCCESS ? "ok" : pam_strerror(handle, result));
    fflush(stdout);
    if (result != PAM_SUCCESS) {
        pam_end(handle, result);
        return 2;
    }
    int seconds = argc > 4 ? atoi(argv[4]) : 0;
    if (seconds > 0) sleep((unsigned)seconds);
    result = pam_close_session(handle, 0);
    printf("close: %s\n", result == PAM_SUCCESS ? "ok" : pam_strerror(handle, result));
    fflush(stdout);
    pam_end(handle, result);
    return 0;
}
