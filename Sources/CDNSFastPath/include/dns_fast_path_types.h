// The layout shared by the kernel side (bpf/dns-fast-path.bpf.c) and the agent's.
#ifndef DNS_FAST_PATH_TYPES_H
#define DNS_FAST_PATH_TYPES_H

#include <linux/types.h>

/// The longest question name (wire form, its final zero included) the fast path knows; a longer
/// one always goes to the queue.
#define DNS_FAST_PATH_NAME_MAX 128
/// The entries the table holds: the least recently used goes first (the queue judges it again).
#define DNS_FAST_PATH_ENTRIES 8192
/// A question a user may ask in the kernel, and have answered there with addresses of its name
/// alone: the uid, the type, the name exactly as it was sent (its case included), zeros after it.
struct dns_fast_path_key {
    __u32 uid;
    __u16 type;
    __u16 length;
    __u8 name[DNS_FAST_PATH_NAME_MAX];
};

struct dns_fast_path_value {
    /// CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns) after which the entry is void.
    __u64 expires;
    /// The table's generation it was made under: entries of an earlier one are void.
    __u64 generation;
    /// Questions passed by it since it was made (atomic adds in the kernel).
    __u64 hits;
};

/// The longest TLS server name (SNI, as sent) the hello table holds; a longer one always goes to
/// the queue.
#define HELLO_FAST_PATH_NAME_MAX 128
/// The entries the hello table holds: the least recently used goes first.
#define HELLO_FAST_PATH_ENTRIES 8192

/// A TLS hello a user may send in the kernel: the socket's uid, the server's address and port,
/// the one server name exactly as sent (its case included), zeros after it.
struct hello_fast_path_key {
    __u32 uid;
    /// 4 or 6.
    __u8 family;
    __u8 length;
    /// The server's port, in host order.
    __u16 port;
    /// The server's address (IPv4 in the first four bytes, zeros after).
    __u8 address[16];
    __u8 name[HELLO_FAST_PATH_NAME_MAX];
};

/// The connections whose hello the kernel let go, the most it keeps (the least recently used goes
/// first: a connection whose server never acknowledged its hello then stays watched).
#define HELLO_FLOWS_ENTRIES 16384

/// A connection whose hello the kernel let go: its addresses and ports (host order), its side
/// (client: hers) and the server's.
struct hello_flow_key {
    /// 4 or 6.
    __u8 family;
    __u8 zero;
    __u16 client_port;
    __u16 server_port;
    __u16 zero2;
    __u8 client[16];
    __u8 server[16];
};

struct hello_flow_value {
    /// The hello table's generation it was let go under.
    __u64 generation;
    /// The sequence number just past the hello: the server's acknowledgement of it reaches it.
    __u32 end;
    __u32 zero;
};

/// The questions the fast path let go untracked and not yet answered, the most it keeps (the least
/// recently used goes first: its answer, should it come after, is dropped as one to no question,
/// and the child's resolver asks again).
#define DNS_QUESTIONS_ENTRIES 8192

/// A question the fast path let go: its flow (host-order ports, her side the client's) and its
/// message id. Only its answer, on that very flow with that very id, may pass untracked.
struct dns_question_key {
    /// 4 or 6.
    __u8 family;
    __u8 zero;
    __u16 id;
    __u16 client_port;
    __u16 server_port;
    __u8 client[16];
    __u8 server[16];
};

#endif
