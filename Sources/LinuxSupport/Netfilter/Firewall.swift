import FoundationEssentials

/// The agent's own iptables and ip6tables chains: they send the filtered users' DNS (and the
/// replies to it) and the opening packets of their other connections to a netfilter queue,
/// remember each connection's verdict in its connection mark, limit how fast each user may
/// ask, and refuse the known ways around.
///
/// Layout, the same in both families (`CHAIN` is the configured name, `screentime` by default;
/// `M` is the byte of the connection mark the agent owns, bits 16–23: DNS is the configured
/// value, PENDING and REFUSED the next two, PASSED one of the eight after them, by generation,
/// WATCHED the one after those, the hello fast path's kernel-watched the next, INBOUND, a
/// connection opened from outside, after it; and UNTRACKED, the last, a packet's mark only):
///
///     raw OUTPUT      -p udp -j CHAIN-raw                               (first rule)
///     raw PREROUTING  -p udp -j CHAIN-rawin                             (first rule)
///     CHAIN-raw       (the DNS fast path, per range R, after its limit: `untrackedRuleset`)
///                     -p udp --dport 53 -m owner R -m limit -m bpf --object-pinned QUESTION -j CHAIN-fast
///                     -o lo -p udp --sport 53 -m bpf --object-pinned ANSWER -j CHAIN-fast
///     CHAIN-rawin     ! -i lo -p udp --sport 53 -m bpf --object-pinned ANSWER -j CT --notrack
///     CHAIN-fast      -j MARK --set-xmark UNTRACKED/M, -j CT --notrack, -j ACCEPT
///     mangle OUTPUT   -j CHAIN-hello                                    (first rule)
///     CHAIN-hello     per R: -p udp --dport 53 -m owner R -j CHECKSUM --checksum-fill   (her
///                        question's bytes copied into the packet: what is read is what leaves)
///                     -p udp --dport 53 -m mark --mark UNTRACKED/M -m bpf --object-pinned ASKED
///                        -j RETURN, then -j DROP   (one the raw table let go, read again:
///                        `copiedQuestionRules`)
///                     (the hello fast path's rule: `helloRuleset`)
///     OUTPUT          -j CHAIN                                          (first rule)
///     INPUT           -j CHAIN-in                                       (first rule)
///     CHAIN           -m mark --mark UNTRACKED/M -j ACCEPT   (what the DNS fast path let go)
///                     per range R' of uids not filtered (the ranges between the filtered ones):
///                     -m connmark --mark 0/M -m owner --uid-owner R' -j RETURN   (someone not
///                                       filtered, on a flow the agent never marked: nothing here)
///                     -p tcp --syn -m connmark ! --mark PENDING/M -j CONNMARK --set-xmark 0/M
///                                       (a new connection on a reused flow; a pending one's SYN
///                                        sent again keeps its mark)
///                     -p tcp -m connmark --mark PASSED/M -j RETURN   (a judged TCP flow)
///                     per filtered uid range R, for every packet:
///                     -p udp -m length (a 1,200-byte payload) -m owner R -m u32 (a QUIC long
///                        header: 0b11…, version ≠ 0) -j REJECT             (QUIC on any port)
///                     per filtered uid range R (her questions, first: nothing below is for them):
///                     -m owner --uid-owner R -p udp --dport 53 -m limit --limit L/sec -j CHAIN-filter
///                     -m owner --uid-owner R -p udp --dport 53 -j DROP      (over its limit)
///                     -m length --length 0:1500 -m connmark --mark PASSED/M -j RETURN
///                                                (a judged flow: never queued, but for a UDP
///                                                 datagram sent in segments, UDP_SEGMENT)
///                     -o lo -m conntrack --ctdir REPLY -j RETURN   (what a local server sends back:
///                     -p tcp -m connmark --mark INBOUND/M -m conntrack --ctdir REPLY -j RETURN
///                     ! -p tcp -m conntrack --ctdir REPLY -j RETURN    TCP only if opened from outside)
///                     -m mark --mark V/M -j CONNMARK --save-mark  (V = PASSED, PENDING, REFUSED,
///                     -m mark --mark PASSED|PENDING|WATCHED/M -j RETURN   WATCHED: a verdict come
///                                                                  back through NF_REPEAT, kept by
///                                                                  the flow)
///                     -m connmark --mark REFUSED/M -j REJECT  (TCP but its own reset: a reset;
///                                                              UDP: ICMP port unreachable)
///                     -p tcp -m owner ! --socket-exists -m connmark --mark WATCHED/M (KWATCHED, PENDING) -j CHAIN-filter
///                                                (a watched flow's segment sent by a closed socket)
///                     -p tcp -m u32 (no data, no SYN: an ACK) -j RETURN   (judged at its data)
///                     -p tcp -m u32 (no data, a SYN) -m multiport ! --dports 53,853
///                        -m set ! --match-set CHAIN-sh4|6 dst -j RETURN   (the SYN fast path: only
///                                 a SYN to an address learned for a shielded name comes to the queue)
///                     (the hello fast path, per R: `helloRules`)
///                     per filtered uid range R (a user, its subordinate uids):
///                     -m owner --uid-owner R -p tcp --dport 53 -m limit --limit L/sec -j CHAIN-filter
///                     -m owner --uid-owner R -p tcp --dport 53 -j DROP
///                     -m owner --uid-owner R -m limit --limit C/sec -j CHAIN-filter
///                     -m owner --uid-owner R -j DROP               (unjudged packets over C)
///                     -p udp --dport 53 -m connmark --mark DNS/M -j CONNMARK --set-xmark 0/M
///                                   (someone else's question on a flow a child's question left)
///     CHAIN-filter    -p udp/tcp --dport 53 -j CONNMARK --set-xmark DNS/M  (its replies are known)
///                     -p udp/tcp --dport 53 -j NFQUEUE --queue-num N   (no --queue-bypass: fail closed)
///                     -p tcp --dport 853 -j REJECT --reject-with tcp-reset   (DNS over TLS)
///                     -p udp --dport 853 -j REJECT                           (DNS over QUIC)
///                     -d DOH -p tcp --dport 443 -j REJECT --reject-with tcp-reset  (per DoH address)
///                     -p udp --dport 443 -j REJECT          (QUIC: browsers fall back to TCP)
///                     -j CONNMARK --restore-mark            (the queue sees how far it was judged)
///                     -j NFQUEUE --queue-num N              (a connection's opening packets)
///     CHAIN-in        -m mark --mark UNTRACKED/M -j ACCEPT
///                     -p udp --sport 53 -m conntrack --ctstate UNTRACKED -j ACCEPT
///                                               (what the DNS fast path let go, over loopback or not)
///                     ! -i lo -p tcp --syn -m conntrack --ctstate NEW -j CONNMARK --set-xmark INBOUND/M
///                     -m connmark --mark INBOUND/M -j RETURN   (a connection opened from outside)
///                     -p udp --sport 53 ! --dport 53 -m conntrack --ctstate NEW -m connmark --mark 0/M
///                        -j DROP   (an answer to a question the DNS fast path let go that its
///                                   program did not pass)
///                     -m connmark --mark 0/M -j RETURN        (a flow the agent never marked)
///                     (R = -p tcp -m conntrack --ctdir REPLY: the server's packets)
///                     R -m mark --mark PASSED|REFUSED/M -j CONNMARK --save-mark, then -j RETURN
///                     R -m connmark --mark WATCHED/M -j NFLOG --nflog-group G   (a copy of the
///                        server's acknowledgement of a judged opening; the agent marks the flow.
///                        Without the log: -j CONNMARK --restore-mark, then -j NFQUEUE, a verdict)
///                     (the hello fast path: R -m connmark --mark KWATCHED/M -j NFLOG --nflog-group G,
///                        then -m bpf --object-pinned ACKNOWLEDGED -j CONNMARK --set-xmark PASSED:
///                        the server's acknowledgement of the hello the kernel let go; `helloRules`)
///                     R -m connmark --mark PENDING/M -m u32 (no data) -j RETURN
///                     R -m connmark --mark PENDING/M -j CONNMARK --restore-mark
///                     R -m mark --mark PENDING/M -j NFQUEUE --queue-num N   (what the server sends
///                                                              before the opening is judged)
///                     -p udp/tcp --sport 53 -m connmark --mark DNS/M -m hashlimit (per flow: L/s,
///                        per server: 5L/s, bursts of five times that) -j DROP   (a reply flood)
///                     -p udp/tcp --sport 53 -m connmark --mark DNS/M -j NFQUEUE --queue-num N
///
/// The agent judges each opening packet and answers `NF_REPEAT` with a mark: PASSED (the rest
/// of the flow is accepted in the kernel), REFUSED (this packet and the rest are rejected: a TCP
/// reset reaches the child's socket at once), or PENDING (a TLS hello or HTTP head not all here:
/// its later segments still come to the queue, and one whose state the agent lost is refused).
/// A plain accept leaves the flow unjudged (a SYN, an empty ACK).
///
/// A TCP opening that passes is first WATCHED, not PASSED: the bytes judged are only the copy the
/// agent was shown, and TCP sends them again, rebuilt from whatever the sender's pages hold then
/// (a decoy sent with TTL 1 from a page rewritten after, by `sendfile` or `MSG_ZEROCOPY`). Until
/// the server acknowledges the whole opening, each data segment of the flow comes to the queue
/// and is compared with the bytes judged, and a copy of each of the server's packets comes to the
/// agent (they go on meanwhile); the acknowledgement that covers the opening makes the agent mark
/// the flow PASSED (or REFUSED, if the opening was judged under web shields since changed).
///
/// PASSED carries a generation (0–7): when a child's policy changes the agent installs the rules
/// with the next one, so a connection passed under the old policy is no longer on the fast path
/// and is judged again from its next packet (a TLS stream with no hello in sight is refused, and
/// the browser opens a new connection, whose hello is read).
///
/// The limits are per rule, so each user (each of its ranges) has its own: a child flooding the
/// queue slows only its own lookups and connections, never another child's. Installing replaces
/// the chains' contents in one `iptables-restore --noflush` transaction per family, so running it
/// again never duplicates a rule and the rules are never half there. The owner match works only
/// in OUTPUT, for sockets of this network namespace.
public struct Firewall: Sendable {
    public enum Family: String, Sendable, CaseIterable {
        case ipv4, ipv6

