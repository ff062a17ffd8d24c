// The DNS fast path: two socket-filter programs the agent's rules run through iptables' `bpf`
// match (xt_bpf), in the raw table, before connection tracking. `question` matches a filtered
// user's UDP question (in OUTPUT: the packet starts at its IP header) that the table lets her ask
// in the kernel, and notes its flow and id; `answer` matches the reply to such a question (in
// PREROUTING, or in OUTPUT from a resolver on loopback) when it answers a name the table lets
// pass with nothing but addresses of that very name. What they match is let go untracked; anything
// else does not match, and is tracked and goes to the queue as before. Built by `make bpf`
// (clang -target bpf) into ../include/dns_fast_path_object.h, which is committed.
//
// What passes here was judged by the agent first: it puts a question in the table only after it
// let the same user's same question (the same name, byte for byte, and type) through the queue
// and judged its answer, which held addresses only. Every entry carries an expiry (half a
// minute on) and the table's generation, which the agent moves on at every change of a user's
// filter: an entry of an earlier generation is void. Each answer is read here all the same.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "../include/dns_fast_path_types.h"

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, DNS_FAST_PATH_ENTRIES);
    __type(key, struct dns_fast_path_key);
    __type(value, struct dns_fast_path_value);
} names SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} generation SEC(".maps");

/// A question let go untracked, until its answer comes (or, the least recently used, it goes):
/// whose it was, under which generation, and what it asked.
struct dns_question_value {
    __u64 generation;
    struct dns_fast_path_key asked;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, DNS_QUESTIONS_ENTRIES);
    __type(key, struct dns_question_key);
    __type(value, struct dns_question_value);
} questions SEC(".maps");

/// The longest DNS message read here; a longer one is the queue's.
#define DNS_MESSAGE_MAX 1024

/// Where both programs read a message: one read of the packet (a read of a few bytes is a helper
/// call of its own: the fields read one by one cost a question 1.8 µs and an answer 1.3 µs of the
/// kernel's time, measured with kernel.bpf_stats_enabled under dnsperf), then parsed in memory.
/// One per CPU; a run that another run on the same CPU interrupted (a packet of a softirq) finds
/// `runs` moved on and matches nothing: what it read may be the other's.
struct dns_scratch {
    __u64 runs;
    /// Twice what is read: an offset masked below DNS_MESSAGE_MAX, plus a few bytes, stays inside.
    __u8 bytes[DNS_MESSAGE_MAX * 2];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct dns_scratch);
} dns_scratch SEC(".maps");

/// What the fast path reads of a packet before its message: the flow, where the message is and
/// its length, and whether the message is one the programs read (`whole`).
struct dns_packet {
    struct dns_question_key flow;
    __u32 offset, length, whole;
};

