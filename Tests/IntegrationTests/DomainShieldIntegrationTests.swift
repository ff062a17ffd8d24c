import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// The domain shield for real: in a network namespace of its own, the agent's iptables rules
/// send a real child's DNS to its netfilter queue; dnsmasq answers; dig and getent ask.
///
/// Its tests run side by side: each world has its own network namespace, queue, chain, mark and
/// users.
@Suite(
    .threadsOfTheirOwn,
    .enabled(if: isRoot, "needs root: network namespaces, iptables, NFQUEUE, dnsmasq, users")
)
struct DomainShieldIntegrationTests {
    /// One lookup with dig, as a user (nil: root); at most one try of `timeout` seconds.
    struct Lookup {
        let status: String?
        let addresses: [String]
        let seconds: Double
        let output: String
    }

    func dig(
        _ world: AgentWorld, as user: String?, _ name: String, server: String = "127.0.0.1", tcp: Bool = false,
        type: String = "A", timeout: Int = 3, from source: String? = nil
    ) throws -> Lookup {
        let start = ContinuousClock.now
        var arguments = ["+tries=1", "+time=\(timeout)", "@\(server)", name, type]
        if tcp { arguments.insert("+tcp", at: 0) }
        if let source { arguments += ["-b", source] }
        let result = try world.inNetwork(as: user, "/usr/bin/dig", arguments)
        let elapsed = ContinuousClock.now - start
        let status = result.stdout.split(separator: "\n").first { $0.contains("status:") }.flatMap { line in
            line.split(separator: ",").first { $0.contains("status:") }?.split(separator: " ").last.map(String.init)
        }
        let addresses = result.stdout.split(separator: "\n").filter { !$0.hasPrefix(";") }.compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count >= 5 && (fields[3] == "A" || fields[3] == "AAAA") ? String(fields[4]) : nil
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Lookup(status: status, addresses: addresses, seconds: seconds, output: result.stdout + result.stderr)
    }

