import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

@Suite struct AgentConfigurationTests {
    @Test func missingDefaultFileMeansDefaults() throws {
        let configuration = try AgentConfiguration.load(path: "/nonexistent/screentimed.json", required: false)
        #expect(configuration == AgentConfiguration())
        #expect(configuration.guardianGroup == "screentime-guardians")
    }

    /// The manual page and `--help` are made from `keys`: it names exactly the keys the decoder
    /// reads, each once, and each default is what a configuration without the key gets.
    @Test func theDocumentedKeysAreTheDecodedOnes() throws {
        let documented = AgentConfiguration.keys.map(\.key)
        #expect(Set(documented).count == documented.count)
        #expect(documented.sorted() == AgentConfiguration.decodedKeys.sorted())
        let defaults = try JSONSerialization.jsonObject(with: JSONEncoder().encode(AgentConfiguration()))
        let values = try #require(defaults as? [String: Any])
        for entry in AgentConfiguration.keys {
            let value = try #require(values[entry.key], "\(entry.key) is encoded")
            let text =
                if let list = value as? [String] {
                    "[" + list.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
                } else if let flag = value as? Bool {
                    flag ? "true" : "false"
                } else {
                    "\(value)"
                }
            #expect(text == entry.default, "\(entry.key): documented \(entry.default), is \(text)")
        }
    }

    @Test func missingNamedFileIsAnError() {
        #expect(throws: AgentError.self) { try AgentConfiguration.load(path: "/nonexistent/x.json", required: true) }
    }