/// Reads a UDP datagram's addresses and ports from a packet starting at its IP header (IPv4 with
/// any header length, IPv6 with UDP as its first next header), in one read: her side is the
/// source of a question (`answer` 0), the destination of an answer (1). 0, or -1 for no such
/// datagram. Its message is not `whole` when longer than the programs read, or when the datagram
/// was sent in segments (UDP_SEGMENT), which the rules see whole and the kernel splits after: a
/// first message ending in an EDNS record whose length covers the segments after it would carry
/// them past a test that reads one message (a child's attack on the installed agent: an alias
/// into a shielded name, and a shielded question, got through that way). Those are the queue's,
/// which is given each segment.
static __always_inline int read_packet(struct __sk_buff *skb, int answer, struct dns_packet *packet) {
    __u8 header[68] = {};
    __u32 size = skb->len < sizeof(header) ? skb->len : sizeof(header);
    // (Each bound tested apart, as the verifier follows them.)
    asm volatile("" : "+r"(size));
    if (size < 40) return -1;
    asm volatile("" : "+r"(size));
    if (size > sizeof(header)) return -1;
    if (bpf_skb_load_bytes(skb, 0, header, size) < 0) return -1;
    struct dns_question_key *flow = &packet->flow;
    __u32 udp;
    if ((header[0] >> 4) == 4) {
        udp = (header[0] & 0x0F) * 4;
        if (header[9] != IPPROTO_UDP || udp < 20 || udp > 60) return -1;
        flow->family = 4;
        __builtin_memcpy(flow->client, header + (answer ? 16 : 12), 4);
        __builtin_memcpy(flow->server, header + (answer ? 12 : 16), 4);
    } else if ((header[0] >> 4) == 6) {
        if (header[6] != IPPROTO_UDP) return -1;
        udp = 40;
        flow->family = 6;
        __builtin_memcpy(flow->client, header + (answer ? 24 : 8), 16);
        __builtin_memcpy(flow->server, header + (answer ? 8 : 24), 16);
    } else {
        return -1;
    }
    if (udp + 8 + 2 > size) return -1;
    __u16 source = header[udp] << 8 | header[udp + 1], destination = header[udp + 2] << 8 | header[udp + 3];
    flow->client_port = answer ? destination : source;
    flow->server_port = answer ? source : destination;
    flow->id = header[udp + 8] << 8 | header[udp + 9];
    packet->offset = udp + 8;
    packet->length = skb->len - packet->offset;
    packet->whole = skb->gso_segs <= 1 && skb->gso_size == 0 && packet->length >= 12
                    && packet->length <= DNS_MESSAGE_MAX;
    return 0;
}

/// Reads the message into the scratch buffer; gives the buffer and the run's number, or 0.
static __always_inline struct dns_scratch *read_message(struct __sk_buff *skb, struct dns_packet *packet, __u64 *run) {
    __u32 zero = 0;
    struct dns_scratch *scratch = bpf_map_lookup_elem(&dns_scratch, &zero);
    if (!scratch) return 0;
    *run = ++scratch->runs;
    // (Each bound tested apart, as the verifier follows them.)
    __u32 size = packet->length;
    asm volatile("" : "+r"(size));
    if (size < 12) return 0;
    asm volatile("" : "+r"(size));
    if (size > DNS_MESSAGE_MAX) return 0;
    if (bpf_skb_load_bytes(skb, packet->offset, scratch->bytes, size) < 0) return 0;
    return scratch;
}

/// The big-endian 16 bits at `at` (below DNS_MESSAGE_MAX) of a message read.
static __always_inline __u32 word_at(const __u8 *bytes, __u32 at) {
    at &= DNS_MESSAGE_MAX - 1;
    return (__u32)bytes[at] << 8 | bytes[at + 1];
}

/// Whether the first `length` bytes (at most DNS_FAST_PATH_NAME_MAX) of two names are the same.
static __always_inline int same_name(const __u8 *a, const __u8 *b, __u32 length) {
    for (__u32 i = 0; i < DNS_FAST_PATH_NAME_MAX; i++) {
        if (i >= length) break;
        if (a[i] != b[i]) return 0;
    }
    return 1;
}

/// Reads the message's one question (at 12) into `key` (name, type; uid left alone) and gives
/// the offset just past it, or 0 for a question the fast path does not take: a name longer than
/// the table holds, compressed, or not class IN, type A or AAAA.
static __always_inline __u32 read_question(const __u8 *bytes, __u32 end, struct dns_fast_path_key *key) {
    __u32 at = 0, length = 0;
    for (int label = 0; label < DNS_FAST_PATH_NAME_MAX / 2; label++) {
        if (at >= DNS_FAST_PATH_NAME_MAX || 12 + at >= end) return 0;
        __u8 count = bytes[12 + at];
        if (count == 0) {
            length = at + 1;
            break;
        }
        if (count > 63) return 0;
        at += count + 1;
    }
    if (length == 0 || 12 + length + 4 > end) return 0;
    // The key is the name and zeros (the callers' key is zeros already).
    for (__u32 i = 0; i < DNS_FAST_PATH_NAME_MAX; i++) {
        if (i >= length) break;
        key->name[i] = bytes[12 + i];
    }
    __u32 type = word_at(bytes, 12 + length);
    if (word_at(bytes, 12 + length + 2) != 1 || (type != 1 && type != 28)) return 0;
    key->type = type;
    key->length = length;
    return 12 + length + 4;
}

