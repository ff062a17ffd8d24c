// The proc connector's reader as it was before libnl-3 (CLinuxShim at 9e05886), kept here only
// as the baseline of `make bench`: a hand-written NETLINK_CONNECTOR socket, one recv per
// datagram, parsed with memcpy. The one change: each event also carries its CPU and the kernel's
// event number, so that lost events are counted as the new reader counts them.
#include "ProcConnectorBaseline.h"

#include <errno.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int baseline_proc_connector_open(int receive_buffer) {
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

long baseline_proc_connector_receive(int fd, void *buffer, unsigned long capacity) {
    return recv(fd, buffer, capacity, MSG_DONTWAIT);
}

int baseline_proc_connector_parse(const void *buffer, long length, struct baseline_proc_event *events,
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
                struct baseline_proc_event *out = &events[count];
                memset(out, 0, sizeof *out);
                out->what = event.what;
                out->timestamp_ns = event.timestamp_ns;
                out->cpu = event.cpu;       // added for the benchmark: losses are counted from
                out->sequence = message.seq; // the kernel's per-CPU event numbers

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