    func guardian(_ world: AgentWorld, _ arguments: String...) throws {
        let result = try world.cli(as: world.guardian, arguments: arguments)
        guard result.status == 0 else { throw WorldError("\(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    @Test func shieldedNamesFailAtOnceForTheChildAndOnlyForTheChild() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        // Before any authorization the agent installs nothing.
        #expect(try world.firewallRules().isEmpty)
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test", "--web-category", "games")
        #expect(try world.firewallRules().contains { $0.contains("--uid-owner") })

        for (server, tcp) in [("127.0.0.1", false), ("127.0.0.1", true), ("::1", false), ("::1", true)] {
            for name in ["blocked.test", "www.blocked.test", "deep.sub.BLOCKED.test", "example-games.test"] {
                let lookup = try dig(world, as: world.child, name, server: server, tcp: tcp)
                #expect(lookup.status == "NXDOMAIN", "\(name) via \(server) tcp=\(tcp): \(lookup.output)")
                // (Answered by the filter, not dropped: with one try, a dropped question has no
                // status at all. How soon is the benchmarks' to say, not a test's.)
            }
            let allowed = try dig(world, as: world.child, "allowed.test", server: server, tcp: tcp)
            #expect(allowed.status == "NOERROR" && allowed.addresses == ["10.1.1.1"], "\(allowed.output)")
        }
        let allowedV6 = try dig(world, as: world.child, "allowed.test", server: "::1", type: "AAAA")
        #expect(allowedV6.addresses == ["fd00::1"])

        // glibc through /etc/resolv.conf: the shielded name fails at once, the other resolves.
        let blockedHost = try world.inNetwork(as: world.child, "/usr/bin/getent", ["hosts", "www.blocked.test"])
        #expect(blockedHost.status == 2, "getent: \(blockedHost.stdout)")
        let allowedHost = try world.inNetwork(as: world.child, "/usr/bin/getent", ["hosts", "allowed.test"])
        #expect(allowedHost.status == 0 && allowedHost.stdout.contains("allowed.test"))

        // Root and a bystander resolve the shielded names; the canary is the child's alone.
        for user in [nil, world.bystander] {
            #expect(try dig(world, as: user, "www.blocked.test").addresses == ["10.2.2.2"])
            #expect(try dig(world, as: user, "www.blocked.test", tcp: true).addresses == ["10.2.2.2"])
            #expect(try dig(world, as: user, "use-application-dns.net").addresses == ["10.5.5.5"])
            #expect(try dig(world, as: user, "dns.doh-server.test").addresses == ["10.7.7.7"])
        }
        #expect(try dig(world, as: world.child, "use-application-dns.net").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "dns.doh-server.test").status == "NXDOMAIN")

        // The status shows the filter on and the shielded lookups, by domain and by category.
        let status = try world.status(of: world.child)
        let dns = try #require(status.domainShield)
        #expect(dns.filtering)
        #expect(dns.problems.isEmpty, "\(dns.problems)")
        let blockedToken = try tokenText(world, "domain", "blocked.test")
        let gamesToken = try tokenText(world, "category", "games")
        // Counted in batches: one row per domain and reason for each second with lookups.
        let byDomain = dns.recentLookups.filter { $0.token == blockedToken }
        #expect(byDomain.allSatisfy { $0.reason == "domain" })
        #expect(byDomain.map(\.count).reduce(0, +) >= 13, "12 digs and a getent: \(byDomain)")
        let byCategory = try #require(dns.recentLookups.first { $0.reason == "category" })
        #expect(byCategory.category == gamesToken)
        #expect(status.names[byCategory.token]?.identity == "example-games.test")
        #expect(dns.recentLookups.contains { $0.reason == "bypass" })
        let text = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(text.stdout.contains("DNS filter: on"))
        #expect(text.stdout.contains("blocked.test"))
        // The child's own status shows tokens, not the names it looked up.
        let own = try world.cli(as: world.child, "status")
        #expect(own.status == 0 && !own.stdout.contains("example-games.test"))
    }

    func tokenText(_ world: AgentWorld, _ kind: String, _ identity: String) throws -> String {
        let result = try world.cli(as: world.guardian, "token", kind, identity, "--user", world.child)
        guard result.status == 0 else { throw WorldError("token: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func dnsOverTLSAndKnownDoHAddressesAreRefusedToTheChild() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        // A listener on 853 (DNS over TLS's port), so that a refusal is the rule's doing.
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        listener.arguments = [
            "netns", "exec", world.namespace ?? "", "/usr/bin/python3", "-c",
            "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',853))\ns.listen(50)\ntime.sleep(60)",
        ]
        try listener.run()
        defer {
            kill(listener.processIdentifier, SIGKILL)
            _ = AgentWorld.ended(listener, within: 10)
        }
        let connect = ["-c", "exec 3<>/dev/tcp/127.0.0.1/853"]
        var bystander = try world.inNetwork(as: world.bystander, "/bin/bash", connect)
        for _ in 0..<100 where bystander.status != 0 {
            Thread.sleep(forTimeInterval: 0.02)
            bystander = try world.inNetwork(as: world.bystander, "/bin/bash", connect)
        }
        #expect(bystander.status == 0, "the bystander reaches port 853: \(bystander.stderr)")
        let child = try world.inNetwork(as: world.child, "/bin/bash", connect)
        #expect(child.status != 0 && child.stderr.contains("refused"), "\(child.stderr)")
        // The DoH list's addresses are refused on 443, in both families.
        let v4 = try world.firewallRules()
        #expect(v4.contains { $0.contains("-d 192.0.2.53/32") && $0.contains("--dport 443") && $0.contains("REJECT") })
        let v6 = try world.firewallRules(ipv6: true)
        #expect(v6.contains { $0.contains("-d 2001:db8::53/128") && $0.contains("--dport 443") })
    }

    /// The child's rate limits at the highest the configuration takes (the kernel's limit match
    /// goes to 10,000 packets a second) and at 0, no limit: the filter is in force either way.
    /// The configuration took up to 100,000 before, and at 10,000 DNS packets a second (bursts
    /// of 50,000) iptables refused the whole ruleset: the agent ran with the filter not in force
    /// and the child's lookups unfiltered, which `make bench` then measured as the filter's speed.
    @Test(arguments: [Firewall.highestRateLimit, 0])
    func theHighestRateLimitAndNoneStillFilter(rate: Int) throws {
        let world = try AgentWorld(
            network: true, configuration: ["dnsRateLimit": "\(rate)", "connectionRateLimit": "\(rate)"])
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        #expect(try dig(world, as: world.child, "blocked.test").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "allowed.test").addresses == ["10.1.1.1"])
        let rules = try world.firewallRules() + world.firewallRules(ipv6: true)
        if rate == 0 {
            #expect(!rules.contains { $0.contains("-m limit") || $0.contains("-m hashlimit") }, "\(rules)")
        } else {
            // Three per uid range (DNS over UDP and TCP, the rest) in each family.
            let limited = rules.filter { $0.contains("-m limit") }
            #expect(limited.count >= 6, "\(rules)")
            #expect(limited.allSatisfy { $0.contains("-m limit --limit 10000/sec --limit-burst 10000 ") }, "\(limited)")
        }
        // Above it, an agent does not start, and says why.
        let configuration = world.directory + "/too-fast.json"
        try #"{"dnsRateLimit": 10001}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
        let refused = try run(
            AgentWorld.binaries + "/screentimed",
            [
                "--config", configuration, "--state-dir", world.directory + "/too-fast", "--socket",
                world.directory + "/too-fast.sock",
            ], deadline: 20)
        #expect(refused.status == 78 && refused.stderr.contains("from 1 to 10000 packets a second"), "\(refused)")
    }

    @Test func theWebFilterAndItsExceptions() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(
            world, "filter", "auto", "--user", world.child, "--block", "other.test", "--allow", "ok.other.test")
        #expect(try dig(world, as: world.child, "www.adult-site.test").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "other.test").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "ok.other.test").addresses == ["10.6.6.6"])
        #expect(try dig(world, as: world.child, "allowed.test").addresses == ["10.1.1.1"])

        try guardian(world, "filter", "all", "--user", world.child, "--allow", "allowed.test")
        #expect(try dig(world, as: world.child, "allowed.test").addresses == ["10.1.1.1"])
        #expect(try dig(world, as: world.child, "other.test").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "www.adult-site.test").status == "NXDOMAIN")

        try guardian(world, "filter", "none", "--user", world.child)
        #expect(try dig(world, as: world.child, "other.test").addresses == ["10.6.6.6"])
        // A bad domain is refused by the CLI and changes nothing.
        let bad = try world.cli(as: world.guardian, "filter", "specific", "--user", world.child, "--block", "a..b")
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(try world.status(of: world.child).effective.webContentFilters.isEmpty)
    }

    @Test func aCategoryListReloadedOnSIGHUPTakesEffectWithoutAStop() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--web-category", "games")
        #expect(try dig(world, as: world.child, "other.test").addresses == ["10.6.6.6"])
        try "example-games.test\nother.test\n".write(
            toFile: world.directory + "/categories/games.list", atomically: true, encoding: .utf8)
        world.signalAgent(SIGHUP)
        var status: String?
        for _ in 0..<100 {
            status = try dig(world, as: world.child, "www.other.test").status
            if status == "NXDOMAIN" { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "example-games.test").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "allowed.test").addresses == ["10.1.1.1"])
        #expect(world.agentIsRunning)
    }

    @Test func failsClosedWhileTheAgentIsDownAndResumesWithoutDuplicateRules() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        let rules = try world.firewallRules()
        let rules6 = try world.firewallRules(ipv6: true)

        #expect(world.terminate() == 0)
        // The rules stay: the child's lookups get no answer, the bystander's do.
        #expect(try world.firewallRules() == rules)
        let stopped = try dig(world, as: world.child, "allowed.test", timeout: 1)
        #expect(stopped.status == nil && stopped.addresses.isEmpty, "\(stopped.output)")
        #expect(try dig(world, as: world.child, "allowed.test", tcp: true, timeout: 1).addresses.isEmpty)
        #expect(try dig(world, as: world.bystander, "allowed.test").addresses == ["10.1.1.1"])

        // kill -9 and a restart: the same rules, once each, and filtering as before.
        try world.start()
        world.kill9()
        try world.start()
        #expect(try world.firewallRules() == rules)
        #expect(try world.firewallRules(ipv6: true) == rules6)
        #expect(try world.firewallRules().filter { $0.hasPrefix("-A OUTPUT") }.count == 1)
        #expect(try dig(world, as: world.child, "allowed.test").addresses == ["10.1.1.1"])
        #expect(try dig(world, as: world.child, "www.blocked.test").status == "NXDOMAIN")

        // Revoking the last authorized user removes the chains; the child resolves everything.
        // Its shielded lookups go too, even those counted a moment before (written a second later).
        #expect(try dig(world, as: world.child, "blocked.test").status == "NXDOMAIN")
        try guardian(world, "revoke", "--user", world.child)
        Thread.sleep(forTimeInterval: 1.5)
        try guardian(world, "authorize", "--child", world.child)
        #expect(try world.status(of: world.child).domainShield?.recentLookups == [])
        try guardian(world, "revoke", "--user", world.child)
        #expect(try world.firewallRules().isEmpty)
        #expect(try world.firewallRules(ipv6: true).isEmpty)
        #expect(try dig(world, as: world.child, "www.blocked.test").addresses == ["10.2.2.2"])
    }