/// Whether what follows `at` is the EDNS record (the root name, type OPT) if there is one, and
/// then nothing. Nothing rides on a message the fast path passes.
static __always_inline int ends_after(const __u8 *bytes, __u32 at, __u32 end, __u32 additionals) {
    if (additionals == 1) {
        if (at + 11 > end || bytes[at & (DNS_MESSAGE_MAX - 1)] != 0 || word_at(bytes, at + 1) != 41) return 0;
        at += 11 + word_at(bytes, at + 9);
    }
    return at == end;
}

/// Whether an entry is in force: not expired, of the table's generation.
static __always_inline struct dns_fast_path_value *in_force(struct dns_fast_path_key *key, __u64 current) {
    struct dns_fast_path_value *value = bpf_map_lookup_elem(&names, key);
    if (!value || value->generation != current || bpf_ktime_get_ns() >= value->expires) return 0;
    return value;
}

static __always_inline __u64 *current_generation(void) {
    __u32 zero = 0;
    return bpf_map_lookup_elem(&generation, &zero);
}

/// Reads her question (`packet`'s flow, `key`'s type and name) from a packet starting at its IP
/// header, for `question` and `asked`: a standard query (QR 0, opcode 0), one question the fast
/// path takes, an EDNS record at most, nothing after, read whole by this run alone. 0, or -1.
static __always_inline int read_her_question(
    struct __sk_buff *skb, struct dns_packet *packet, struct dns_fast_path_key *key) {
    if (read_packet(skb, 0, packet) < 0 || !packet->whole) return -1;
    __u64 run;
    struct dns_scratch *scratch = read_message(skb, packet, &run);
    if (!scratch) return -1;
    const __u8 *bytes = scratch->bytes;
    __u32 additionals = word_at(bytes, 10);
    if ((word_at(bytes, 2) & 0xF800) != 0 || word_at(bytes, 4) != 1 || word_at(bytes, 6) != 0
        || word_at(bytes, 8) != 0 || additionals > 1)
        return -1;
    __u32 at = read_question(bytes, packet->length, key);
    if (at == 0 || !ends_after(bytes, at, packet->length, additionals) || scratch->runs != run) return -1;
    return 0;
}

SEC("socket")
int question(struct __sk_buff *skb) {
    struct dns_packet packet = {};
    struct dns_question_value asked = {};
    if (read_her_question(skb, &packet, &asked.asked) < 0) return 0;
    asked.asked.uid = bpf_get_socket_uid(skb);
    __u64 *current = current_generation();
    if (!current) return 0;
    struct dns_fast_path_value *entry = in_force(&asked.asked, *current);
    if (!entry) return 0;
    // Let go untracked: its answer passes only as the answer to this very question (a second
    // one, or one after the entry went, is tracked as a flow of its own, and dropped).
    asked.generation = *current;
    if (bpf_map_update_elem(&questions, &packet.flow, &asked, BPF_ANY) < 0) return 0;
    __sync_fetch_and_add(&entry->hits, 1);
    return 1;
}