    @Test func keysAreReadAndTyposRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/c.json"
        try #"{"guardianGroup":"parents","adminGroups":["wheel"]}"#.write(
            toFile: path, atomically: true, encoding: .utf8)
        let configuration = try AgentConfiguration.load(path: path, required: true)
        #expect(configuration.guardianGroup == "parents")
        #expect(configuration.adminGroups == ["wheel"])
        #expect(configuration.socket == AgentConfiguration().socket)

        try #"{"guardianGroop":"parents"}"#.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try AgentConfiguration.load(path: path, required: true)
            Issue.record("a typo was accepted")
        } catch {
            #expect(error.message.contains("unknown key 'guardianGroop'"))
        }
        try #"{"guardianGroup": 7}"#.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: AgentError.self) { try AgentConfiguration.load(path: path, required: true) }
        try "not json".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: AgentError.self) { try AgentConfiguration.load(path: path, required: true) }
    }

    @Test func theDNSQueueAndFirewallChainAreChecked() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/c.json"
        try #"{"dnsQueue": 4242, "firewallChain": "st_kids-1", "freezer": "v1"}"#.write(
            toFile: path, atomically: true, encoding: .utf8)
        let configuration = try AgentConfiguration.load(path: path, required: true)
        #expect(configuration.dnsQueue == 4242 && configuration.firewallChain == "st_kids-1")
        #expect(configuration.freezer == .v1)
        #expect(AgentConfiguration().dnsQueue == 53 && AgentConfiguration().firewallChain == "screentime")
        #expect(AgentConfiguration().freezer == .auto)
        let refused: [(String, String)] = [
            (#"{"dnsQueue": 70000}"#, "0 to 65535"), (#"{"dnsQueue": -1}"#, "0 to 65535"),
            (#"{"firewallChain": "a b"}"#, "'firewallChain'"), (#"{"firewallChain": "-x"}"#, "'firewallChain'"),
            (#"{"firewallChain": "abcdefghijklmnopqrstuv"}"#, "'firewallChain'"),
            (#"{"firewallChain": ""}"#, "'firewallChain'"),
            (#"{"freezer": "v3"}"#, "'freezer' is one of auto, v2, v1, signal, not 'v3'"),
            (#"{"freezer": 2}"#, "'freezer'"),
            (#"{"dnsRateLimit": 10001}"#, "'dnsRateLimit' is from 1 to 10000 packets a second"),
            (#"{"dnsRateLimit": -1}"#, "'dnsRateLimit'"),
            (#"{"connectionRateLimit": 100000}"#, "'connectionRateLimit' is from 1 to 10000 packets a second"),
        ]
        for (json, reason) in refused {
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            let error = #expect(throws: AgentError.self) { try AgentConfiguration.load(path: path, required: true) }
            #expect(error?.message.contains(reason) == true, "\(json): \(error?.message ?? "accepted")")
        }
    }

    /// The rate limits the kernel's limit match takes: up to 10,000 a second, bursts of five
    /// times that but at most 10,000; 0 is no limit, before the queue or on the answers.
    @Test func rateLimitsAreWhatTheKernelTakes() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/c.json"
        try #"{"dnsRateLimit": 0, "connectionRateLimit": 10000}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = try AgentConfiguration.load(path: path, required: true)
        #expect(configuration.dnsRateLimit == 0 && configuration.connectionRateLimit == 10000)
        let rules = Firewall(chain: "st", queue: 53, rateLimit: 0, connectionRateLimit: 10000)
            .ruleset(for: .ipv4, owners: [1001...1001], dohAddresses: [])
            .split(separator: "\n")
        #expect(rules.contains("-A st -m owner --uid-owner 1001 -p udp -m udp --dport 53 -j st-filter"))
        #expect(!rules.contains { $0.contains("hashlimit") })
        #expect(
            rules.contains(
                "-A st -m owner --uid-owner 1001 -m limit --limit 10000/sec --limit-burst 10000 -j st-filter"))
        let capped = Firewall(chain: "st", queue: 53, rateLimit: 2001).ruleset(
            for: .ipv4, owners: [7...7], dohAddresses: [])
        #expect(capped.contains("--dport 53 -m limit --limit 2001/sec --limit-burst 10000 -j st-filter"))
        #expect(capped.contains("--hashlimit-above 2001/sec --hashlimit-burst 10005 "))
    }

    @Test func theDoHListSeparatesNamesFromAddresses() {
        let (names, addresses) = DomainShield.parseBypass(
            "# comment\ndns.google  # Google\n8.8.8.8\n\n2001:4860:4860::8888\n  cloudflare-dns.com\n1.2.3\n")
        #expect(names == ["dns.google", "cloudflare-dns.com", "1.2.3"])
        #expect(addresses == ["8.8.8.8", "2001:4860:4860::8888"])
    }

    @Test func theRulesetSendsEachUserToTheQueueAndRefusesTheWaysAround() {
        let firewall = Firewall(chain: "screentime", queue: 53)
        let v4 = firewall.ruleset(
            for: .ipv4, owners: [1002...1002, 1001...1001, 1002...1002, 100_000...165_535],
            dohAddresses: ["8.8.8.8", "2001:db8::1"])
        let lines = v4.split(separator: "\n").map(String.init)
        // A child's subordinate uids are the child (finding 5 of the hardening issue); each range
        // has its own limit before the queue, then the rest of its traffic goes to the filter.
        let owners = lines.filter { $0.contains("--uid-owner") }
        for owner in ["1001", "1002", "100000-165535"] {
            let match = "-A screentime -m owner --uid-owner \(owner)"
            #expect(
                owners.filter { $0.hasPrefix(match + " ") } == [
                    "\(match) -p udp -m udp --dport 53 -m limit --limit 200/sec --limit-burst 1000 -j screentime-filter",
                    "\(match) -p udp -m udp --dport 53 -j DROP",
                    "\(match) -p tcp -m tcp --dport 53 -m limit --limit 200/sec --limit-burst 1000 -j screentime-filter",
                    "\(match) -p tcp -m tcp --dport 53 -j DROP",
                    "\(match) -m limit --limit 2000/sec --limit-burst 10000 -j screentime-filter", "\(match) -j DROP",
                ])
        }
        #expect(owners.count == 24)
        // First, someone not filtered (the uids around the filtered ranges) on a flow the agent
        // never marked leaves at once: nothing below concerns them.
        #expect(
            Array(lines[4...6])
                == ["0-1000", "1003-99999", "165536-4294967294"].map {
                    "-A screentime -m connmark --mark 0x0/0xff0000 -m owner --uid-owner \($0) -j RETURN"
                })
        // QUIC is refused in the kernel first, for each range; then a judged connection never
        // reaches the queue again, nor what a local server sends back; a verdict come back
        // through NF_REPEAT is kept by the connection; a refused one is reset, but not its own reset.
        // A SYN clears the agent's byte first: a new connection on a reused flow's ports is judged.
        #expect(
            lines[7]
                == "-A screentime -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connmark ! --mark 0x540000/0xff0000 -j CONNMARK --set-xmark 0x0/0xff0000"
        )
        // Someone else's question on a UDP flow a filtered user's question marked takes the mark
        // off (her answer is not queued and dropped), after the users' rules, which her own
        // questions never leave: a reply to one of hers always finds the flow marked.
        let main = lines.filter { $0.hasPrefix("-A screentime ") }
        #expect(
            main.last
                == "-A screentime -p udp -m udp --dport 53 -m connmark --mark 0x530000/0xff0000 -j CONNMARK --set-xmark 0x0/0xff0000"
        )
        #expect(main.dropLast().last == "-A screentime -m owner --uid-owner 100000-165535 -j DROP")
        #expect(lines[8] == "-A screentime -p tcp -m connmark --mark 0x560000/0xff0000 -j RETURN")
        #expect(lines[9].hasPrefix("-A screentime -p udp -m length --length 1228:65535 -m u32 --u32"))
        #expect(lines[9].hasSuffix("-m owner --uid-owner 1001 -j REJECT"))
        // Then each user's questions over UDP, the bulk of what she sends: none of the rules
        // below is for them, and each rule passed costs.
        #expect(
            Array(lines[12...17])
                == ["1001", "1002", "100000-165535"].flatMap { owner in
                    let match = "-A screentime -m owner --uid-owner \(owner) -p udp -m udp --dport 53"
                    return [
                        "\(match) -m limit --limit 200/sec --limit-burst 1000 -j screentime-filter", "\(match) -j DROP",
                    ]
                })
        // …but a UDP datagram longer than a frame (sent in segments) is judged, segment by segment.
        #expect(lines[18] == "-A screentime -m length --length 0:1500 -m connmark --mark 0x560000/0xff0000 -j RETURN")
        // What a server of this machine sends back leaves: over loopback, and a TCP connection's
        // only where a SYN from outside opened it (conntrack's direction alone can be turned).
        #expect(
            Array(lines[19...21]) == [
                "-A screentime -o lo -m conntrack --ctdir REPLY -j RETURN",
                "-A screentime -p tcp -m connmark --mark 0x600000/0xff0000 -m conntrack --ctdir REPLY -j RETURN",
                "-A screentime ! -p tcp -m conntrack --ctdir REPLY -j RETURN",
            ])
        // An ACK without data is never queued: exactly the headers' length, no SYN. It returns
        // from the main chain, ahead of the users' rules for all but their UDP questions (whose
        // last one drops what is left).
        let ack = "-A screentime -p tcp -m u32 --u32 \"0>>24=0x45&&0&0xFFFF=52&&32>>28=8&&32>>16&0x02=0\" -j RETURN"
        let firstOwnerRule = lines.firstIndex {
            $0.hasPrefix("-A screentime -m owner --uid-owner") && !$0.contains("-p udp -m udp --dport 53")
        }
        #expect(lines.firstIndex(of: ack).map { index in firstOwnerRule.map { index < $0 } ?? false } == true)
        #expect(!lines.contains { $0.hasPrefix("-A screentime-filter -p tcp -m u32") })
        #expect(
            lines.contains(
                "-A screentime -m mark --mark 0x550000/0xff0000 -j CONNMARK --save-mark --nfmask 0xff0000 --ctmask 0xff0000"
            ))
        #expect(
            lines.contains(
                "-A screentime -p tcp -m tcp ! --tcp-flags RST RST -m connmark --mark 0x550000/0xff0000 -j REJECT --reject-with tcp-reset"
            ))
        #expect(lines.contains("-A screentime -m mark --mark 0x540000/0xff0000 -j RETURN"))
        // A watched flow (its opening passed, not yet acknowledged) keeps coming to the queue.
        #expect(lines.contains("-A screentime -m mark --mark 0x5e0000/0xff0000 -j RETURN"))
        #expect(!lines.contains { $0.contains("-m connmark --mark 0x5e0000") && $0.hasSuffix("-j RETURN") })
        // A connection passed under another generation sends every segment to the filter chain,
        // its ACKs too (else a stream passed before a shield went on): after the rules that keep
        // a verdict's mark and reset a refused one, before the ACKs' return.
        func passed(_ generation: UInt8) -> String {
            "0x" + String(firewall.mark(.passed, generation: generation), radix: 16) + "/0xff0000"
        }
        let earlier = (1..<Firewall.generations).map {
            "-A screentime -p tcp -m connmark --mark \(passed($0)) -j screentime-filter"
        }
        let earlierAt = earlier.map { lines.firstIndex(of: $0) }
        #expect(earlierAt.allSatisfy { $0 != nil }, "\(earlier)")
        #expect(!lines.contains { $0.contains("--mark \(passed(0)) -j screentime-filter") })
        let refusedReset = lines.firstIndex {
            $0.hasSuffix("-j REJECT --reject-with tcp-reset") && $0.contains("connmark")
        }
        #expect(
            earlierAt.compactMap { $0 }.allSatisfy {
                $0 > (refusedReset ?? .max) && $0 < (lines.firstIndex(of: ack) ?? -1)
            })
        // The rest of each connection's opening goes to the queue, with its standing restored.
        let filterTail = lines.filter { $0.hasPrefix("-A screentime-filter") }.suffix(2)
        #expect(
            Array(filterTail) == [
                "-A screentime-filter -j CONNMARK --restore-mark --nfmask 0xff0000 --ctmask 0xff0000",
                "-A screentime-filter -j NFQUEUE --queue-num 53",
            ])
        // The input chain's rules are all for flows the agent marked: the others leave first,
        // after a TCP connection opened from outside (not over loopback) is marked so.
        #expect(
            Array(lines.filter { $0.hasPrefix("-A screentime-in ") }.prefix(3)) == [
                "-A screentime-in ! -i lo -p tcp -m tcp --syn -m conntrack --ctstate NEW -j CONNMARK --set-xmark 0x600000/0xff0000",
                "-A screentime-in -m connmark --mark 0x600000/0xff0000 -j RETURN",
                "-A screentime-in -m connmark --mark 0x0/0xff0000 -j RETURN",
            ])
        // The server's packets of a watched flow come too, and its verdict is kept on the flow.
        #expect(
            Array(lines.filter { $0.hasPrefix("-A screentime-in -p tcp") }.prefix(6)) == [
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m mark --mark 0x560000/0xff0000 -j CONNMARK --save-mark --nfmask 0xff0000 --ctmask 0xff0000",
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m mark --mark 0x560000/0xff0000 -j RETURN",
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m mark --mark 0x550000/0xff0000 -j CONNMARK --save-mark --nfmask 0xff0000 --ctmask 0xff0000",
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m mark --mark 0x550000/0xff0000 -j RETURN",
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m connmark --mark 0x5e0000/0xff0000 -j CONNMARK --restore-mark --nfmask 0xff0000 --ctmask 0xff0000",
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m mark --mark 0x5e0000/0xff0000 -j NFQUEUE --queue-num 53",
            ])
        #expect(firewall.standing(ofMark: 0x015E_0001, generation: 3) == .watched)
        // Another generation of PASSED: connections passed before are no longer on the fast path.
        let next = firewall.ruleset(for: .ipv4, owners: [1001...1001], dohAddresses: [], generation: 1)
        #expect(next.contains("-A screentime -p tcp -m connmark --mark 0x570000/0xff0000 -j RETURN"))
        #expect(!next.contains("0x560000/0xff0000 -j RETURN"))
        #expect(next.contains("-A screentime -p tcp -m connmark --mark 0x560000/0xff0000 -j screentime-filter"))
        #expect(firewall.standing(ofMark: 0x0156_0001, generation: 1) == .passedEarlier)
        #expect(firewall.standing(ofMark: 0x0157_0001, generation: 1) == .passed)
        #expect(firewall.standing(ofMark: 0x0154_0001, generation: 1) == .pending)
        #expect(firewall.standing(ofMark: 0x0001, generation: 0) == nil)
        let v6Quic = firewall.ruleset(for: .ipv6, owners: [1001...1001], dohAddresses: [])
        #expect(v6Quic.contains("-m length --length 1248:65535 -m u32 --u32 \"48>>24&0xC0=0xC0&&49=1:0xFFFFFFFF\""))
        #expect(lines.contains("-A screentime-filter -p udp -m udp --dport 443 -j REJECT"))
        #expect(
            lines.contains("-A screentime-filter -p udp -m udp --dport 53 -j CONNMARK --set-xmark 0x530000/0xff0000"))
        #expect(lines.contains("-A screentime-filter -p udp -m udp --dport 53 -j NFQUEUE --queue-num 53"))
        #expect(lines.contains("-A screentime-filter -p tcp -m tcp --dport 53 -j NFQUEUE --queue-num 53"))
        // The replies to the marked connections come back through the queue.
        #expect(
            lines.contains(
                "-A screentime-in -p udp -m udp --sport 53 -m connmark --mark 0x530000/0xff0000 -j NFQUEUE --queue-num 53"
            ))
        // A flood of replies stays in the kernel: per flow, then per server.
        #expect(
            lines.contains(
                "-A screentime-in -p udp -m udp --sport 53 -m connmark --mark 0x530000/0xff0000 -m hashlimit --hashlimit-above 200/sec --hashlimit-burst 1000 --hashlimit-mode srcip,srcport,dstip,dstport --hashlimit-name screentime-dnsf -j DROP"
            ))
        #expect(
            lines.contains(
                "-A screentime-in -p tcp -m tcp --sport 53 -m connmark --mark 0x530000/0xff0000 -m hashlimit --hashlimit-above 1000/sec --hashlimit-burst 5000 --hashlimit-mode srcip --hashlimit-name screentime-dnss -j DROP"
            ))
        #expect(!v4.contains("queue-bypass"), "the queue must fail closed")
        #expect(v4.contains("-d 8.8.8.8 ") && !v4.contains("2001:db8::1"))
        #expect(lines.first == "*filter" && lines.last == "COMMIT")
        let v6 = firewall.ruleset(for: .ipv6, owners: [1001...1001], dohAddresses: ["8.8.8.8", "2001:db8::1"])
        #expect(v6.contains("-d 2001:db8::1 ") && !v6.contains("8.8.8.8"))
    }

    /// With the acknowledgement log, a watched flow's server packets are copied to the log, not
    /// queued; the acknowledged bits the agent sets by name make a WATCHED flow (and only one)
    /// PASSED of this generation at its next packet, either way; every verdict kept and every
    /// SYN clears them.
    /// The uids around the filtered ranges, which the rules let leave at once: overlapping and
    /// repeated ranges, one at either end, and none at all.
    @Test func theUIDsNotFilteredAreTheRangesAroundTheFilteredOnes() {
        #expect(
            Firewall.others(than: [1002...1002, 1001...1001, 1002...1002, 100_000...165_535, 100_010...100_020])
                == [0...1000, 1003...99_999, 165_536...4_294_967_294])
        #expect(Firewall.others(than: [0...5, 4_294_967_000...4_294_967_295]) == [6...4_294_966_999])
        #expect(Firewall.others(than: []) == [0...4_294_967_294])
        #expect(Firewall.others(than: [0...4_294_967_295]).isEmpty)
    }

    @Test func withTheLogAWatchedFlowIsPromotedOnlyFromWatched() {
        let firewall = Firewall(chain: "screentime", queue: 53)
        let lines = firewall.ruleset(
            for: .ipv4, owners: [1001...1001], dohAddresses: [], generation: 2, acknowledgementLog: 53
        ).split(separator: "\n").map(String.init)
        #expect(Firewall.acknowledged(generation: 2) == 0x0A00_0000)
        let promote = "-p tcp -m connmark --mark 0xa5e0000/0xfff0000 -j CONNMARK --set-xmark 0x580000/0xfff0000"
        #expect(
            lines[6]
                == "-A screentime -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connmark ! --mark 0x540000/0xff0000 -j CONNMARK --set-xmark 0x0/0xfff0000"
        )
        // A refusal asked for (0x1 in the same bits) makes a watched flow REFUSED, and nothing else.
        let demote = "-p tcp -m connmark --mark 0x15e0000/0xfff0000 -j CONNMARK --set-xmark 0x550000/0xfff0000"
        #expect(lines[7] == "-A screentime " + promote)
        #expect(lines[8] == "-A screentime " + demote)
        #expect(lines[9] == "-A screentime -p tcp -m connmark --mark 0x580000/0xff0000 -j RETURN")
        #expect(
            Array(lines.filter { $0.hasPrefix("-A screentime-in") }.dropFirst(2).prefix(3)) == [
                "-A screentime-in -m connmark --mark 0x0/0xff0000 -j RETURN", "-A screentime-in " + promote,
                "-A screentime-in " + demote,
            ])
        #expect(
            lines.contains(
                "-A screentime -m mark --mark 0x5e0000/0xff0000 -j CONNMARK --save-mark --nfmask 0xfff0000 --ctmask 0xfff0000"
            ))
        #expect(
            lines.contains(
                "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m connmark --mark 0x5e0000/0xff0000 -j NFLOG --nflog-group 53 --nflog-threshold 1"
            ))
        #expect(!lines.contains { $0.contains("-m mark --mark 0x5e0000/0xff0000 -j NFQUEUE") })
        // Restored into the packet: the byte alone (a verdict's mark carries no acknowledged bits).
        #expect(lines.contains("-A screentime-filter -j CONNMARK --restore-mark --nfmask 0xff0000 --ctmask 0xff0000"))
        // A watched flow acknowledged under another generation (a long poll answered after a
        // shield) sends her every segment, ACKs too, to the filter chain; this generation's is
        // promoted above instead.
        let earlier = (0..<Firewall.generations).filter { $0 != 2 }.map {
            "-A screentime -p tcp -m connmark --mark 0x"
                + String(0x5E_0000 | Firewall.acknowledged(generation: $0), radix: 16)
                + "/0xfff0000 -j screentime-filter"
        }
        #expect(earlier.allSatisfy { lines.contains($0) }, "\(earlier)")
        #expect(
            !lines.contains {
                $0.hasPrefix("-A screentime -p tcp -m connmark --mark 0xa5e0000/0xfff0000 -j screentime-filter")
            })
        let firstACK = lines.firstIndex { $0.contains("-m u32") && $0.hasSuffix("-j RETURN") } ?? -1
        #expect(earlier.compactMap { lines.firstIndex(of: $0) }.allSatisfy { $0 < firstACK })
    }

    /// With the DNS fast path, a UDP question its program matches is let go untracked in the raw
    /// table, after the user's limit there, and so is the answer its program matches (from a
    /// resolver on loopback as it leaves, from elsewhere as it comes in); the filter table's
    /// chains accept both at their first rules, and drop an answer that starts a flow of its own
    /// (one the program did not pass). Nothing of the fast path is in the filter table's DNS
    /// rules, which queue as before; without it, no raw rule and none of the above.
    @Test func theDNSFastPathLetsGoUntrackedOnlyWhatItsProgramsMatch() {
        let firewall = Firewall(chain: "screentime", queue: 53)
        let programs = Firewall.DNSFastPathPrograms(
            question: "/run/screentime/q", answer: "/run/screentime/a", asked: "/run/screentime/k")
        for family in Firewall.Family.allCases {
            // A question let go is read again once its bytes are the packet's own (in the mangle
            // table, which runs after the raw one), and dropped unless it is the one let go.
            // Each of her questions has its bytes copied into the packet first (what the queue
            // reads is what leaves), with or without the fast path.
            let question = "-A screentime-hello -p udp -m udp --dport 53 -m mark --mark 0x610000/0xff0000"
            let copied =
                "-A screentime-hello -p udp -m udp --dport 53 -m owner --uid-owner 1001 -j CHECKSUM --checksum-fill"
            #expect(
                firewall.helloRuleset(for: family, owners: [1001...1001], hello: false, asked: programs.asked)
                    == "*mangle\n:screentime-hello - [0:0]\n\(copied)\n"
                    + "\(question) -m bpf --object-pinned /run/screentime/k -j RETURN\n\(question) -j DROP\nCOMMIT\n")
            #expect(
                firewall.helloRuleset(for: family, owners: [1001...1001], hello: false)
                    == "*mangle\n:screentime-hello - [0:0]\n\(copied)\nCOMMIT\n")
            // Without that program, no question is let go untracked (answers may be).
            var unread = programs
            unread.asked = nil
            #expect(
                !firewall.untrackedRuleset(for: family, owners: [1001...1001], programs: unread).contains("--dport 53"))
            let raw = firewall.untrackedRuleset(for: family, owners: [1001...1001, 1005...1006], programs: programs)
                .split(separator: "\n").map(String.init)
            let limit = "-m limit --limit 200/sec --limit-burst 1000 "
            #expect(
                raw == [
                    "*raw", ":screentime-raw - [0:0]", ":screentime-rawin - [0:0]", ":screentime-fast - [0:0]",
                    "-A screentime-raw -p udp -m udp --dport 53 -m owner --uid-owner 1001 \(limit)"
                        + "-m bpf --object-pinned /run/screentime/q -j screentime-fast",
                    "-A screentime-raw -p udp -m udp --dport 53 -m owner --uid-owner 1005-1006 \(limit)"
                        + "-m bpf --object-pinned /run/screentime/q -j screentime-fast",
                    "-A screentime-raw -o lo -p udp -m udp --sport 53 -m bpf --object-pinned /run/screentime/a "
                        + "-j screentime-fast",
                    "-A screentime-rawin ! -i lo -p udp -m udp --sport 53 -m bpf --object-pinned /run/screentime/a "
                        + "-j CT --notrack",
                    "-A screentime-fast -j MARK --set-xmark 0x610000/0xff0000", "-A screentime-fast -j CT --notrack",
                    "-A screentime-fast -j ACCEPT", "COMMIT",
                ])
            #expect(
                firewall.untrackedRuleset(for: family, owners: [1001...1001], programs: nil)
                    == "*raw\n:screentime-raw - [0:0]\n:screentime-rawin - [0:0]\n:screentime-fast - [0:0]\nCOMMIT\n")
            let lines = firewall.ruleset(for: family, owners: [1001...1001], dohAddresses: [], dnsFastPath: programs)
                .split(separator: "\n").map(String.init)
            let main = lines.filter { $0.hasPrefix("-A screentime ") }
            let input = lines.filter { $0.hasPrefix("-A screentime-in ") }
            #expect(main.first == "-A screentime -m mark --mark 0x610000/0xff0000 -j ACCEPT")
            #expect(
                input.prefix(2) == [
                    "-A screentime-in -m mark --mark 0x610000/0xff0000 -j ACCEPT",
                    "-A screentime-in -p udp -m udp --sport 53 -m conntrack --ctstate UNTRACKED -j ACCEPT",
                ])
            // Before the exit of the flows never marked, which such an answer's flow is.
            let dropped = input.firstIndex(
                of: "-A screentime-in -p udp -m udp --sport 53 ! --dport 53 -m conntrack --ctstate NEW "
                    + "-m connmark --mark 0x0/0xff0000 -j DROP")
            let unmarked = input.firstIndex(of: "-A screentime-in -m connmark --mark 0x0/0xff0000 -j RETURN")
            #expect(dropped != nil && unmarked != nil && dropped! < unmarked!)
            #expect(!lines.contains { $0.contains("-m bpf") && $0.contains("53") })
            #expect(lines.contains("-A screentime-filter -p udp -m udp --dport 53 -j NFQUEUE --queue-num 53"))
            let without = firewall.ruleset(for: family, owners: [1001...1001], dohAddresses: [])
            #expect(!without.contains("-m bpf") && !without.contains("0x610000") && !without.contains("UNTRACKED"))
            #expect(!without.contains("--ctstate NEW -j DROP"))
        }
    }
}