        var command: String { self == .ipv4 ? "iptables" : "ip6tables" }
    }

    /// How far a connection has been judged, as the value of its mark's byte.
    public enum Standing: Sendable, Equatable {
        case dns, pending, refused
        /// Its opening passed; watched until the server acknowledges the bytes judged.
        case watched
        /// Passed under the policy in force.
        case passed
        /// Passed under an earlier policy: to be judged again.
        case passedEarlier
    }

    public static let generations: UInt8 = 8

    public let chain: String
    public let queue: UInt16
    /// The connection mark of the filtered users' DNS, and the bits of the mark it owns.
    public let mark: UInt32
    public static let markMask: UInt32 = 0x00FF_0000
    /// The bits beside the byte, with the acknowledgement log, that say the agent read the
    /// server's acknowledgement of a watched flow's opening, and under which generation
    /// (`acknowledged(generation:)`). Set alone, by the flow's addresses and ports (ctnetlink),
    /// they pass nothing: the rules make a flow PASSED only where they meet WATCHED, which the
    /// agent's verdict on one of that very connection's packets set, and every verdict kept on a
    /// connection (and every SYN) clears them. So a late write that finds a new connection on the
    /// same ports (the old one reset, a new SYN) leaves it to be judged.
    public static let acknowledgedMask: UInt32 = 0x0F00_0000

