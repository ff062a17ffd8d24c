// The input chain's rules: the servers' packets on flows the agent marked.
extension Firewall {
    /// The input chain (`inputChain`) of `ruleset`, whose family, generation, promotions of watched flows
    /// (`promote`), acknowledgement log and DNS fast path it is given.
    func inputRules(
        family: Family, generation: UInt8, promote: [String], acknowledgementLog: UInt16?,
        dnsFastPath: DNSFastPathPrograms?
    ) -> [String] {
        var rules: [String] = []
        let mask = "0x" + String(Self.markMask, radix: 16)
        let owned = acknowledgementLog == nil ? Self.markMask : Self.markMask | Self.acknowledgedMask
        let ownedText = "0x" + String(owned, radix: 16)
        let save = "-j CONNMARK --save-mark --nfmask \(ownedText) --ctmask \(ownedText)"
        let passed = markText(.passed, generation: generation)
        let unmarked = "-m connmark --mark 0x0/\(mask)"
        let queued = "-j NFQUEUE --queue-num \(self.queue)"
        // A watched flow's packets from the server: the agent waits for the acknowledgement of the
        // opening it judged, then marks the flow through NF_REPEAT (passed or refused).
        // (Only the reply direction: over loopback the client's own packets come in here too.)
        let reply = "-p tcp -m conntrack --ctdir REPLY"
        if dnsFastPath != nil {
            // What the DNS fast path let go untracked in the raw table: a question or answer over
            // loopback (marked), an answer from elsewhere (untracked; as is one whose tracking
            // something else turned off, which would pass this chain's end all the same).
            rules.append("-A \(inputChain) -m mark --mark \(untrackedText) -j ACCEPT")
            rules.append("-A \(inputChain) -p udp -m udp --sport 53 -m conntrack --ctstate UNTRACKED -j ACCEPT")
        }
        // A TCP connection opened from outside, not over loopback, is marked so (`inboundMark`):
        // what a server of this machine sends on it leaves as a reply; nothing here concerns it.
        rules.append(
            "-A \(inputChain) ! -i lo -p tcp -m tcp --syn -m conntrack --ctstate NEW -j CONNMARK --set-xmark "
                + "0x\(String(inboundMark, radix: 16))/\(ownedText)")
        rules.append("-A \(inputChain) -m connmark --mark \(inboundText) -j RETURN")
        if dnsFastPath != nil {
            // An answer that starts a flow: one to a question the kernel let go untracked that
            // the `answer` program did not pass (an alias, a second copy, one after its entry
            // went), or to no question at all. Never passed unjudged: dropped, and her resolver
            // asks again, through the queue if the program took the name off its table. (Not the
            // NXDOMAIN the agent writes over her question, which comes in on the question's own
            // new flow, marked DNS.)
            rules.append(
                "-A \(inputChain) -p udp -m udp --sport 53 ! --dport 53 -m conntrack --ctstate NEW \(unmarked) -j DROP")
        }
        // Every other rule of the input chain is for a flow the agent marked.
        rules.append("-A \(inputChain) \(unmarked) -j RETURN")
        let dnsMark = "-m connmark --mark \(markText(.dns))"
        if acknowledgementLog != nil { rules += promote.map { "-A \(inputChain) \($0)" } }
        for text in [passed, markText(.refused)] {
            rules.append("-A \(inputChain) \(reply) -m mark --mark \(text) \(save)")
            rules.append("-A \(inputChain) \(reply) -m mark --mark \(text) -j RETURN")
        }
        let restore = "-j CONNMARK --restore-mark --nfmask \(mask) --ctmask \(mask)"
        if let group = acknowledgementLog {
            rules.append(
                "-A \(inputChain) \(reply) -m connmark --mark \(markText(.watched)) -j NFLOG --nflog-group \(group) "
                    + "--nflog-threshold 1")
            rules += helloAcknowledgementRules(
                program: dnsFastPath?.hello == nil ? nil : dnsFastPath?.acknowledged, log: group,
                passed: mark(.passed, generation: generation))
        } else {
            rules.append("-A \(inputChain) \(reply) -m connmark --mark \(markText(.watched)) \(restore)")
            rules.append("-A \(inputChain) \(reply) -m mark --mark \(markText(.watched)) \(queued)")
        }
        // A pending flow's packets from the server: what it sends before her opening is all here
        // and judged (a server that speaks first, to a shared address) is dropped by the agent.
        // Those without data (its SYN-ACK, its ACKs) pass here, by the same exact-length match.
        for words in 5...15 {
            let noData = Self.noData(family, tcpWords: words, flags: nil)
            rules.append(
                "-A \(inputChain) \(reply) -m connmark --mark \(markText(.pending)) -m u32 --u32 \"\(noData)\" -j RETURN"
            )
        }
        rules.append("-A \(inputChain) \(reply) -m connmark --mark \(markText(.pending)) \(restore)")
        rules.append("-A \(inputChain) \(reply) -m mark --mark \(markText(.pending)) \(queued)")
        // Replies come to the queue only as far as judging needs: a server of the child's that
        // answers one question 80,000 times a second costs the agent what a few thousand cost.
        // Per flow (a socket's questions to a server) no more than its user may ask, then per
        // server five times that.
        let perFlow = min(rateLimit, 1_000_000)
        let perServer = min(rateLimit * 5, 1_000_000)
        // No limit on the questions (0): none on the answers either.
        let limits =
            rateLimit == 0 ? [] : [(perFlow, "srcip,srcport,dstip,dstport", "dnsf"), (perServer, "srcip", "dnss")]
        for (rate, mode, name) in limits {
            for transport in ["udp", "tcp"] {
                rules.append(
                    "-A \(inputChain) -p \(transport) -m \(transport) --sport 53 \(dnsMark) -m hashlimit "
                        + "--hashlimit-above \(rate)/sec --hashlimit-burst \(rate * 5) --hashlimit-mode \(mode) "
                        + "--hashlimit-name \(chain.prefix(10))-\(name) -j DROP")
            }
        }
        rules.append("-A \(inputChain) -p udp -m udp --sport 53 -m connmark --mark \(markText(.dns)) \(queued)")
        rules.append("-A \(inputChain) -p tcp -m tcp --sport 53 -m connmark --mark \(markText(.dns)) \(queued)")
        return rules
    }
}