@Suite struct TokenSecretTests {
    @Test func madeOnceWithMode0600AndKept() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/token.secret"
        let first = try TokenSecret.loadOrCreate(at: path)
        #expect(first.count == 32)
        #expect(try Files.mode(of: path) == 0o600)
        #expect(try TokenSecret.loadOrCreate(at: path) == first)
    }

    @Test func aDamagedSecretStopsTheAgentWithAReason() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/token.secret"
        try Files.writeAtomically([1, 2, 3], to: path, mode: 0o600)
        do {
            _ = try TokenSecret.loadOrCreate(at: path)
            Issue.record("a 3-byte secret was accepted")
        } catch {
            #expect(error.code == .secret)
            #expect(error.message.contains("3 bytes"))
        }
        #expect(try Files.read(path) == [1, 2, 3])
    }

    @Test func aLooseModeIsTightened() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/token.secret"
        try Files.writeAtomically([UInt8](repeating: 9, count: 32), to: path, mode: 0o644)
        #expect(try TokenSecret.loadOrCreate(at: path) == [UInt8](repeating: 9, count: 32))
        #expect(try Files.mode(of: path) == 0o600)
    }
}

@Suite struct StateDatabaseTests {
    @Test func storesAndAuthorizationsSurviveReopening() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.sqlite"
        let minter = try TokenMinter(secret: [UInt8](repeating: 1, count: 32))
        let key = StoreKey(client: .commandLine, name: try StoreName("school"))
        var settings = StoreSettings()
        settings.shield.applications = [minter.token(for: .desktopEntry("org.gnome.Chess"))]
        settings.webContent.blockedByFilter = .auto([try DomainName("casino.example")])
        let token = minter.token(for: .desktopEntry("org.gnome.Chess")).base64
        do {
            let database = try StateDatabase(path: path)
            try database.save(
                StateDatabase.Authorization(
                    uid: 1234, userName: "kid", member: .child, status: .approved, showNamesToChild: false,
                    changedAt: Date(timeIntervalSince1970: 1_800_000_000), changedByUID: 0))
            try database.saveStore(
                uid: 1234, key: key, settings: settings,
                names: [token: TokenName(kind: .app, identity: "desktop:org.gnome.Chess", displayName: "Chess")],
                at: Date())
        }
        let reopened = try StateDatabase(path: path)
        #expect(try reopened.authorization(uid: 1234)?.member == .child)
        #expect(try reopened.authorization(uid: 1234)?.changedAt == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(try reopened.stores(uid: 1234).collection[key] == settings)
        #expect(try reopened.tokenNames([token])[token]?.displayName == "Chess")
        #expect(try reopened.stores(uid: 99).collection.stores.isEmpty)