SEC("socket")
int answer(struct __sk_buff *skb) {
    struct dns_packet packet = {};
    if (read_packet(skb, 1, &packet) < 0) return 0;
    // The answer to a question let go here, on its flow, with its id: nothing else passes.
    struct dns_question_value *asked = bpf_map_lookup_elem(&questions, &packet.flow);
    if (!asked) return 0;
    struct dns_fast_path_value *entry;
    __u64 *current = current_generation();
    if (!packet.whole || !current || asked->generation != *current) goto judged_again;
    __u64 run;
    struct dns_scratch *scratch = read_message(skb, &packet, &run);
    if (!scratch) goto judged_again;
    const __u8 *bytes = scratch->bytes;
    __u32 end = packet.length;
    // A response (QR 1) to a standard query, not truncated, no error; its one question the very
    // one asked; one to sixteen answers, nothing in authority, an EDNS record at most.
    __u32 answers = word_at(bytes, 6), additionals = word_at(bytes, 10);
    if ((word_at(bytes, 2) & 0xFA0F) != 0x8000 || word_at(bytes, 4) != 1 || answers < 1 || answers > 16
        || word_at(bytes, 8) != 0 || additionals > 1)
        goto judged_again;
    // (Read once: the entry is memory others may write.)
    __u32 length = asked->asked.length;
    asm volatile("" : "+r"(length));
    if (length < 1 || length > DNS_FAST_PATH_NAME_MAX || 12 + length + 4 > end) goto judged_again;
    if (!same_name(bytes + 12, asked->asked.name, length)) goto judged_again;
    __u32 type = asked->asked.type;
    if (word_at(bytes, 12 + length) != type || word_at(bytes, 12 + length + 2) != 1) goto judged_again;
    // Each answer: the question's own name (a pointer to it, offset 12), its type, class IN, an
    // address of the type's length. An alias, or any other record, leaves the answer tracked (and
    // dropped), and the question off the fast path until the agent judges it again.
    __u32 at = 12 + length + 4;
    for (int i = 0; i < 16; i++) {
        if (i >= answers) break;
        if (at + 12 > end) goto judged_again;
        __u32 size = word_at(bytes, at + 10);
        if (word_at(bytes, at) != 0xC00C || word_at(bytes, at + 2) != type || word_at(bytes, at + 4) != 1
            || size != (type == 1 ? 4 : 16))
            goto judged_again;
        at += 12 + size;
    }
    if (!ends_after(bytes, at, end, additionals) || scratch->runs != run) goto judged_again;
    // Once: the same answer twice is one too many.
    if (bpf_map_delete_elem(&questions, &packet.flow) < 0) return 0;
    return 1;
judged_again:
    // The question goes off the table (made void: what it passed is still counted).
    entry = bpf_map_lookup_elem(&names, &asked->asked);
    if (entry) entry->expires = 0;
    bpf_map_delete_elem(&questions, &packet.flow);
    return 0;
}

/// A question `question` let go, read again in the mangle table after the rules copied its bytes
/// into the packet (`CHECKSUM --checksum-fill`, which copies pages the packet shares with its
/// sender): whether they are still the question it let go. A question sent from pages she
/// rewrites at once (`MSG_ZEROCOPY`) was read in the raw table as an allowed name and sent as a
/// shielded one (the attack on the installed agent, 2026-12-01: 52 of 300 reached her resolver).
/// No match: the rules drop it.
SEC("socket")
int asked(struct __sk_buff *skb) {
    struct dns_packet packet = {};
    struct dns_fast_path_key key = {};
    if (read_her_question(skb, &packet, &key) < 0) return 0;
    struct dns_question_value *let_go = bpf_map_lookup_elem(&questions, &packet.flow);
    if (!let_go || let_go->asked.type != key.type || let_go->asked.length != key.length) return 0;
    // (Up to the length both have: the names are the same when those bytes are.)
    return same_name(let_go->asked.name, key.name, key.length);
}

// The hello fast path: `hello` matches a filtered user's first data segment of a TCP connection
// (in OUTPUT, on a flow the agent never marked) when it is one whole TLS ClientHello and nothing
// else, naming one server, and the table lets that user send that very name to that very server.
// Like a question, an entry is put only after the agent passed such a hello through the queue,
// and is void past its expiry and at any change of a filter (the same generation). What the
// rules do with a match: mark the flow watched by the kernel (a value of its own), copy the hello
// to the agent's log, let it go. The agent judges the copy as it judges a queued hello, and her
// next data is compared with this hello until the server acknowledges it: `acknowledged`
// matches (in INPUT) the server's packet on that very connection whose acknowledgement reaches
// the hello's end, and the rules make the flow PASSED on it. Not the agent, by the flow's
// addresses and ports: such a write, read late, lands on whatever connection holds them then (a
// child's attack on the installed agent, 2026-12-01: an acknowledgement of a connection she reset
// passed the next one on the same ports, whose decoy hello the kernel had let go).
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, HELLO_FAST_PATH_ENTRIES);
    __type(key, struct hello_fast_path_key);
    __type(value, struct dns_fast_path_value);
} hellos SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, HELLO_FLOWS_ENTRIES);
    __type(key, struct hello_flow_key);
    __type(value, struct hello_flow_value);
} hello_flows SEC(".maps");