    @Test func theRulesFollowEachAuthorizedUser() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        let sibling = try world.makeUser("stsib")
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "authorize", "--child", sibling)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        try guardian(world, "shield", "--user", sibling, "--domain", "other.test")
        let childUID = try UserDirectory().user(world.child).uid
        let siblingUID = try UserDirectory().user(sibling).uid
        // The uids matched by the users' rules, and by the first ones, which let everyone else
        // (on flows the agent never marked) leave at once.
        func uids(gates: Bool = false) throws -> [String] {
            try world.firewallRules().filter {
                $0.contains("--uid-owner")
                    && ($0.contains("-m connmark --mark 0x0/") && $0.hasSuffix("-j RETURN")) == gates
            }.compactMap { $0.split(separator: " ").drop { $0 != "--uid-owner" }.dropFirst().first.map(String.init) }
        }
        func owners() throws -> [String] { try uids() }
        // Each user, and the subordinate uids useradd gave it (/etc/subuid): they are the user.
        let subordinate = SubordinateIDs(
            parsing: (try? String(contentsOfFile: "/etc/subuid", encoding: .utf8)) ?? "")
        let expected = [world.child: childUID, sibling: siblingUID].flatMap { name, uid in
            ["\(uid)"] + subordinate.ranges(ofUser: name, uid: uid).map { "\($0.lowerBound)-\($0.upperBound)" }
        }
        #expect(Set(try owners()) == Set(expected))
        let filtered =
            [childUID...childUID, siblingUID...siblingUID]
            + subordinate.ranges(ofUser: world.child, uid: childUID)
            + subordinate.ranges(ofUser: sibling, uid: siblingUID)
        #expect(
            try uids(gates: true)
                == Firewall.others(than: filtered).map {
                    $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)"
                })
        // Each child's own policy, not the other's.
        #expect(try dig(world, as: world.child, "blocked.test").status == "NXDOMAIN")
        #expect(try dig(world, as: world.child, "other.test").addresses == ["10.6.6.6"])
        #expect(try dig(world, as: sibling, "other.test").status == "NXDOMAIN")
        #expect(try dig(world, as: sibling, "blocked.test").addresses == ["10.2.2.2"])
        // One revoked: its rule goes, the other's stays.
        try guardian(world, "revoke", "--user", sibling)
        #expect(try owners().contains("\(childUID)") && !(try owners().contains("\(siblingUID)")))
        #expect(try dig(world, as: sibling, "other.test").addresses == ["10.6.6.6"])
        #expect(try dig(world, as: world.child, "blocked.test").status == "NXDOMAIN")
        // A changed DoH list reaches the rules on SIGHUP, with the users unchanged.
        try "203.0.113.99\n".write(toFile: world.directory + "/doh.list", atomically: true, encoding: .utf8)
        world.signalAgent(SIGHUP)
        var reloaded = false
        for _ in 0..<100 where !reloaded {
            reloaded = try world.firewallRules().contains { $0.contains("-d 203.0.113.99/32") }
            if !reloaded { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(reloaded)
        #expect(try !world.firewallRules().contains { $0.contains("192.0.2.53") })
    }

    @Test func hostilePacketsNeitherCrashTheAgentNorPassAShieldedName() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/hostile-dns.py"
        for server in ["127.0.0.1", "::1"] {
            let result = try world.inNetwork(
                as: world.child, "/usr/bin/python3", [script, server, "blocked.test", "10.2.2.2", "200"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("leaks 0"), "\(result.stdout)")
            #expect(!result.stdout.contains("leak "), "\(result.stdout)")
            #expect(result.stdout.contains("sent "))
        }
        #expect(world.agentIsRunning)
        #expect(try dig(world, as: world.child, "allowed.test").addresses == ["10.1.1.1"])
        #expect(try dig(world, as: world.child, "blocked.test").status == "NXDOMAIN")
        // The same script as a bystander does get the shielded address back: the script can
        // tell a leak when there is one.
        let control = try world.inNetwork(
            as: world.bystander, "/usr/bin/python3", [script, "127.0.0.1", "blocked.test", "10.2.2.2", "5"])
        #expect(!control.stdout.contains("leaks 0"), "\(control.stdout)")
    }

    /// Finding 11 of the hardening issue: an allowed name whose answer is an alias of a shielded
    /// one (`video.allowed.test CNAME cdn.blocked.test`, and its address) handed the child the
    /// shielded address. The replies to the child are judged too.
    @Test func anAliasIntoAShieldedDomainIsAnsweredNXDOMAIN() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        // Root gets the alias and the shielded address: the resolver does answer it.
        let root = try dig(world, as: nil, "video.allowed.test")
        #expect(root.addresses == ["10.2.2.3"], "\(root.output)")
        for tcp in [false, true] {
            let child = try dig(world, as: world.child, "video.allowed.test", tcp: tcp)
            #expect(!child.addresses.contains("10.2.2.3"), "tcp \(tcp): \(child.output)")
            if !tcp { #expect(child.status == "NXDOMAIN", "\(child.output)") }
        }
        let getent = try world.inNetwork(as: world.child, "/usr/bin/getent", ["hosts", "video.allowed.test"])
        #expect(getent.status != 0 && !getent.stdout.contains("10.2.2.3"))
        // Allowed names, aliases or not, still resolve for the child; the bystander's are untouched.
        #expect(try dig(world, as: world.child, "www.allowed.test").addresses == ["10.1.1.1"])
        #expect(try dig(world, as: world.bystander, "video.allowed.test").addresses == ["10.2.2.3"])
        let status = try world.status(of: world.child)
        let names = Set((status.domainShield?.recentLookups ?? []).compactMap { status.names[$0.token]?.identity })
        #expect(names.contains("blocked.test"), "\(names)")
    }

    /// A DNS server of hers (one on the internet), in the world's namespace: a python3 script,
    /// run until `stop`.
    func herServer(_ world: AgentWorld, _ script: String, _ arguments: String...) throws -> Process {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        server.arguments = ["netns", "exec", world.namespace ?? "", "/usr/bin/python3", "-c", script] + arguments
        try server.run()
        return server
    }

    func stop(_ server: Process) {
        kill(server.processIdentifier, SIGKILL)
        _ = AgentWorld.ended(server, within: 10)
    }

    /// The DNS fast path, with a real child's lookups: a question the agent judged (an allowed
    /// name, answered by its addresses) is asked again in the kernel, its answer read there; a
    /// server that answers it with an alias into a shielded name gets nothing through, and the
    /// name goes back to the queue; a guardian's change takes it off at once; the lookups the
    /// kernel passed are in the report.
    @Test func aQuestionJudgedOnceIsAskedAgainInTheKernelUntilItsAnswerOrAFilterChanges() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        // Her questions (her uid, her subordinate ones), a resolver's answers on loopback, and
        // answers from elsewhere, let go untracked in the raw table; nothing of the fast path in
        // the filter table.
        let raw = try world.firewallRules(table: "raw").filter {
            $0.contains("-p udp") && $0.contains("-m bpf --object-pinned")
        }
        #expect(raw.filter { $0.contains("--dport 53 -m owner") }.count >= 1, "\(raw)")
        #expect(raw.filter { $0.contains("--sport 53") }.count == 2, "\(raw)")
        #expect(try !world.firewallRules().contains { $0.contains("-p udp") && $0.contains("-m bpf") })
        func passedInTheKernel() throws -> [Int] { try fastPathCounts(world) }
        // Her lookups of the name, each counted in the report however it went.
        var asked = 0
        func ask(_ server: String = "127.0.0.1", timeout: Int = 3) throws -> Lookup {
            asked += 1
            return try dig(world, as: world.child, "www.allowed.test", server: server, timeout: timeout)
        }
        // Judged in the queue once, then `times` lookups in the kernel, both ways. A round a
        // change of her filter met (the table voided) is tried again.
        func roundInTheKernel(_ times: Int) throws -> Bool {
            for _ in 0..<5 {
                #expect(try ask().addresses == ["10.1.1.1"])
                let before = try passedInTheKernel()
                for _ in 0..<times { #expect(try ask().addresses == ["10.1.1.1"]) }
                let after = try passedInTheKernel()
                if after == before.map({ $0 + times }) { return true }
            }
            return false
        }
        // The first lookup is judged in the queue; the next five pass in the kernel, both ways.
        #expect(try ask().addresses == ["10.1.1.1"])
        #expect(try passedInTheKernel() == [0, 0])
        #expect(try roundInTheKernel(5), "\(world.queueAndCounters())")
        // A change of her policy that leaves her web filter as it was (an app category shielded)
        // leaves the table as it was: her next lookup passes in the kernel, both ways. (It was
        // voided by every policy published, a sibling's time limit or a new user on the system.)
        try guardian(world, "shield", "--user", world.child, "--app-category", "Game")
        let kept = try passedInTheKernel()
        #expect(try ask().addresses == ["10.1.1.1"])
        #expect(try passedInTheKernel() == kept.map { $0 + 1 }, "\(world.queueAndCounters())")
        // A shielded name is never in the table: each lookup is the filter's.
        let before = try passedInTheKernel()
        for _ in 0..<2 { #expect(try dig(world, as: world.child, "blocked.test").status == "NXDOMAIN") }
        #expect(try passedInTheKernel() == before)

        // A server of hers (127.0.0.2) answers the same question with an alias into the shielded
        // domain and its address. The question passes in the kernel; the answer does not, nor
        // reaches her: it goes to the queue, which knows no such question of hers. Her next one
        // is judged in the queue again, and its answer is the filter's.
        let server = try herServer(
            world,
            """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.2", 53))
            target = b"\\x03cdn\\x07blocked\\x04test\\x00"
            while True:
                q, peer = s.recvfrom(512)
                end = q.index(0, 12) + 5
                a = q[:2] + bytes.fromhex("81800001000200000000") + q[12:end]
                a += bytes.fromhex("c00c000500010000003c") + len(target).to_bytes(2, "big") + target
                a += target + bytes.fromhex("000100010000003c00040a020203")
                s.sendto(a, peer)
            """)
        defer { stop(server) }
        var hers = try dig(world, as: nil, "www.allowed.test", server: "127.0.0.2")
        for _ in 0..<50 where hers.addresses.isEmpty {
            Thread.sleep(forTimeInterval: 0.1)
            hers = try dig(world, as: nil, "www.allowed.test", server: "127.0.0.2")
        }
        #expect(hers.addresses == ["10.2.2.3"], "her server answers root with the alias: \(hers.output)")
        #expect(try roundInTheKernel(1))
        let cached = try passedInTheKernel()
        let aliased = try ask("127.0.0.2", timeout: 1)
        let afterAlias = try passedInTheKernel()
        // (Dropped; or, had a rebuild just voided the table, judged in the queue: NXDOMAIN.)
        #expect(aliased.addresses.isEmpty && aliased.status != "NOERROR", "\(aliased.output)")
        #expect(afterAlias[1] == cached[1] && afterAlias[0] <= cached[0] + 1)
        let judged = try ask("127.0.0.2")
        #expect(judged.status == "NXDOMAIN" && judged.addresses.isEmpty, "\(judged.output)")
        #expect(try passedInTheKernel()[1] == cached[1], "no answer of her server's passed in the kernel")

        // From the PC's resolver again: judged once, then in the kernel.
        #expect(try roundInTheKernel(1))
        // The guardian shields it: her very next lookup is the filter's.
        // (The rules are installed again with the change, their counters from zero.)
        try guardian(world, "shield", "--user", world.child, "--domain", "allowed.test")
        let counted = try passedInTheKernel()
        let shielded = try ask()
        #expect(shielded.status == "NXDOMAIN", "\(shielded.output)")
        #expect(try passedInTheKernel() == counted)
        // Every lookup of hers is in the report: those judged in the queue, and those passed in
        // the kernel (counted when the guardian's change voided their entries, or when the name
        // came back).
        var report = ""
        for _ in 0..<50 {
            report = try world.cli(as: world.guardian, "report", "--user", world.child, "--today").stdout
            if report.contains("allowed.test  \(asked) lookups") { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(report.contains("allowed.test  \(asked) lookups"), "\(asked) lookups: \(report)")
        #expect(world.agentIsRunning)
    }

    /// A datagram sent in segments (UDP_SEGMENT) is seen whole by the rules and split after. A
    /// first message ending in an EDNS record whose length covers the segments after it once
    /// carried them past the fast path's test, which reads one message (the attack on the
    /// installed agent): her server's second segment, an alias into a shielded name with its
    /// address, reached her; her second segment, a shielded question, reached her server. Such a
    /// datagram now goes to the queue, which is given each segment.
    @Test func aDatagramSentInSegmentsNeverRidesTheFastPath() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        // Her server on 127.0.0.2: notes each question's name, and answers in segments: a clean
        // answer whose EDNS record spans the second segment, an alias into the shielded domain.
        let seen = world.directory + "/seen.txt"
        let server = try herServer(
            world,
            """
            import socket, struct, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.2", 53))
            log = open(sys.argv[1], "a")
            def name(b, at):
                labels = []
                while b[at]:
                    labels.append(b[at + 1:at + 1 + b[at]].decode()); at += 1 + b[at]
                return ".".join(labels), at + 1
            target = b"\\x03cdn\\x07blocked\\x04test\\x00"
            while True:
                q, peer = s.recvfrom(4096)
                n, end = name(q, 12)
                log.write("%s %04x\\n" % (n, int.from_bytes(q[:2], "big"))); log.flush()
                question = q[12:end + 4]
                clean = q[:2] + bytes.fromhex("81800001000100000001") + question
                clean += bytes.fromhex("c00c000100010000003c00040a010101")
                bad = q[:2] + bytes.fromhex("81800001000200000000") + question
                bad += bytes.fromhex("c00c000500010000003c") + len(target).to_bytes(2, "big") + target
                bad += target + bytes.fromhex("000100010000003c00040a020203")
                size = max(len(clean) + 11, len(bad))
                first = clean + b"\\x00" + struct.pack(">HHIH", 41, 1232, 0, size - len(clean) - 11 + len(bad))
                first += bytes(size - len(first))
                try:
                    s.setsockopt(socket.SOL_UDP, 103, size)
                    s.sendto(first + bad, peer)
                    s.setsockopt(socket.SOL_UDP, 103, 0)
                except OSError as e:
                    log.write("not sent: %s\\n" % e); log.flush()
            """, seen)
        defer { stop(server) }
        // The name is on the fast path (judged once through the PC's resolver).
        #expect(try dig(world, as: world.child, "www.allowed.test").addresses == ["10.1.1.1"])
        #expect(try dig(world, as: world.child, "www.allowed.test").addresses == ["10.1.1.1"])
        // Her side: one send, in segments, of that question (its EDNS record spanning the rest)
        // and a shielded one, to her server; then what comes back, every datagram.
        let script = """
            import socket, struct, sys, time
            def query(id, name):
                wire = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\\x00"
                return struct.pack(">HHHHHH", id, 0x0100, 1, 0, 0, 0) + wire + b"\\x00\\x01\\x00\\x01"
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(1.5)
            if sys.argv[1] == "smuggle":
                first = bytearray(query(0x1111, "www.allowed.test")); first[10:12] = b"\\x00\\x01"
                second = query(0x2222, "www.blocked.test")
                size = max(len(first) + 11, len(second))
                first += b"\\x00" + struct.pack(">HHIH", 41, 1232, 0, size - len(first) - 11 + len(second))
                first += bytes(size - len(first))
                s.setsockopt(socket.SOL_UDP, 103, size)
                s.sendto(bytes(first) + second, ("127.0.0.2", 53))
            else:
                s.sendto(query(0x3333, "www.allowed.test"), ("127.0.0.2", 53))
            got = []
            try:
                while True: got.append(s.recv(4096).hex())
            except socket.timeout: pass
            print(" ".join(got))
            """
        let smuggled = try world.inNetwork(as: world.child, "/usr/bin/python3", ["-c", script, "smuggle"])
        let answered = try world.inNetwork(as: world.child, "/usr/bin/python3", ["-c", script, "answer"])
        let names = (try? String(contentsOfFile: seen, encoding: .utf8)) ?? ""
        // Her server never heard her shielded question (the agent's own lookup of the name, to
        // learn its addresses, is another, with an ID of its own); she never got the alias or its
        // address.
        #expect(!names.contains("www.blocked.test 2222"), "her server heard: \(names)")
        for reply in [smuggled.stdout, answered.stdout] {
            #expect(!reply.contains("0a020203") && !reply.contains("03636e64"), "she received: \(reply)")
        }
        #expect(smuggled.status == 0 && answered.status == 0, "\(smuggled.stderr) \(answered.stderr)")
        // (Her unsegmented question did reach her server: the test can see what it hears.)
        #expect(names.contains("www.allowed.test 3333"), "her server heard: \(names)")
        #expect(world.agentIsRunning)
    }

    /// Questions of hers shaped to ride the fast path's entry for a name without being its
    /// question: the name in another case, a shielded second question after it, bytes after it.
    /// None passes in the kernel (its table is byte for byte, one question, nothing after); the
    /// queue judges each, and the shielded name's address never comes back. (Tried by hand by the
    /// attack of 2026-11-29, and in the kernel's test run on crafted frames; here as a real child.)
    @Test func herCraftedQuestionsNeverRideTheFastPath() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        func inTheKernel() throws -> [Int] { try fastPathCounts(world) }
        // The name on the fast path: judged once, then asked in the kernel. (A rebuild voids the
        // table: another test's new user publishes the policy again; tried again then.)
        var onFastPath = false
        for _ in 0..<5 where !onFastPath {
            #expect(try dig(world, as: world.child, "www.allowed.test").addresses == ["10.1.1.1"])
            let before = try inTheKernel()
            #expect(try dig(world, as: world.child, "www.allowed.test").addresses == ["10.1.1.1"])
            onFastPath = try inTheKernel() == before.map { $0 + 1 }
        }
        #expect(onFastPath, "\(world.queueAndCounters())")
        let script = """
            import socket, struct, sys
            def question(name):
                wire = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\\x00"
                return wire + b"\\x00\\x01\\x00\\x01"
            if sys.argv[1] == "case":
                body, count = question("www.ALLOWED.test"), 1
            elif sys.argv[1] == "second":
                body, count = question("www.allowed.test") + question("www.blocked.test"), 2
            else:
                body, count = question("www.allowed.test") + bytes(16), 1
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(1.5)
            s.sendto(struct.pack(">HHHHHH", 0x4242, 0x0100, count, 0, 0, 0) + body, ("127.0.0.1", 53))
            try:
                print(s.recv(4096).hex())
            except socket.timeout:
                print("none")
            """
        for kind in ["case", "second", "trailing"] {
            let unmoved = try passesNothingInTheKernel(inTheKernel) {
                let reply = try world.inNetwork(as: world.child, "/usr/bin/python3", ["-c", script, kind])
                #expect(reply.status == 0, "\(kind): \(reply.stderr)")
                #expect(!reply.stdout.contains("0a020202"), "\(kind): \(reply.stdout)")
                // The name in another case is judged, and allowed: the queue answered it.
                if kind == "case" { #expect(reply.stdout.contains("0a010101"), "\(reply.stdout)") }
            }
            #expect(unmoved, "\(kind) passed in the kernel")
        }
        #expect(world.agentIsRunning)
    }

    /// The packets the DNS fast path let go untracked in the kernel so far: questions (the raw
    /// table's `bpf` rules for port 53) and answers (its rules for answers, from a resolver on
    /// loopback or from elsewhere).
    func fastPathCounts(_ world: AgentWorld, ipv6: Bool = false) throws -> [Int] {
        let raw = world.chain + "-raw"
        return [
            try world.packetsCounted(in: raw, table: "raw", ipv6: ipv6) { $0.contains("bpf") && $0.contains("dpt:53") },
            try world.packetsCounted(in: raw, table: "raw", ipv6: ipv6) { $0.contains("bpf") && $0.contains("spt:53") }
                + world.packetsCounted(in: world.chain + "-rawin", table: "raw", ipv6: ipv6) { $0.contains("bpf") },
        ]
    }

    /// Whether what `body` does moves none of the kernel's counters that `counted` reads. A
    /// rebuild of the rules meanwhile (another test's new user publishes the policy again)
    /// starts them from zero: seen as a counter gone down, the round is tried again (five times
    /// at most), so a question that did pass in the kernel is never hidden by one.
    func passesNothingInTheKernel(_ counted: () throws -> [Int], _ body: () throws -> Void) throws -> Bool {
        for _ in 0..<5 {
            let before = try counted()
            try body()
            let after = try counted()
            if after == before { return true }
            if zip(after, before).allSatisfy({ $0 >= $1 }) { return false }
        }
        return false
    }

    /// The fast path over IPv6 and past the length its table holds, with a real child's lookups:
    /// a question to the resolver's IPv6 address is judged once, then asked in the kernel (the
    /// IPv6 rules' counters); a shielded name and the allowed one in another case never pass
    /// there. A name longer than the table's 128 bytes is judged in the queue each time and
    /// answered, and a shielded one that shares its first 128 bytes is refused: neither passes
    /// in the kernel. (Before, these were tried only in the kernel's test run on crafted frames.)
    @Test func overIPv6AndPastItsLengthTheFastPathHolds() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        func inTheKernel(ipv6: Bool) -> () throws -> [Int] { { try fastPathCounts(world, ipv6: ipv6) } }
        #expect(
            try world.firewallRules(table: "raw", ipv6: true).filter {
                $0.contains("-p udp") && $0.contains("-m bpf --object-pinned") && $0.contains("--sport 53")
            }.count == 2)
        // Over IPv6: judged once, then in the kernel, both ways.
        var onFastPath = false
        for _ in 0..<5 where !onFastPath {
            #expect(try dig(world, as: world.child, "www.allowed.test", server: "::1").addresses == ["10.1.1.1"])
            let before = try inTheKernel(ipv6: true)()
            #expect(try dig(world, as: world.child, "www.allowed.test", server: "::1").addresses == ["10.1.1.1"])
            onFastPath = try inTheKernel(ipv6: true)() == before.map { $0 + 1 }
        }
        #expect(onFastPath, "\(world.queueAndCounters())")
        let shielded = try passesNothingInTheKernel(inTheKernel(ipv6: true)) {
            let refused = try dig(world, as: world.child, "www.blocked.test", server: "::1")
            #expect(refused.status == "NXDOMAIN", "\(refused.output)")
            let otherCase = try dig(world, as: world.child, "www.ALLOWED.test", server: "::1")
            #expect(otherCase.addresses == ["10.1.1.1"], "\(otherCase.output)")
        }
        #expect(shielded, "a shielded name, or the allowed one in another case, passed in the kernel over IPv6")

        // Past the table's length (193 bytes on the wire), over IPv4 and IPv6: each lookup is the
        // queue's, answered; the shielded one with the same first 128 bytes is refused.
        let prefix =
            String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "."
            + String(repeating: "c", count: 50)
        for (server, ipv6) in [("127.0.0.1", false), ("::1", true)] {
            let long = try passesNothingInTheKernel(inTheKernel(ipv6: ipv6)) {
                for _ in 0..<3 {
                    let allowed = try dig(world, as: world.child, prefix + ".allowed.test", server: server)
                    #expect(allowed.addresses == ["10.1.1.1"], "\(allowed.output)")
                    let refused = try dig(world, as: world.child, prefix + ".blocked.test", server: server)
                    #expect(refused.status == "NXDOMAIN" && refused.addresses.isEmpty, "\(refused.output)")
                }
            }
            #expect(long, "a name past the table's length passed in the kernel (\(server))")
        }
        #expect(world.agentIsRunning)
    }

    /// Her lookups go on while the fast path's entries run out and are made again: dnsperf as a
    /// real child for 45 s (past the entries' 30 s) at 2,000 questions a second, names allowed,
    /// no limit: none lost. (Before, in the seconds after an entry ran out her questions came to
    /// the queue while their replies still passed in the kernel; remembered and never answered
    /// here, they filled her bound, and the replies that then came here were dropped: under
    /// dnsperf, every lookup of hers failed for about ten seconds.)
    func herLookupsGoOnWhileTheFastPathsEntriesAreMadeAgain() throws {
        let world = try AgentWorld(network: true, configuration: ["dnsRateLimit": "0"])
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        let names = world.directory + "/names.txt"
        try (1...200).map { "host\($0).allowed.test A" }.joined(separator: "\n")
            .write(toFile: names, atomically: true, encoding: .utf8)
        let run = try world.inNetwork(
            as: world.child, "/usr/bin/dnsperf",
            ["-s", "127.0.0.1", "-d", names, "-l", "45", "-c", "2", "-q", "50", "-Q", "2000"])
        func figure(_ label: String) -> Int? {
            run.stdout.split(separator: "\n").first { $0.contains(label) }?
                .split(separator: " ").dropFirst(2).first.flatMap { Int($0) }
        }
        let (sent, lost) = (figure("Queries sent:"), figure("Queries lost:"))
        #expect((sent ?? 0) > 45 * 1_500, "\(run.stdout) \(run.stderr)")
        #expect(lost == 0, "\(run.stdout)\n\(world.queueAndCounters())")
        #expect(world.agentIsRunning)
    }

    /// A world whose child and a sibling (shielded from `blocked.test`) are authorized: the
    /// flood tests time the sibling's lookups while the child floods.
    func worldWithASibling() throws -> (AgentWorld, String) {
        let world = try AgentWorld(network: true)
        do {
            let sibling = try world.makeUser("stsib")
            try guardian(world, "authorize", "--child", world.child)
            try guardian(world, "authorize", "--child", sibling)
            try guardian(world, "shield", "--user", sibling, "--domain", "blocked.test")
            return (world, sibling)
        } catch {
            world.tearDown()
            throw error
        }
    }

    /// A child's question leaves its mark on the UDP flow (her ports to the resolver) after she
    /// closes her socket, for as long as conntrack keeps it: a lookup of someone else's from the
    /// same ports was then queued at its reply and dropped as answering no filtered user. A
    /// child sending from the ports others would use made their lookups fail (the attack on the
    /// installed agent: 47 of 200 of a bystander's lookups failed, getent took 10 to 20 s). Now a
    /// question not hers takes the mark off, and its answer comes.
    @Test func aChildsClosedLookupLeavesNoTrapOnItsPortsForOthers() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", int(sys.argv[1])))
            s.settimeout(3)
            q = bytes.fromhex("abcd01000001000000000000") + b"\\x07allowed\\x04test\\x00\\x00\\x01\\x00\\x01"
            s.sendto(q, ("127.0.0.1", 53))
            print("answered" if s.recv(512)[:2] == q[:2] else "other")
            s.close()
            """
        for (index, user) in [world.bystander, nil].enumerated() {
            let port = Int.random(in: 40_000...59_000) + index
            let hers = try world.inNetwork(as: world.child, "/usr/bin/python3", ["-c", script, "\(port)"])
            #expect(hers.stdout == "answered\n", "\(hers.stdout) \(hers.stderr)")
            let theirs = try dig(world, as: user, "allowed.test", from: "127.0.0.1#\(port)")
            #expect(
                theirs.status == "NOERROR" && theirs.addresses == ["10.1.1.1"],
                "\(user ?? "root") from the child's ports: \(theirs.output)")
            // And her next question from those ports is hers again: judged, a shielded name refused.
            let again = try dig(world, as: world.child, "blocked.test", from: "127.0.0.1#\(port)")
            #expect(again.status == "NXDOMAIN", "\(again.output)")
        }
        #expect(world.agentIsRunning)
    }

    /// A burst of lookups waiting in the queue together is judged together, and its verdicts go
    /// back to the kernel together (several in one message): each question still gets its own
    /// answer, an allowed name its address and a shielded one NXDOMAIN written in its place, and
    /// none is lost or answered as another.
    @Test func aBurstOfLookupsIsAnsweredEachByItsOwnVerdict() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        for round in 0..<3 {
            let burst = try world.inNetwork(
                as: world.child, "/usr/bin/python3", [AgentWorld.fixture("dns-burst.py"), "127.0.0.1", "300"])
            #expect(burst.stdout == "right 300\nwrong 0\nnever 0\n", "round \(round): \(burst.stdout) \(burst.stderr)")
            // The child's limit (a burst of 1,000, then 200 a second) is not what is tested.
            Thread.sleep(forTimeInterval: 1.5)
        }
        #expect(world.agentIsRunning)
    }

    /// Finding 11: one child's flood of queries made another child's lookups fail through the
    /// shared queue. Each user's DNS is limited before the queue: a flood slows only its sender.
    @Test func aChildFloodingTheQueueSlowsOnlyItself() throws {
        let (world, sibling) = try worldWithASibling()
        defer { world.tearDown() }
        let output = world.directory + "/flood.out"
        var flood: Int32 = 0
        if let namespace = world.namespace {
            flood = try world.launch(
                as: nil, "/usr/sbin/ip",
                [
                    "netns", "exec", namespace, "/usr/bin/setpriv", "--reuid=\(world.child)", "--regid=users",
                    "--init-groups", "--", "/usr/bin/python3", AgentWorld.fixture("dns-flood.py"), "127.0.0.1", "4",
                ], output: output)
        }
        Thread.sleep(forTimeInterval: 0.5)
        // Meanwhile, every lookup of the sibling is answered, and judged. (Within 4 s each: beside
        // other suites on two cores, 2 of 40 once took longer than 2 s.)
        var answered = 0
        for _ in 0..<20 {
            if try dig(world, as: sibling, "www.allowed.test", timeout: 4).addresses == ["10.1.1.1"] { answered += 1 }
            if try dig(world, as: sibling, "blocked.test", timeout: 4).status == "NXDOMAIN" { answered += 1 }
        }
        #expect(answered == 40)
        #expect(world.wait(flood, seconds: 30) == 0)
        let report = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let numbers = Dictionary(
            uniqueKeysWithValues: report.split(separator: "\n").compactMap { line -> (String, Int)? in
                let fields = line.split(separator: " ")
                return fields.count == 2 ? (String(fields[0]), Int(fields[1]) ?? 0) : nil
            })
        // The flood was tried, and no more of it than the child's limit went through: 200 a
        // second and a burst of 1,000 over four seconds (the rest fails in sendto, EPERM).
        #expect((numbers["tried"] ?? 0) > 10_000, "\(report)")
        #expect((numbers["sent"] ?? .max) <= 200 * 5 + 1_000, "\(report)")
        #expect((numbers["answered"] ?? .max) <= (numbers["sent"] ?? 0), "\(report)")
        #expect(world.agentIsRunning)
    }

    /// A server of the child's that answered one question 80,000 times a second took 6.4 s of
    /// the agent's CPU in 12 s and slowed another child's lookups from 0.7 to 11 ms (restrictions,
    /// second round). Its replies now come to the queue only as far as judging needs; the rest
    /// stay in the kernel, and the sibling's lookups are all answered meanwhile. (Run `Alone`: a
    /// flood needs the CPU, and beside 34 other tests its sender made 14,000 replies in 5 s.)
    func aFloodOfRepliesFromHerOwnServerStaysInTheKernel() throws {
        let (world, sibling) = try worldWithASibling()
        defer { world.tearDown() }
        let namespace = try #require(world.namespace)
        try system("/usr/sbin/ip", "-n", namespace, "addr", "add", "10.6.6.9/32", "dev", "lo")
        let ready = world.directory + "/reply-flood.ready"
        let output = world.directory + "/reply-flood.out"
        let server = try world.launch(
            as: nil, "/usr/sbin/ip",
            [
                "netns", "exec", namespace, "/usr/bin/python3", AgentWorld.fixture("reply-flood.py"), "10.6.6.9", "5",
                ready,
            ],
            output: output)
        for _ in 0..<250 where !Files.exists(ready) { Thread.sleep(forTimeInterval: 0.02) }
        let before = try world.agentCPUSeconds()
        // Her one question starts the flood.
        _ = try dig(world, as: world.child, "anything.test", server: "10.6.6.9", timeout: 1)
        var answered = 0
        var slowest = 0.0
        for _ in 0..<20 {
            let lookup = try dig(world, as: sibling, "www.allowed.test", timeout: 2)
            if lookup.addresses == ["10.1.1.1"] { answered += 1 }
            slowest = max(slowest, lookup.seconds)
        }
        #expect(answered == 20)
        #expect(world.wait(server, seconds: 30) == 0)
        let sent =
            Int(
                ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(
                    in: .whitespacesAndNewlines)) ?? 0
        // A flood: 10,000 a second, fifty times what her limit lets through a flow (200 a second).
        // Alone it sends 280,000–330,000 in its 5 s.
        #expect(sent > 50_000, "the flood: \(sent) replies sent")
        // What reached the queue, by the kernel's own count of the rule that queues replies.
        let listing = try world.inNetwork(
            as: nil, "/usr/sbin/iptables", ["-w", "-L", world.chain + "-in", "-v", "-x", "-n"])
        let queued = listing.stdout.split(separator: "\n").first { $0.contains("NFQUEUE") && $0.contains("udp spt:53") }
            .flatMap { $0.split(separator: " ").first.flatMap { Int($0) } }
        // Per flow no more than her 200 questions a second (a burst of 1,000) could have asked.
        #expect((queued ?? .max) <= 1_000 + 200 * 8, "\(queued ?? -1) replies queued of \(sent): \(listing.stdout)")
        print(
            "reply flood: \(sent) replies sent, \(queued ?? -1) queued; agent CPU "
                + "\(String(format: "%.2f", try world.agentCPUSeconds() - before)) s; the sibling's slowest lookup "
                + "\(String(format: "%.1f", slowest * 1000)) ms")
        #expect(world.agentIsRunning)
    }
}

extension DomainShieldIntegrationTests {
    /// Her lookups at a steady 2,000 a second for 45 s, and a flood of replies: on a machine
    /// shared with other tests the rates are not reached and the replies are late, so they run
    /// with none beside them (`scripts/run-tests` runs every `Alone` suite by itself).
    @Suite(.threadsOfTheirOwn, .serialized, .enabled(if: isRoot, "needs root: namespaces, users, the agent"))
    struct Alone {
        @Test func herLookupsGoOnWhileTheFastPathsEntriesAreMadeAgain() throws {
            try DomainShieldIntegrationTests().herLookupsGoOnWhileTheFastPathsEntriesAreMadeAgain()
        }

        @Test func aFloodOfRepliesFromHerOwnServerStaysInTheKernel() throws {
            try DomainShieldIntegrationTests().aFloodOfRepliesFromHerOwnServerStaysInTheKernel()
        }
    }
}