        // Saving an empty store deletes it; revoking clears every store in the same transaction.
        try reopened.saveStore(uid: 1234, key: key, settings: StoreSettings(), names: [:], at: Date())
        #expect(try reopened.stores(uid: 1234).collection.stores.isEmpty)
        try reopened.saveStore(uid: 1234, key: key, settings: settings, names: [:], at: Date())
        let event = StateDatabase.ShieldEvent(
            uid: 1234, kind: .domain, token: "t", reason: "domain", category: nil, first: Date(), last: Date(), count: 2
        )
        try reopened.save(Self.approved(99))
        try reopened.record(
            [
                event,
                StateDatabase.ShieldEvent(
                    uid: 99, kind: .domain, token: "u", reason: "filter", category: nil, first: Date(), last: Date(),
                    count: 1),
            ],
            names: [:])
        #expect(try reopened.shieldEvents(uid: 1234, kind: .domain, limit: 10).map(\.count) == [2])
        var revoked = try #require(try reopened.authorization(uid: 1234))
        revoked.status = .denied
        try reopened.save(revoked, clearingStoresAndEvents: true)
        #expect(try reopened.stores(uid: 1234).collection.stores.isEmpty)
        #expect(try reopened.shieldEvents(uid: 1234, kind: .domain, limit: 10).isEmpty)
        #expect(try reopened.shieldEvents(uid: 99, kind: .domain, limit: 10).count == 1, "only the revoked user's")
        #expect(try reopened.authorizations().map(\.status) == [.denied, .approved])
        // Counted before the revocation, written after it: not kept (nor for someone never
        // authorized, nor forgotten).
        try reopened.record([event], names: [:])
        try reopened.forget(uid: 99)
        try reopened.record(
            [
                StateDatabase.ShieldEvent(
                    uid: 99, kind: .domain, token: "v", reason: "filter", category: nil, first: Date(), last: Date(),
                    count: 1),
                StateDatabase.ShieldEvent(
                    uid: 7, kind: .domain, token: "w", reason: "domain", category: nil, first: Date(), last: Date(),
                    count: 1),
            ], names: ["w": TokenName(kind: .domain, identity: "secret.example", displayName: "secret.example")])
        for uid: UInt32 in [1234, 99, 7] {
            #expect(try reopened.shieldEvents(uid: uid, kind: .domain, limit: 10).isEmpty, "uid \(uid)")
        }
        #expect(try reopened.tokenNames(["w"]).isEmpty, "the name of a lookup not kept")
    }

    static func approved(_ uid: UInt32) -> StateDatabase.Authorization {
        StateDatabase.Authorization(
            uid: uid, userName: "user\(uid)", member: .child, status: .approved, showNamesToChild: false,
            changedAt: Date(), changedByUID: 0)
    }

    @Test func tokenNamesAreFoundInBatches() throws {
        let directory = try TemporaryDirectory()
        let database = try StateDatabase(path: directory.path + "/state.sqlite")
        var names: [String: TokenName] = [:]
        for index in 0..<1_200 {
            names["token\(index)"] = TokenName(
                kind: .domain, identity: "site\(index).example", displayName: "site\(index)")
        }
        try database.saveStore(
            uid: 1, key: StoreKey(client: .commandLine, name: .default), settings: StoreSettings(), names: names,
            at: Date())
        let found = try database.tokenNames(Set(names.keys).union(["unknown"]))
        #expect(found == names)
        #expect(try database.tokenNames(["token7"]) == ["token7": names["token7"]!])
    }

    @Test func theDatabaseIsInWALModeWithFullSync() throws {
        let directory = try TemporaryDirectory()
        let database = try StateDatabase(path: directory.path + "/state.sqlite")
        let durability = try database.durability()
        #expect(durability.journalMode == "wal")
        #expect(durability.synchronous == 2)
    }
}