/// The most extensions a hello may have here (Chromium sends about 18), and the most protocols
/// its ALPN may name: a hello with more goes to the queue.
#define HELLO_EXTENSIONS_MAX 32
#define HELLO_PROTOCOLS_MAX 12
/// The longest hello read here (its record, from its header on); a longer one goes to the queue.
#define HELLO_BYTES_MAX 2048

/// Where `hello` reads a hello: one read of the packet (each read of a few bytes is a helper call
/// of its own, and the fields read one by one cost a hello 5.7 µs of the kernel's time, measured
/// with kernel.bpf_stats_enabled under `Benchmarks/connections.sh`), then parsed in memory. One
/// per CPU; a run that another run on the same CPU interrupted (a packet sent from a softirq)
/// finds `runs` moved on and matches nothing: what it read may be the other's.
struct hello_scratch {
    __u64 runs;
    /// Twice what is read: an offset masked below HELLO_BYTES_MAX, plus a few bytes, stays inside.
    __u8 bytes[HELLO_BYTES_MAX * 2];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct hello_scratch);
} hello_scratch SEC(".maps");

/// The big-endian 16 bits at `at` (below HELLO_BYTES_MAX) of what `hello` read.
static __always_inline __u32 u16_at(const __u8 *bytes, __u32 at) {
    at &= HELLO_BYTES_MAX - 1;
    return (__u32)bytes[at] << 8 | bytes[at + 1];
}

/// Whether the ALPN extension's body (`at`, `length` bytes, within `end`) is what the agent reads
/// as one: a list whose length is the rest, of non-empty protocol names that fill it exactly.
static __always_inline int alpn_is_readable(const __u8 *bytes, __u32 at, __u32 length) {
    if (length < 2 || u16_at(bytes, at) != length - 2) return 0;
    __u32 end = at + length;
    at += 2;
    for (int i = 0; i < HELLO_PROTOCOLS_MAX; i++) {
        if (at == end) return 1;
        __u8 size = bytes[at & (HELLO_BYTES_MAX - 1)];
        if (size == 0) return 0;
        at += 1 + size;
        if (at > end) return 0;
    }
    return at == end;
}

/// A TCP segment in a packet that starts at its IP header: IPv4 (any header length, not a
/// fragment) or IPv6 (TCP the first next header). Gives the TCP header's offset, or -1 for
/// anything else, and fills in the family (4 or 6), the addresses (IPv4's in the first four
/// bytes) and the IP packet's whole length.
static __always_inline int tcp_segment(
    struct __sk_buff *skb, __u8 *family, __u8 source[16], __u8 destination[16], __u32 *total) {
    __u8 first;
    if (bpf_skb_load_bytes(skb, 0, &first, 1) < 0) return -1;
    if ((first >> 4) == 4) {
        __u8 header[20];
        if (bpf_skb_load_bytes(skb, 0, header, 20) < 0 || header[9] != IPPROTO_TCP) return -1;
        if (((header[6] << 8 | header[7]) & 0x3FFF) != 0) return -1;
        __u32 tcp = (first & 0x0F) * 4;
        if (tcp < 20) return -1;
        *family = 4;
        *total = header[2] << 8 | header[3];
        __builtin_memcpy(source, header + 12, 4);
        __builtin_memcpy(destination, header + 16, 4);
        return tcp;
    }
    if ((first >> 4) == 6) {
        __u8 header[40];
        if (bpf_skb_load_bytes(skb, 0, header, 40) < 0 || header[6] != IPPROTO_TCP) return -1;
        *family = 6;
        *total = 40 + (header[4] << 8 | header[5]);
        __builtin_memcpy(source, header + 8, 16);
        __builtin_memcpy(destination, header + 24, 16);
        return 40;
    }
    return -1;
}

