// The hello fast path's rules.
extension Firewall {
    /// Her first data on a flow never marked, when it is one whole TLS hello the kernel's table
    /// lets her send to that server (`program`: `DNSFastPath`'s `hello`), is let go here, its flow
    /// watched by the kernel (`kernelWatchedMark`) and a copy in the log group `log` (the server's
    /// acknowledgements' too), where the agent judges it as it would a queued one; past her limit
    /// of unjudged connections (`limit`, the rule's text), the queue's as before. The packet's
    /// mark carries the match through the three rules after. None without the program or the log.
    func helloRules(owners: [ClosedRange<UInt32>], program: String?, log: UInt16?, limit: String) -> [String] {
        guard let program, let group = log else { return [] }
        let owned = "0x" + String(Self.markMask | Self.acknowledgedMask, radix: 16)
        let watched = "0x" + String(kernelWatchedMark, radix: 16) + "/\(owned)"
        var lines = Self.ranges(owners).map { owner in
            "-A \(chain) -m owner --uid-owner \(owner) -p tcp -m connmark --mark 0x0/\(owned) "
                + "-m bpf --object-pinned \(program) \(limit)-j MARK --set-xmark \(watched)"
        }
        lines.append("-A \(chain) -p tcp -m mark --mark \(watched) -j NFLOG --nflog-group \(group) --nflog-threshold 1")
        lines.append(
            "-A \(chain) -p tcp -m mark --mark \(watched) -j CONNMARK --save-mark --nfmask \(owned) --ctmask \(owned)")
        lines.append("-A \(chain) -p tcp -m mark --mark \(watched) -j ACCEPT")
        return lines
    }

    /// A flow whose hello the kernel let go, when the agent asked for its refusal (by its
    /// addresses and ports): REFUSED from its next packet; when the agent refused its hello's copy,
    /// even where the server's acknowledgement passed it already. (Rules of both chains, after
    /// their `-A CHAIN`.)
    func helloRefusals(generation: UInt8) -> [String] {
        let owned = "0x" + String(Self.markMask | Self.acknowledgedMask, radix: 16)
        let asked = [
            kernelWatchedMark | Self.refusalAsked, kernelWatchedMark | Self.helloRefusalAsked,
            mark(.passed, generation: generation) | Self.helloRefusalAsked,
        ]
        return asked.map {
            "-p tcp -m connmark --mark 0x\(String($0, radix: 16))/\(owned) "
                + "-j CONNMARK --set-xmark 0x\(String(mark(.refused), radix: 16))/\(owned)"
        }
    }

    /// The input chain's part: the server's packets on a flow whose hello the kernel let go are
    /// copied to the log as a watched flow's are, and the one that acknowledges the whole hello
    /// (`program`: `DNSFastPath`'s `acknowledged`, which knows each such hello's end) makes the
    /// flow PASSED of the rules' generation (`passed`), on that very packet. None without the
    /// program.
    func helloAcknowledgementRules(program: String?, log group: UInt16, passed: UInt32) -> [String] {
        guard let program else { return [] }
        let owned = "0x" + String(Self.markMask | Self.acknowledgedMask, radix: 16)
        let reply = "-A \(inputChain) -p tcp -m conntrack --ctdir REPLY -m connmark --mark \(kernelWatchedText)"
        return [
            "\(reply) -j NFLOG --nflog-group \(group) --nflog-threshold 1",
            "\(reply) -m bpf --object-pinned \(program) -j CONNMARK --set-xmark 0x\(String(passed, radix: 16))/\(owned)",
        ]
    }

    /// The mangle table's chain of the hello fast path (jumped to first from its OUTPUT).
    public var helloChain: String { chain + "-hello" }

    /// The mangle table's part, which runs before the filter table's: each packet of hers long
    /// enough to hold a whole hello, on a flow never marked, has its checksum filled in, which
    /// copies its bytes out of any page it shares (a file sent with `sendfile`, a buffer of hers)
    /// into the packet: what the `hello` program reads after, and the copy the agent judges, are
    /// then what is sent. (A hello sent from a file she rewrote at once was read as one name and
    /// sent as another: the attack on the installed agent, 2026-11-30.) Without the hello fast
    /// path, only her questions' (`copiedQuestionRules`).
    public func helloRuleset(
        for family: Family, owners: [ClosedRange<UInt32>], hello: Bool, asked: String? = nil
    ) -> String {
        var lines = ["*mangle", ":\(helloChain) - [0:0]"] + copiedQuestionRules(owners: owners, asked: asked)
        if hello {
            let owned = "0x" + String(Self.markMask | Self.acknowledgedMask, radix: 16)
            // The IP and TCP headers, and the least a ClientHello is (record, handshake, fields).
            let least = (family == .ipv4 ? 20 : 40) + 20 + 47
            for owner in Self.ranges(owners) {
                lines.append(
                    "-A \(helloChain) -m owner --uid-owner \(owner) -p tcp -m connmark --mark 0x0/\(owned) "
                        + "-m length --length \(least):65535 -j CHECKSUM --checksum-fill")
            }
        }
        lines.append("COMMIT")
        return lines.joined(separator: "\n") + "\n"
    }
}