/// The "Also" list of the hardening issue: tables a child can fill are pruned; an existing
/// directory keeps its mode.
@Suite struct RetentionTests {
    @Test func oldEventsGoAndEachUserKeepsAtMostTheCap() throws {
        let directory = try TemporaryDirectory()
        let database = try StateDatabase(path: directory.path + "/state.sqlite", retentionDays: 30)
        let now = Date()
        let old = now.addingTimeInterval(-31 * 86_400)
        func event(_ uid: UInt32, _ index: Int, at date: Date) -> StateDatabase.ShieldEvent {
            StateDatabase.ShieldEvent(
                uid: uid, kind: .domain, token: "t\(index)", reason: "domain", category: nil, first: date, last: date,
                count: 1)
        }
        for uid: UInt32 in [1, 2, 3] { try database.save(StateDatabaseTests.approved(uid)) }
        try database.record([event(1, 0, at: old), event(1, 1, at: now), event(2, 2, at: old)], names: [:])
        try database.recordShieldChanges(
            frozen: [], thawed: [],
            events: [
                StateDatabase.ApplicationEvent(time: old, uid: 1, token: "a", pid: 5, action: .frozen),
                StateDatabase.ApplicationEvent(time: now, uid: 1, token: "a", pid: 5, action: .thawed),
            ], names: [:])
        try database.prune(before: now.addingTimeInterval(-30 * 86_400))
        #expect(try database.eventCounts(uid: 1) == (1, 1))
        #expect(try database.eventCounts(uid: 2) == (0, 0))
        // A flood of events: only the newest `maximumEventsPerUser` stay.
        let flood = (0..<(StateDatabase.maximumEventsPerUser + 50)).map {
            event(3, $0, at: now.addingTimeInterval(Double($0)))
        }
        try database.record(flood, names: [:])
        try database.prune(before: now.addingTimeInterval(-30 * 86_400))
        #expect(try database.eventCounts(uid: 3).shield == StateDatabase.maximumEventsPerUser)
        let newest = try database.shieldEvents(uid: 3, kind: .domain, limit: 1).first?.token
        #expect(newest == "t\(StateDatabase.maximumEventsPerUser + 49)")
    }