    /// The acknowledged bits of a generation: (8 + generation) << 24.
    public static func acknowledged(generation: UInt8) -> UInt32 {
        (0x8 | UInt32(generation % generations)) << 24
    }

    /// The same bits' value that asks for a watched flow's refusal (the agent read a packet of
    /// the server that refuses it: a flow it no longer holds, or one judged under web shields
    /// since changed): REFUSED at its next packet where they meet WATCHED, nothing elsewhere.
    /// Written by name as the acknowledged bits are, so a late one that finds a new connection
    /// on the same ports (loopback reuses a closed connection's ports at once) resets nothing.
    public static let refusalAsked: UInt32 = 0x0100_0000
    /// The value that asks for the refusal of a connection whose hello the kernel let go and the
    /// agent, reading its copy, would not pass: REFUSED at its next packet where they meet the
    /// kernel's watched mark or PASSED of the rules' generation (the server's acknowledgement may
    /// have passed it in the kernel before the agent read the copy). Only the hello's judge
    /// writes it; a late one that finds a new connection of hers on the same ports resets it,
    /// and passes nothing.
    public static let helloRefusalAsked: UInt32 = 0x0200_0000
    /// DNS packets per second each filtered uid range may send to the queue (bursts of five times
    /// that, at most `highestRateLimit`); 0: no limit.
    public let rateLimit: Int
    /// Packets of unjudged connections per second each filtered uid range may send to the queue
    /// (bursts as above); 0: no limit.
    public let connectionRateLimit: Int
    /// Where iptables, ip6tables and their -restore are looked for.
    public let toolDirectories: [String]

