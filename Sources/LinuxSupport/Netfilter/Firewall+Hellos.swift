// The hello fast path's rules.
extension Firewall {
    /// Her first data on a flow never marked, when it is one whole TLS hello the kernel's table
    /// lets her send to that server (`program`: `DNSFastPath`'s `hello`), is let go here, its flow
    /// WATCHED and a copy in the log group `log` (the server's acknowledgements' too), where
    /// the agent judges it as it would a queued one; past her limit of unjudged connections
    /// (`limit`, the rule's text), the queue's as before. The packet's mark carries the match
    /// through the three rules after (a verdict's WATCHED was returned before them). None without
    /// the program or the log.
    func helloRules(owners: [ClosedRange<UInt32>], program: String?, log: UInt16?, limit: String) -> [String] {
        guard let program, let group = log else { return [] }
        let owned = "0x" + String(Self.markMask | Self.acknowledgedMask, radix: 16)
        let watched = "0x" + String(mark(.watched), radix: 16) + "/\(owned)"
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
}