    @Test func makingADirectoryThatExistsLeavesItsModeAlone() throws {
        let directory = try TemporaryDirectory()
        let shared = directory.path + "/shared"
        try Files.makeDirectory(shared, mode: 0o755)
        chmod(shared, 0o1777)
        try Files.makeDirectory(shared, mode: 0o700)
        #expect(try Files.mode(of: shared) == 0o1777)
        try Files.makeDirectory(shared + "/state", mode: 0o700)
        #expect(try Files.mode(of: shared + "/state") == 0o700)
    }
}

/// A child's refusal storm (thousands of one-byte-different programs under `deny-installs`) is
/// written down within a budget, and the names of the programs it refused go with their events.
@Suite struct RefusalStormTests {
    @Test func eachUserHasItsOwnBudgetAndIsToldWhatWentUnwritten() {
        var budget = RefusalBudget()
        let written = (0..<1000).filter { _ in budget.admit(1001, now: 0).write }.count
        #expect(written == Int(RefusalBudget.burst))
        // Another user's storm is its own.
        #expect(budget.admit(1002, now: 0).write)
        // Ten seconds on: ten more, the first of them told how many went unwritten.
        let next = budget.admit(1001, now: 10)
        #expect(next.write && next.unwritten == 1000 - Int(RefusalBudget.burst))
        #expect((0..<100).filter { _ in budget.admit(1001, now: 10).write }.count == 9)
    }