SEC("socket")
int hello(struct __sk_buff *skb) {
    // One packet as it leaves, not one the kernel splits into segments after (segmentation
    // offload): the agent's rules copy a hello's bytes out of the sender's pages before this runs
    // (`CHECKSUM --checksum-fill` in the mangle table), which the kernel does not do for those,
    // and a hello sent with `sendfile` from a file she rewrites at once was otherwise read here
    // as one name and sent as another (the attack on the installed agent, 2026-11-30).
    if (skb->gso_segs > 1 || skb->gso_size != 0) return 0;
    struct hello_fast_path_key key = {};
    struct hello_flow_key flow = {};
    __u32 total;
    int tcp = tcp_segment(skb, &key.family, flow.client, key.address, &total);
    if (tcp < 0) return 0;
    if (total != skb->len) return 0;
    __u8 segment[20];
    if (bpf_skb_load_bytes(skb, tcp, segment, 20) < 0) return 0;
    key.port = segment[2] << 8 | segment[3];
    // ACK, PSH at most: no SYN (Fast Open), FIN, RST or urgent data.
    __u8 flags = segment[13] & 0x3F;
    if (flags != 0x10 && flags != 0x18) return 0;
    __u32 offset = (segment[12] >> 4) * 4;
    if (offset < 20) return 0;
    __u32 start = tcp + offset;
    if (start + 9 > total) return 0;
    // One handshake record holding one ClientHello, ending where the segment ends.
    __u8 record[9];
    if (bpf_skb_load_bytes(skb, start, record, 9) < 0) return 0;
    __u32 record_length = record[3] << 8 | record[4];
    __u32 body = (__u32)record[6] << 16 | record[7] << 8 | record[8];
    if (record[0] != 0x16 || record[1] != 3 || record[2] > 4 || record_length == 0 || start + 5 + record_length != total
        || record[5] != 1 || body < 38 || body + 4 != record_length)
        return 0;
    // The record, read once; offsets below are from its start.
    __u32 end = total - start;
    if (end > HELLO_BYTES_MAX) return 0;
    __u32 zero = 0;
    struct hello_scratch *scratch = bpf_map_lookup_elem(&hello_scratch, &zero);
    if (!scratch) return 0;
    __u64 run = ++scratch->runs;
    __u8 *bytes = scratch->bytes;
    // (Each bound tested apart, as the verifier follows them.)
    __u32 size = end;
    asm volatile("" : "+r"(size));
    if (size < 9) return 0;
    asm volatile("" : "+r"(size));
    if (size > HELLO_BYTES_MAX) return 0;
    if (bpf_skb_load_bytes(skb, start, bytes, size) < 0) return 0;
    // Its fixed fields: the version, the random, the session id, the cipher suites, compression.
    __u32 at = 9 + 2 + 32;
    if (at >= end) return 0;
    __u8 session = bytes[at];
    if (session > 32) return 0;
    at += 1 + session;
    if (at + 2 > end) return 0;
    __u32 suites = u16_at(bytes, at);
    if (suites < 2 || (suites & 1)) return 0;
    at += 2 + suites;
    if (at + 1 > end) return 0;
    __u8 compression = bytes[at & (HELLO_BYTES_MAX - 1)];
    if (compression < 1) return 0;
    at += 1 + compression;
    // The extensions, which fill the rest; one server name among them.
    if (at + 2 > end || at + 2 + u16_at(bytes, at) != end) return 0;
    at += 2;
    int named = 0;
    __u32 name_at = 0, name_size = 0;
    for (int i = 0; i < HELLO_EXTENSIONS_MAX; i++) {
        if (at == end) break;
        if (at + 4 > end) return 0;
        __u32 type = u16_at(bytes, at), length = u16_at(bytes, at + 2);
        at += 4;
        if (at + length > end) return 0;
        if (type == 0) {
            // One list holding one host_name, non-empty, that the table can hold.
            if (named || length < 5) return 0;
            __u32 list = u16_at(bytes, at), size = u16_at(bytes, at + 3);
            if (list + 2 != length || bytes[(at + 2) & (HELLO_BYTES_MAX - 1)] != 0 || size + 3 != list || size < 1
                || size > HELLO_FAST_PATH_NAME_MAX)
                return 0;
            name_at = at + 5;
            name_size = size;
            named = 1;
        } else if (type == 16) {
            if (!alpn_is_readable(bytes, at, length)) return 0;
        }
        at += length;
    }
    if (at != end || !named) return 0;
    // Read whole, by this run alone: the name, from the packet itself.
    if (scratch->runs != run) return 0;
    if (name_size < 1 || name_size > HELLO_FAST_PATH_NAME_MAX
        || bpf_skb_load_bytes(skb, start + name_at, key.name, name_size) < 0)
        return 0;
    key.length = name_size;
    key.uid = bpf_get_socket_uid(skb);
    struct dns_fast_path_value *value = bpf_map_lookup_elem(&hellos, &key);
    if (!value) return 0;
    __u64 *current = bpf_map_lookup_elem(&generation, &zero);
    if (!current || value->generation != *current || bpf_ktime_get_ns() >= value->expires) return 0;
    // Its connection, and the sequence number the server's acknowledgement must reach.
    flow.family = key.family;
    __builtin_memcpy(flow.server, key.address, 16);
    flow.client_port = segment[0] << 8 | segment[1];
    flow.server_port = key.port;
    struct hello_flow_value sent = {.generation = *current};
    sent.end = ((__u32)segment[4] << 24 | (__u32)segment[5] << 16 | (__u32)segment[6] << 8 | segment[7])
               + (total - start);
    if (bpf_map_update_elem(&hello_flows, &flow, &sent, BPF_ANY) < 0) return 0;
    __sync_fetch_and_add(&value->hits, 1);
    return 1;
}