    /// - Parameter mark: the byte of the DNS connections' mark, 1 to 241; the next thirteen values
    ///   mark the other connections' verdicts, and those opened from outside, and the one after
    ///   them the packets the DNS fast path let go untracked.
    public init(
        chain: String, queue: UInt16, mark: UInt8 = 0x53, rateLimit: Int = 200, connectionRateLimit: Int = 2000,
        toolDirectories: [String] = ["/usr/sbin", "/sbin", "/usr/bin"]
    ) {
        self.chain = chain
        self.queue = queue
        self.mark = UInt32(mark) << 16
        self.rateLimit = rateLimit
        self.connectionRateLimit = connectionRateLimit
        self.toolDirectories = toolDirectories
    }

    public var filterChain: String { chain + "-filter" }
    public var inputChain: String { chain + "-in" }

    /// The ruleset `iptables-restore --noflush` is given for one family.
    ///
    /// With `synFastPath`, a SYN without data passes in the kernel unless its destination is in
    /// the family's `shieldedAddressSet`; only those come to the queue.
    ///
    /// With `acknowledgementLog`, a watched flow's packets from the server are not queued but
    /// copied to that NFLOG group and let go: the agent reads the acknowledgement from the copy
    /// and sets the flow's acknowledged bits itself (`ConnectionMarks`), which make it PASSED at
    /// its next packet (see `acknowledgedMask`): a passed opening costs one queue trip, not two.
    /// The flow's own packets are compared with the opening, as before, until then.
    ///
    /// With `dnsFastPath` (the pinned programs of a `DNSFastPath`), a UDP question the kernel's
    /// table lets its user ask passes in the filter chain (its flow marked DNS, after the user's
    /// limit), and a reply on a DNS flow whose answers the table lets pass, in the input chain:
    /// neither comes to the queue.
    public func ruleset(
        for family: Family, owners: [ClosedRange<UInt32>], dohAddresses: [String], generation: UInt8 = 0,
        synFastPath: Bool = false, acknowledgementLog: UInt16? = nil, dnsFastPath: DNSFastPathPrograms? = nil
    ) -> String {
        var lines = ["*filter", ":\(chain) - [0:0]", ":\(filterChain) - [0:0]", ":\(inputChain) - [0:0]"]
        let mask = "0x" + String(Self.markMask, radix: 16)
        // What a verdict kept on the connection, or a SYN, sets: with the log, the acknowledged
        // bits too (cleared).
        let owned = acknowledgementLog == nil ? Self.markMask : Self.markMask | Self.acknowledgedMask
        let ownedText = "0x" + String(owned, radix: 16)
        let save = "-j CONNMARK --save-mark --nfmask \(ownedText) --ctmask \(ownedText)"
        let passed = markText(.passed, generation: generation)
        // A watched flow whose server's acknowledgement the agent read under this generation
        // (with the log): PASSED from its next packet, either way.
        func turn(_ asked: UInt32, into standing: Standing) -> String {
            "-p tcp -m connmark --mark 0x" + String(mark(.watched) | asked, radix: 16) + "/\(ownedText)"
                + " -j CONNMARK --set-xmark 0x" + String(mark(standing, generation: generation), radix: 16)
                + "/\(ownedText)"
        }
        // And one whose refusal the agent asked for: REFUSED, either way.
        var promote = [
            turn(Self.acknowledged(generation: generation), into: .passed), turn(Self.refusalAsked, into: .refused),
        ]
        if acknowledgementLog != nil, dnsFastPath?.hello != nil { promote += helloRefusals(generation: generation) }
        // A QUIC client packet, on any port and at any point of a flow: a long header with both
        // high bits (RTP, the other UDP protocols of calls and games, start 0b10) and a version,
        // in a datagram of at least 1,200 bytes. Checked in the kernel, before the fast path.
        let quic =
            family == .ipv4
            ? "-m length --length 1228:65535 -m u32 --u32 \"0>>22&0x3C@8>>24&0xC0=0xC0&&0>>22&0x3C@9=1:0xFFFFFFFF\""
            : "-m length --length 1248:65535 -m u32 --u32 \"48>>24&0xC0=0xC0&&49=1:0xFFFFFFFF\""
        // A SYN opens a new connection, whatever conntrack kept under its addresses and ports: a
        // flow the server ended with a reset is reused by a new SYN on the same ports, with the
        // old flow's mark (its PASSED once let a second hello by unjudged). The agent's byte goes.
        // Nothing below concerns a packet of someone not filtered on a flow the agent never
        // marked: it leaves at once (without this, the rules cost everyone's lookups a third).
        let unmarked = "-m connmark --mark 0x0/\(mask)"
        // A question of hers, or a loopback resolver's answer to one, the DNS fast path let go
        // untracked in the raw table (`untrackedRuleset`): nothing here is for it.
        if dnsFastPath != nil { lines.append("-A \(chain) -m mark --mark \(untrackedText) -j ACCEPT") }
        for others in Self.ranges(Self.others(than: owners)) {
            lines.append("-A \(chain) \(unmarked) -m owner --uid-owner \(others) -j RETURN")
        }
        // But not a pending flow's: a SYN sent again after one that carried data (TCP Fast Open)
        // the link lost is the same connection, its data gathered already (a child's attack,
        // 2026-12-01: the mark gone, her data after was judged as a stream's start). A new
        // connection on a pending flow's ports meets the agent's gathered bytes, and is refused.
        lines.append(
            "-A \(chain) -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connmark ! --mark \(markText(.pending)) "
                + "-j CONNMARK --set-xmark 0x0/\(ownedText)")
        if acknowledgementLog != nil { lines += promote.map { "-A \(chain) \($0)" } }
        // The fast path first for TCP, the bulk of what a judged flow sends.
        lines.append("-A \(chain) -p tcp -m connmark --mark \(passed) -j RETURN")
        for owner in Self.ranges(owners) {
            lines.append("-A \(chain) -p udp \(quic) -m owner --uid-owner \(owner) -j REJECT")
        }
        // Her questions over UDP next, the bulk of what she sends: none of the rules below
        // concerns them (they are for TCP, for verdicts come back through NF_REPEAT, which a
        // question never gets, and for flows judged as connections, which a flow to port 53
        // never is), and each rule a packet passes costs it (nft_do_chain was 7.8% of the
        // machine's time under her dnsperf, 1.6% under root's).
        let limit = Self.limit(rateLimit)
        for owner in Self.ranges(owners) {
            let match = "-A \(chain) -m owner --uid-owner \(owner)"
            lines.append("\(match) -p udp -m udp --dport 53 \(limit)-j \(filterChain)")
            lines.append("\(match) -p udp -m udp --dport 53 -j DROP")
        }
        // A UDP datagram longer than an Ethernet frame is a segmented send (UDP_SEGMENT): the
        // kernel rule above reads only its first segment, so it comes to the queue, which is given
        // each segment apart, even on a flow passed before (through the user's rules below).
        lines.append("-A \(chain) -m length --length 0:1500 -m connmark --mark \(passed) -j RETURN")
        // What a server of this machine sends back: over loopback, anything's; else a TCP
        // connection's only where a SYN from outside opened it (`inboundMark`); any other protocol's.
        lines.append("-A \(chain) -o lo -m conntrack --ctdir REPLY -j RETURN")
        lines.append("-A \(chain) -p tcp -m connmark --mark \(inboundText) -m conntrack --ctdir REPLY -j RETURN")
        lines.append("-A \(chain) ! -p tcp -m conntrack --ctdir REPLY -j RETURN")
        for text in [passed, markText(.pending), markText(.refused), markText(.watched)] {
            lines.append("-A \(chain) -m mark --mark \(text) \(save)")
        }
        for text in [passed, markText(.pending), markText(.watched)] {
            lines.append("-A \(chain) -m mark --mark \(text) -j RETURN")
        }
        // Not the reset itself, which the kernel sends on the refused connection (and so with its
        // mark) from OUTPUT: rejecting it would drop it, and the child's socket would hang.
        lines.append(
            "-A \(chain) -p tcp -m tcp ! --tcp-flags RST RST -m connmark --mark \(markText(.refused)) -j REJECT --reject-with tcp-reset"
        )
        lines.append("-A \(chain) -p udp -m connmark --mark \(markText(.refused)) -j REJECT")
        // A watched flow's segment that no socket sends (her process closed it at once: TCP sends
        // the opening again alone, with no owner to match below) is compared all the same.
        // And a pending one's: the rest of an opening sent after she closed the socket (her
        // pacing rate cut: the attack of 2026-12-01) is dropped there, no user to judge it for.
        for watched in [markText(.watched), kernelWatchedText, markText(.pending)] {
            lines.append(
                "-A \(chain) -p tcp -m owner ! --socket-exists -m connmark --mark \(watched) -j \(filterChain)")
        }
        // A connection passed under filters since changed, on which she only acknowledges (a
        // download, a stream: the server sends, her TCP sends ACKs, which pass below) would be
        // left streaming: each of its segments goes to the queue, which resets it. (Here, after
        // the verdict's own mark is kept, or the refusal's repeat would come back to the queue.)
        lines += earlierGenerations(generation, acknowledged: acknowledgementLog != nil).map {
            "-A \(chain) -p tcp -m connmark --mark \($0) -j \(filterChain)"
        }
        // A TCP segment with no data and no SYN (an ACK) names nothing: it passes in the kernel
        // and the flow stays unjudged until its first data comes to the queue. "No data" is
        // exact: the IP length is the headers' length, for each TCP header length (no IP
        // options). SYNs still come: an address learned for a shielded name is refused there.
        // These return from this chain, not from the filter chain below: a return from there
        // would come back here to the user's last rule, a DROP, and the handshake's last ACK
        // would never reach a server that speaks first (SSH, mail, FTP).
        for words in 5...15 {
            let match = Self.noData(family, tcpWords: words, flags: "&0x02=0")
            lines.append("-A \(chain) -p tcp -m u32 --u32 \"\(match)\" -j RETURN")
        }
        // A SYN without data (no TCP Fast Open) names nothing either; it comes to the queue only
        // to be refused when it goes to an address learned for a shielded name. With the fast
        // path those addresses are in a kernel set, kept by the agent as it learns them, each for
        // as long as it keeps it: a SYN to any other passes here, without a trip. (Not DNS's nor
        // DNS over TLS's ports, whose rules are the filter chain's; the agent puts the known DoH
        // servers' addresses in the set for good, so that theirs are refused there too.)
        if synFastPath {
            for words in 5...15 {
                let match = Self.noData(family, tcpWords: words, flags: "&0x12=0x02")
                lines.append(
                    "-A \(chain) -p tcp -m u32 --u32 \"\(match)\" -m multiport ! --dports 53,853 "
                        + "-m set ! --match-set \(shieldedAddressSet(family)) dst -j RETURN")
            }
        }
        let connectionLimit = Self.limit(connectionRateLimit)
        lines += helloRules(
            owners: owners, program: dnsFastPath?.hello, log: acknowledgementLog, limit: connectionLimit)
        for owner in Self.ranges(owners) {
            let match = "-A \(chain) -m owner --uid-owner \(owner)"
            lines.append("\(match) -p tcp -m tcp --dport 53 \(limit)-j \(filterChain)")
            lines.append("\(match) -p tcp -m tcp --dport 53 -j DROP")
            lines.append("\(match) \(connectionLimit)-j \(filterChain)")
            lines.append("\(match) -j DROP")
        }
        // A question to port 53 on a UDP flow a filtered user's question marked (she sent from
        // these ports and closed her socket; conntrack keeps the flow for 30 s or more) is
        // someone else's now: the mark goes, or the reply would come to the queue and be dropped
        // as answering no filtered user (a child could make others' lookups fail by sending from
        // the ports they will use). Here, after the users' rules, which a filtered user's packet
        // never leaves: her own questions never take the mark off, not even for the moment until
        // the filter chain sets it again. A reply on another CPU in that moment met no mark at
        // the rule that passes it in the kernel and found it at the next, the queue's, which
        // knew no question of hers the fast path had let through (96 of 118,655 lookups lost
        // under dnsperf); before the fast path, such a reply passed unjudged.
        lines.append(
            "-A \(chain) -p udp -m udp --dport 53 -m connmark --mark \(markText(.dns)) -j CONNMARK --set-xmark 0x0/\(ownedText)"
        )
        let queue = "-j NFQUEUE --queue-num \(queue)"
        lines.append("-A \(filterChain) -p udp -m udp --dport 53 -j CONNMARK --set-xmark \(markText(.dns))")
        lines.append("-A \(filterChain) -p tcp -m tcp --dport 53 -j CONNMARK --set-xmark \(markText(.dns))")
        lines.append("-A \(filterChain) -p udp -m udp --dport 53 \(queue)")
        lines.append("-A \(filterChain) -p tcp -m tcp --dport 53 \(queue)")
        lines.append("-A \(filterChain) -p tcp -m tcp --dport 853 -j REJECT --reject-with tcp-reset")
        lines.append("-A \(filterChain) -p udp -m udp --dport 853 -j REJECT")
        for address in dohAddresses where address.contains(":") == (family == .ipv6) {
            lines.append("-A \(filterChain) -d \(address) -p tcp -m tcp --dport 443 -j REJECT --reject-with tcp-reset")
            lines.append("-A \(filterChain) -d \(address) -p udp -m udp --dport 443 -j REJECT")
        }
        lines.append("-A \(filterChain) -p udp -m udp --dport 443 -j REJECT")
        lines.append("-A \(filterChain) -j CONNMARK --restore-mark --nfmask \(mask) --ctmask \(mask)")
        lines.append("-A \(filterChain) \(queue)")
        lines += inputRules(
            family: family, generation: generation, promote: promote, acknowledgementLog: acknowledgementLog,
            dnsFastPath: dnsFastPath)
        lines.append("COMMIT")
        return lines.joined(separator: "\n") + "\n"
    }
}