    @Test func theNamesOfRefusedProgramsGoWithTheirEvents() throws {
        let directory = try TemporaryDirectory()
        let database = try StateDatabase(path: directory.path + "/state.sqlite")
        let minter = try TokenMinter(secret: [UInt8](repeating: 1, count: 32))
        func program(_ index: Int) -> (token: String, name: TokenName) {
            let hex = String(repeating: String(format: "%02x", index), count: 32)
            return (
                minter.token(for: try! .executable(sha256: hex)).base64,
                TokenName(kind: .app, identity: "exe:sha256:" + hex, displayName: "copy\(index)")
            )
        }
        let old = Date(timeIntervalSinceNow: -40 * 86_400)
        let events = (0..<3).map { index in
            StateDatabase.ApplicationEvent(
                time: index == 2 ? Date() : old, uid: 1001, token: program(index).token, pid: 100, action: .uninstalled)
        }
        var names = Dictionary(uniqueKeysWithValues: (0..<4).map { program($0) })
        // A program a guardian shielded by its content keeps its name, events or not.
        var settings = StoreSettings()
        settings.shield.applications = [try ApplicationToken(base64: program(3).token)]
        try database.saveStore(
            uid: 1001, key: StoreKey(client: .commandLine, name: try StoreName("s")), settings: settings,
            names: [program(3).token: program(3).name], at: Date())
        names[program(3).token] = nil
        try database.recordShieldChanges(frozen: [], thawed: [], events: events, names: names)
        let chess = minter.token(for: .desktopEntry("org.gnome.Chess")).base64
        try database.saveStore(
            uid: 1002, key: StoreKey(client: .commandLine, name: try StoreName("t")), settings: StoreSettings(),
            names: [chess: TokenName(kind: .app, identity: "desktop:org.gnome.Chess", displayName: "Chess")], at: Date()
        )
        try database.prune(before: Date(timeIntervalSinceNow: -30 * 86_400))
        let kept = try database.tokenNames(Set((0..<4).map { program($0).token } + [chess]))
        #expect(kept[program(0).token] == nil && kept[program(1).token] == nil, "their events are gone")
        #expect(kept[program(2).token]?.displayName == "copy2")
        #expect(kept[program(3).token]?.displayName == "copy3")
        #expect(kept[chess]?.displayName == "Chess", "names of desktop entries are never swept")
    }