/// A server's packet (in INPUT) on a connection whose hello `hello` let go, that acknowledges the
/// whole hello, under the generation it was let go under: the connection's entry goes, and the
/// rules make the flow PASSED. Anything else does not match (the flow stays watched: her data is
/// compared in the queue, whose verdict then takes it on).
SEC("socket")
int acknowledged(struct __sk_buff *skb) {
    struct hello_flow_key flow = {};
    __u32 total;
    int tcp = tcp_segment(skb, &flow.family, flow.server, flow.client, &total);
    if (tcp < 0) return 0;
    __u8 segment[20];
    if (bpf_skb_load_bytes(skb, tcp, segment, 20) < 0) return 0;
    // An acknowledgement: ACK, and no SYN or RST.
    if ((segment[13] & 0x10) == 0 || (segment[13] & 0x06) != 0) return 0;
    flow.server_port = segment[0] << 8 | segment[1];
    flow.client_port = segment[2] << 8 | segment[3];
    struct hello_flow_value *sent = bpf_map_lookup_elem(&hello_flows, &flow);
    if (!sent) return 0;
    __u32 zero = 0;
    __u64 *current = bpf_map_lookup_elem(&generation, &zero);
    if (!current || sent->generation != *current) return 0;
    __u32 acknowledgement =
        (__u32)segment[8] << 24 | (__u32)segment[9] << 16 | (__u32)segment[10] << 8 | segment[11];
    // At or past the hello's end (in sequence space: less than half of it on).
    if (acknowledgement - sent->end >= 0x80000000u) return 0;
    bpf_map_delete_elem(&hello_flows, &flow);
    return 1;
}

char LICENSE[] SEC("license") = "GPL";
