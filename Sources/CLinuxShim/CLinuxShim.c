#include "CLinuxShim.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
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

int screentime_inode_generation(int fd, unsigned int *generation) {
    long value = 0;
    if (ioctl(fd, FS_IOC_GETVERSION, &value) != 0) return -1;
    *generation = (unsigned int)value;
    return 0;
}

int screentime_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int screentime_pidfd_send_signal(int pidfd, int signal) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0);
}

int screentime_filesystem_type(int fd, long *type) {
    struct statfs information;
    if (fstatfs(fd, &information) != 0) return -1;
    *type = (long)information.f_type;
    return 0;
}

long screentime_send_with_descriptors(int fd, const void *bytes, unsigned long length, const int *descriptors,
                                      int count) {
    struct iovec vector = {(void *)bytes, length};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int) * SCREENTIME_MAX_DESCRIPTORS)];
    if (count > 0) {
        if (count > SCREENTIME_MAX_DESCRIPTORS) {
            errno = EINVAL;
            return -1;
        }
        memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    return sendmsg(fd, &message, MSG_NOSIGNAL);
}

long screentime_receive_with_descriptors(int fd, void *bytes, unsigned long capacity, int *descriptors,
                                         int capacity_descriptors, int *count, int flags) {
    struct iovec vector = {bytes, capacity};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    // Room for more than are wanted: what does not fit in the control buffer is closed by the
    // kernel (MSG_CTRUNC), what fits beyond the wanted count is closed here.
    char control[CMSG_SPACE(sizeof(int) * SCREENTIME_MAX_DESCRIPTORS * 2)];
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    *count = 0;
    long received = recvmsg(fd, &message, MSG_CMSG_CLOEXEC | flags);
    if (received < 0) return received;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t number = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *incoming = (int *)CMSG_DATA(header);
        for (size_t index = 0; index < number; index++) {
            int descriptor;
            memcpy(&descriptor, incoming + index, sizeof descriptor);
            if (*count < capacity_descriptors) {
                descriptors[(*count)++] = descriptor;
            } else {
                close(descriptor);
            }
        }
    }
    return received;
}

int screentime_group_list(const char *user, gid_t gid, gid_t *groups, int *count) {
    int capacity = *count;
    int result = getgrouplist(user, gid, groups, count);
    if (result == -1 && *count <= capacity) *count = capacity * 2;
    return result == -1 ? -1 : 0;
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
