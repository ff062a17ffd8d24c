#include "CLinuxShim.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <security/pam_appl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int screentime_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    if (length != sizeof(credentials)) {
        errno = EPROTO;
        return -1;
    }
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int screentime_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int screentime_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int screentime_group_list(const char *user, gid_t gid, gid_t *groups, int *count) {
    int capacity = *count;
    int result = getgrouplist(user, gid, groups, count);
    if (result == -1 && *count <= capacity) *count = capacity * 2;
    return result == -1 ? -1 : 0;
}

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

// MARK: the process connector

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int screentime_proc_connector_open(int receive_buffer) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
    if (fd < 0) return -1;
    if (receive_buffer > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &receive_buffer, sizeof receive_buffer);
    }
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = CN_IDX_PROC;
    address.nl_pid = 0;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) goto fail;

    // nlmsghdr, then cn_msg (whose data is a flexible array), then the operation.
    unsigned char request[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op))];
    memset(request, 0, sizeof request);
    struct nlmsghdr *header = (struct nlmsghdr *)request;
    header->nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op));
    header->nlmsg_type = NLMSG_DONE;
    struct cn_msg *message = (struct cn_msg *)NLMSG_DATA(header);
    message->id.idx = CN_IDX_PROC;
    message->id.val = CN_VAL_PROC;
    message->len = sizeof(enum proc_cn_mcast_op);
    enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    memcpy(message->data, &op, sizeof op);
    if (send(fd, request, header->nlmsg_len, 0) < 0) goto fail;
    return fd;
fail: {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}
}

long screentime_proc_connector_receive(int fd, void *buffer, unsigned long capacity) {
    return recv(fd, buffer, capacity, MSG_DONTWAIT);
}

int screentime_proc_connector_parse(const void *buffer, long length, struct screentime_proc_event *events,
                                    int capacity) {
    const unsigned char *bytes = buffer;
    long offset = 0;
    int count = 0;
    while (count < capacity && offset + (long)sizeof(struct nlmsghdr) <= length) {
        struct nlmsghdr header;
        memcpy(&header, bytes + offset, sizeof header);
        if (header.nlmsg_len < sizeof header || offset + (long)header.nlmsg_len > length) break;
        long payload = offset + NLMSG_HDRLEN;
        long end = offset + header.nlmsg_len;
        if (header.nlmsg_type != NLMSG_ERROR && header.nlmsg_type != NLMSG_NOOP &&
            payload + (long)sizeof(struct cn_msg) <= end) {
            struct cn_msg message;
            memcpy(&message, bytes + payload, sizeof message);
            long data = payload + sizeof(struct cn_msg);
            if (message.id.idx == CN_IDX_PROC && message.id.val == CN_VAL_PROC &&
                data + (long)offsetof(struct proc_event, event_data) <= end) {
                struct proc_event event;
                memset(&event, 0, sizeof event);
                long available = end - data;
                memcpy(&event, bytes + data, available < (long)sizeof event ? (size_t)available : sizeof event);
                struct screentime_proc_event *out = &events[count];
                memset(out, 0, sizeof *out);
                out->what = event.what;
                out->timestamp_ns = event.timestamp_ns;
                switch (event.what) {
                case PROC_EVENT_FORK:
                    out->pid = event.event_data.fork.child_pid;
                    out->tgid = event.event_data.fork.child_tgid;
                    out->parent_pid = event.event_data.fork.parent_pid;
                    out->parent_tgid = event.event_data.fork.parent_tgid;
                    break;
                case PROC_EVENT_EXEC:
                    out->pid = event.event_data.exec.process_pid;
                    out->tgid = event.event_data.exec.process_tgid;
                    break;
                case PROC_EVENT_UID:
                    out->pid = event.event_data.id.process_pid;
                    out->tgid = event.event_data.id.process_tgid;
                    out->ruid = event.event_data.id.r.ruid;
                    out->euid = event.event_data.id.e.euid;
                    break;
                case PROC_EVENT_EXIT:
                    out->pid = event.event_data.exit.process_pid;
                    out->tgid = event.event_data.exit.process_tgid;
                    out->exit_code = event.event_data.exit.exit_code;
                    break;
                default:
                    out->pid = event.event_data.exec.process_pid;
                    out->tgid = event.event_data.exec.process_tgid;
                    break;
                }
                count++;
            }
        }
        offset += NLMSG_ALIGN(header.nlmsg_len);
    }
    return count;
}
