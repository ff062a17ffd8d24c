// CNetfilterQueue — libnetfilter_queue (Debian's libnetfilter-queue-dev), for reading the
// children's DNS packets from an NFQUEUE and giving verdicts.
//
// <linux/netfilter/nfnetlink.h> must come before libnetfilter_queue.h: a target that also sees
// libnl-3 otherwise gets two copies of `enum nfnetlink_groups`.
#ifndef CNETFILTERQUEUE_SHIM_H
#define CNETFILTERQUEUE_SHIM_H

#include <stdint.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter/nfnetlink_queue.h>

/// The packet ID of a queued packet, in host order (0 if the header is missing).
static inline uint32_t screentime_nfq_packet_id(struct nfq_data *data) {
    struct nfqnl_msg_packet_hdr *header = nfq_get_msg_packet_hdr(data);
    return header ? ntohl(header->packet_id) : 0;
}

/// The netfilter hook a queued packet was taken at (NF_INET_LOCAL_IN = 1, NF_INET_LOCAL_OUT = 3),
/// 255 if the header is missing.
static inline uint8_t screentime_nfq_packet_hook(struct nfq_data *data) {
    struct nfqnl_msg_packet_hdr *header = nfq_get_msg_packet_hdr(data);
    return header ? header->hook : 255;
}

/// Asks the kernel not to report ENOBUFS on the queue's socket when the agent falls behind
/// (the packets are then dropped, which fails closed).
static inline int screentime_nfq_no_enobufs(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on);
}

#endif