    /// With the hello fast path (its programs, and the log the server's acknowledgements go to):
    /// her first data on a flow never marked that the program matches is marked watched by the
    /// kernel (a value of its own, not WATCHED), copied to the log and let go, after every rule a
    /// TCP segment meets before (the SYN fast path's among them) and before her rules to the
    /// filter chain and its queue. In INPUT, only the server's acknowledgement of the hello makes
    /// such a flow PASSED; the acknowledged bits never do, and a refusal asked does. Without the
    /// log, or without the program, every hello is the queue's.
    @Test func theHelloFastPathsRulesComeBeforeHerQueueAndOnlyWithTheLog() {
        let firewall = Firewall(chain: "screentime", queue: 53)
        let programs = Firewall.DNSFastPathPrograms(
            question: "/run/screentime/q", answer: "/run/screentime/a", hello: "/run/screentime/h",
            acknowledged: "/run/screentime/k")
        for family in Firewall.Family.allCases {
            let lines = firewall.ruleset(
                for: family, owners: [1001...1001, 1005...1006], dohAddresses: [], synFastPath: true,
                acknowledgementLog: 54, dnsFastPath: programs
            ).split(separator: "\n").map(String.init)
            let watched = "0x5f0000/0xfff0000"
            #expect(firewall.kernelWatchedMark == 0x5f_0000 && firewall.mark(.watched) == 0x5e_0000)
            #expect(firewall.standing(ofMark: 0x5f_0000, generation: 0) == .watched)
            // The server's acknowledgement of the hello: PASSED (of generation 0), after the copy
            // is logged; the acknowledged bits promote WATCHED only.
            let input = lines.filter { $0.hasPrefix("-A screentime-in ") }
            let reply = "-A screentime-in -p tcp -m conntrack --ctdir REPLY -m connmark --mark 0x5f0000/0xff0000"
            let logged = input.firstIndex(of: "\(reply) -j NFLOG --nflog-group 54 --nflog-threshold 1")
            let promoted = input.firstIndex(
                of: "\(reply) -m bpf --object-pinned /run/screentime/k -j CONNMARK --set-xmark 0x560000/0xfff0000")
            #expect(logged != nil && promoted.map { $0 == logged! + 1 } == true, "\(input)")
            #expect(!lines.contains { $0.contains("--mark 0x\(String(0x5f_0000 | 0x0800_0000, radix: 16))") })
            // A refusal asked for (by ports) turns it REFUSED; a refused hello's, PASSED too.
            for chain in ["screentime", "screentime-in"] {
                let refusals = ["0x15f0000", "0x25f0000", "0x2560000"].map {
                    "-A \(chain) -p tcp -m connmark --mark \($0)/0xfff0000 -j CONNMARK --set-xmark 0x550000/0xfff0000"
                }
                let at = refusals.map { lines.firstIndex(of: $0) }
                let passedReturn = lines.firstIndex {
                    $0.hasPrefix("-A \(chain) ") && $0.contains("--mark 0x560000/0xff0000 -j")
                }
                #expect(
                    at.allSatisfy { $0 != nil && $0! < (passedReturn ?? Int.max) },
                    "\(chain): \(at) \(passedReturn ?? -1)")
            }
            // A segment no socket sends, on a flow watched by the kernel or pending, is the filter
            // chain's (compared, or dropped) as a watched flow's is.
            for watched in ["0x5f0000", "0x540000"] {
                #expect(
                    lines.contains(
                        "-A screentime -p tcp -m owner ! --socket-exists -m connmark --mark \(watched)/0xff0000 -j screentime-filter"
                    ))
            }
            let matched = lines.enumerated().filter { $0.element.contains("--object-pinned /run/screentime/h") }
            #expect(
                matched.map(\.element)
                    == ["1001", "1005-1006"].map {
                        "-A screentime -m owner --uid-owner \($0) -p tcp -m connmark --mark 0x0/0xfff0000 -m bpf "
                            + "--object-pinned /run/screentime/h -m limit --limit 2000/sec --limit-burst 10000 "
                            + "-j MARK --set-xmark \(watched)"
                    }, "\(matched)")
            let after = [
                "-A screentime -p tcp -m mark --mark \(watched) -j NFLOG --nflog-group 54 --nflog-threshold 1",
                "-A screentime -p tcp -m mark --mark \(watched) -j CONNMARK --save-mark --nfmask 0xfff0000 --ctmask 0xfff0000",
                "-A screentime -p tcp -m mark --mark \(watched) -j ACCEPT",
            ]
            let last = matched.last?.offset ?? -1
            #expect(Array(lines[(last + 1)..<min(last + 4, lines.count)]) == after)
            let synFastPath = lines.lastIndex { $0.contains("--match-set") } ?? Int.max
            let queued = lines.firstIndex {
                $0.contains("--uid-owner 1001 -m limit") && $0.hasSuffix("-j screentime-filter")
            }
            #expect((matched.first?.offset ?? -1) > synFastPath && queued.map { $0 > last + 3 } == true)
            // Only with the log (where the copy goes) and the program.
            let withoutLog = firewall.ruleset(
                for: family, owners: [1001...1001], dohAddresses: [], synFastPath: true, dnsFastPath: programs)
            #expect(!withoutLog.contains("/run/screentime/h") && !withoutLog.contains("-j MARK"))
            let withoutProgram = firewall.ruleset(
                for: family, owners: [1001...1001], dohAddresses: [], synFastPath: true, acknowledgementLog: 54,
                dnsFastPath: Firewall.DNSFastPathPrograms(question: "/run/screentime/q", answer: "/run/screentime/a"))
            #expect(!withoutProgram.contains("-j MARK"))
            // Before them, in the mangle table: her packets that could hold a whole hello, on a
            // flow never marked, have their bytes copied out of her pages (checksum filled).
            // (After her questions' own copy: `theDNSFastPathLetsGoUntrackedOnlyWhatItsProgramsMatch`.)
            let least = family == .ipv4 ? 87 : 107
            let questions = ["1001", "1005-1006"].map {
                "-A screentime-hello -p udp -m udp --dport 53 -m owner --uid-owner \($0) -j CHECKSUM --checksum-fill\n"
            }
            #expect(
                firewall.helloRuleset(for: family, owners: [1001...1001, 1005...1006], hello: true)
                    == "*mangle\n:screentime-hello - [0:0]\n" + questions.joined()
                    + ["1001", "1005-1006"].map {
                        "-A screentime-hello -m owner --uid-owner \($0) -p tcp -m connmark --mark 0x0/0xfff0000 "
                            + "-m length --length \(least):65535 -j CHECKSUM --checksum-fill\n"
                    }.joined() + "COMMIT\n")
            #expect(
                firewall.helloRuleset(for: family, owners: [1001...1001], hello: false)
                    == "*mangle\n:screentime-hello - [0:0]\n\(questions[0])COMMIT\n")
        }
    }
}
