// The DNS fast path's part in the raw table: her questions the kernel's table lets her ask, and
// their answers, go untracked.
extension Firewall {
    /// The raw table's chain for what leaves (jumped to from its OUTPUT): her questions, and the
    /// answers a resolver on loopback sends.
    public var untrackedChain: String { chain + "-raw" }
    /// The raw table's chain for what comes in from elsewhere (jumped to from its PREROUTING).
    public var untrackedInputChain: String { chain + "-rawin" }
    /// What both chains send a packet they let go untracked to: marked, untracked, accepted.
    var untrackingChain: String { chain + "-fast" }

    /// The mark's value (within `markMask`) of a packet the DNS fast path let go untracked (a
    /// packet's, never a connection's: such a packet has none): the filter table's chains accept
    /// it at their first rule.
    public var untrackedMark: UInt32 { mark &+ (0x06_0000 &+ UInt32(Self.generations) << 16) }

    /// The same as a rule writes it (value/mask).
    var untrackedText: String { "0x" + String(untrackedMark, radix: 16) + "/0x" + String(Self.markMask, radix: 16) }

    /// The raw table's part, which runs before connection tracking. With the DNS fast path's
    /// programs, a question of hers that the `question` program matches (after her limit: the
    /// same as her queued questions', counted apart) is marked, left untracked and accepted, and
    /// so is the answer the `answer` program matches: the answer to that very question (its flow
    /// and id, once), a name the table lets pass, nothing but its addresses. The rest goes on, is
    /// tracked, and meets the filter table's rules as before: a question to the queue, an answer
    /// to a question the kernel let go that the program did not pass makes a flow of its own there
    /// and is dropped (`inputRules`). Tracking her flows cost her lookups more than the rules
    /// (dnsperf in a namespace: no rules 149.5–210.2 k q/s; one conntrack rule 127.9–177.7 k).
    /// An answer from a resolver on loopback is judged as it leaves (in OUTPUT): conntrack has it
    /// by the time it comes in. Empty without the programs.
    public func untrackedRuleset(
        for family: Family, owners: [ClosedRange<UInt32>], programs: DNSFastPathPrograms?
    ) -> String {
        var lines = [
            "*raw", ":\(untrackedChain) - [0:0]", ":\(untrackedInputChain) - [0:0]", ":\(untrackingChain) - [0:0]",
        ]
        if let programs {
            let limit = Self.limit(rateLimit)
            // (Her questions only with the program that reads them again: `copiedQuestionRules`.)
            for owner in Self.ranges(owners) where programs.asked != nil {
                lines.append(
                    "-A \(untrackedChain) -p udp -m udp --dport 53 -m owner --uid-owner \(owner) \(limit)"
                        + "-m bpf --object-pinned \(programs.question) -j \(untrackingChain)")
            }
            lines.append(
                "-A \(untrackedChain) -o lo -p udp -m udp --sport 53 -m bpf --object-pinned \(programs.answer) "
                    + "-j \(untrackingChain)")
            // From elsewhere: untracked, not marked (a mark before routing is one policy routing
            // may read); the input chain accepts an untracked answer.
            lines.append(
                "-A \(untrackedInputChain) ! -i lo -p udp -m udp --sport 53 -m bpf --object-pinned \(programs.answer) "
                    + "-j CT --notrack")
            lines.append("-A \(untrackingChain) -j MARK --set-xmark \(untrackedText)")
            lines.append("-A \(untrackingChain) -j CT --notrack")
            lines.append("-A \(untrackingChain) -j ACCEPT")
        }
        lines.append("COMMIT")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The mangle table's part (in `helloChain`, jumped to first from its OUTPUT), which runs after
    /// the raw table's and before the filter table's: each UDP question of hers has its bytes
    /// copied into the packet (`CHECKSUM --checksum-fill` copies pages it shares with its sender),
    /// so what the queue reads, or the kernel reads again, is what leaves; and a question the raw
    /// table let go untracked is read again (`asked`, the program's path): still the question let
    /// go, it goes, else it is dropped. A question sent with `MSG_ZEROCOPY` from a page she
    /// rewrote at once was read as an allowed name and sent as a shielded one (the attack on the
    /// installed agent, 2026-12-01: 52 of 300 reached her resolver a router away, 29 of 200 on
    /// loopback; by hand, with a string match after the copy, none of 300; the queue's reading
    /// let 2 of 300 through while only the untracked ones were copied).
    func copiedQuestionRules(owners: [ClosedRange<UInt32>], asked: String?) -> [String] {
        var rules = Self.ranges(owners).map {
            "-A \(helloChain) -p udp -m udp --dport 53 -m owner --uid-owner \($0) -j CHECKSUM --checksum-fill"
        }
        if let asked {
            let question = "-A \(helloChain) -p udp -m udp --dport 53 -m mark --mark \(untrackedText)"
            rules += ["\(question) -m bpf --object-pinned \(asked) -j RETURN", "\(question) -j DROP"]
        }
        return rules
    }

    /// The raw table's jumps to the chains above: UDP only.
    var untrackedJumps: [(hook: String, target: String)] {
        [("OUTPUT", untrackedChain), ("PREROUTING", untrackedInputChain)]
    }
}
