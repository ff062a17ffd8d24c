#include "CPAM.h"

#include <security/pam_appl.h>
#include <stdlib.h>
#include <string.h>

// Answers every password prompt (echo off) with the password and every other prompt with an
// empty string; informational messages get no answer.
static int screentime_pam_conversation(int count, const struct pam_message **messages,
                                       struct pam_response **responses, void *password) {
    if (count <= 0 || count > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    struct pam_response *answers = calloc((size_t)count, sizeof(struct pam_response));
    if (answers == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const char *answer = NULL;
        switch (messages[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF: answer = password; break;
        case PAM_PROMPT_ECHO_ON: answer = ""; break;
        default: break;
        }
        if (answer != NULL) {
            answers[i].resp = strdup(answer);
            if (answers[i].resp == NULL) {
                for (int j = 0; j < i; j++) free(answers[j].resp);
                free(answers);
                return PAM_BUF_ERR;
            }
        }
    }
    *responses = answers;
    return PAM_SUCCESS;
}

int screentime_pam_check(const char *service, const char *user, const char *password, char *message,
                         unsigned long message_size) {
    struct pam_conv conversation = {screentime_pam_conversation, (void *)password};
    pam_handle_t *handle = NULL;
    int status = pam_start(service, user, &conversation, &handle);
    if (status == PAM_SUCCESS) status = pam_authenticate(handle, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
    if (status == PAM_SUCCESS) status = pam_acct_mgmt(handle, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
    if (message != NULL && message_size > 0) {
        const char *text = pam_strerror(handle, status);
        strncpy(message, text != NULL ? text : "unknown PAM error", message_size - 1);
        message[message_size - 1] = '\0';
    }
    if (handle != NULL) pam_end(handle, status);
    return status;
}
