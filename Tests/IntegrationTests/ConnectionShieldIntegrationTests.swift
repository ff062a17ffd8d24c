import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// Web shields at the connection, for real: a real child's curl, openssl and Python clients
/// connect to real HTTPS, HTTP and UDP servers in the world's network namespace, past the DNS
/// filter (`--resolve`, an address written in by hand); the agent's queue judges what each
/// connection opens with.
///
/// Its tests run side by side: each world has its own network namespace, queue, chain, mark and
/// users.
@Suite(
    .threadsOfTheirOwn,
    .enabled(if: isRoot, "needs root: network namespaces, iptables, NFQUEUE, dnsmasq, users")
)
struct ConnectionShieldIntegrationTests {
    func guardian(_ world: AgentWorld, _ arguments: String...) throws {
        let result = try world.cli(as: world.guardian, arguments: arguments)
        guard result.status == 0 else { throw WorldError("\(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    /// A world whose child has `blocked.test` and `play.other.test` shielded, with web servers.
    func shieldedWorld(configuration: [String: String] = [:]) throws -> AgentWorld {
        let world = try AgentWorld(network: true, configuration: configuration)
        do {
            try world.startWebServers()
            try guardian(world, "authorize", "--child", world.child)
            try guardian(
                world, "shield", "--user", world.child, "--domain", "blocked.test", "--domain", "play.other.test")
        } catch {
            world.tearDown()
            throw error
        }
        return world
    }

    /// web-child.py run as the child in the world's namespace, in the background, what it prints
    /// going to `output`: a program the test acts on while it runs.
    func backgroundChild(_ world: AgentWorld, _ arguments: [String], output: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c",
            "exec /usr/sbin/ip netns exec \(world.namespace ?? "") /usr/bin/setpriv --reuid=\(world.child) --regid=users"
                + " --init-groups -- /usr/bin/python3 \(AgentWorld.fixture("web-child.py")) "
                + arguments.joined(separator: " ") + " > \(output) 2>&1 < /dev/null",
        ]
        try process.run()
        return process
    }

    /// curl as `user`: its exit status, what it printed, and how long it took.
    func curl(
        _ world: AgentWorld, as user: String?, _ arguments: String...
    ) throws -> (
        status: Int32, body: String, seconds: Double
    ) {
        let start = ContinuousClock.now
        let result = try world.inNetwork(
            as: user, "/usr/bin/curl", ["-sk", "--max-time", "8", "--noproxy", "*"] + arguments)
        let elapsed = (ContinuousClock.now - start).components
        return (result.status, result.stdout, Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
    }

    func child(_ world: AgentWorld, _ arguments: String...) throws -> String {
        let result = try world.inNetwork(
            as: world.child, "/usr/bin/python3", [AgentWorld.fixture("web-child.py")] + arguments)
        guard result.status == 0 else { throw WorldError("web-child \(arguments): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aShieldedNameIsRefusedAtTheConnectionWhateverResolvedIt() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        // curl --resolve: no DNS at all. The shielded name fails at once (reset), in both
        // families; an allowed name on the same address is served.
        for address in ["10.1.1.1", "[fd00::1]"] {
            for name in ["blocked.test", "video.BLOCKED.test", "play.other.test", "x.play.other.test"] {
                let refused = try curl(
                    world, as: world.child, "--resolve", "\(name):443:\(address)", "https://\(name)/")
                #expect(refused.status != 0 && !refused.body.contains("https"), "\(name) via \(address): \(refused)")
                // A reset, not a timeout (curl's 28 at its --max-time), however loaded the machine.
                #expect(refused.status != 28, "\(name): \(refused.seconds) s: a reset, not a timeout")
            }
            for name in ["www.allowed.test", "mail.other.test", "other.test"] {
                let allowed = try curl(
                    world, as: world.child, "--resolve", "\(name):443:\(address)", "https://\(name)/")
                #expect(allowed.status == 0 && allowed.body == "https \(name)\n", "\(name) via \(address): \(allowed)")
            }
        }
        // A passed opening costs one trip through the queue, its own: the server's acknowledgement
        // of it came to the agent as a copy in the log (the log rule counted it, in each family),
        // and the flows were passed (their later packets counted by the passed flows' rule).
        for ipv6 in [false, true] {
            let logged = try world.packetsCounted(in: world.chain + "-in", ipv6: ipv6) { $0.contains("NFLOG") }
            #expect(logged >= 3, "IPv\(ipv6 ? 6 : 4): \(logged) server packets logged")
            let passed = try world.packetsCounted(in: world.chain, ipv6: ipv6) {
                $0.contains("RETURN") && $0.contains("connmark match") && !$0.contains("u32")
                    && !$0.contains("length")
            }
            #expect(passed >= 3, "IPv\(ipv6 ? 6 : 4): \(passed) packets of passed flows")
        }
        // openssl s_client naming the shielded host is refused; naming an allowed one it is served.
        func sClient(_ name: String) throws -> CommandResult {
            try world.inNetwork(
                as: world.child, "/bin/sh",
                [
                    "-c",
                    "echo | timeout 8 /usr/bin/openssl s_client -connect 10.1.1.1:443 -servername \(name) 2>&1",
                ])
        }
        let refused = try sClient("blocked.test")
        #expect(refused.status != 0 && !refused.stdout.contains("BEGIN CERTIFICATE"), "\(refused.stdout)")
        let served = try sClient("allowed.test")
        #expect(served.stdout.contains("BEGIN CERTIFICATE"), "\(served.stdout)")
        // Plain HTTP: the Host header, an absolute target, a proxy's CONNECT. Each is answered
        // with the block page on the server's behalf (naming the site and why), in both families,
        // then reset; the server never answers.
        for address in ["10.1.1.1", "[fd00::1]"] {
            let host = try curl(world, as: world.child, "-i", "-H", "Host: www.blocked.test", "http://\(address)/")
            #expect(host.status == 0, "\(address): \(host)")
            #expect(host.body.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(address): \(host.body)")
            #expect(host.body.contains("<h1>blocked.test is shielded</h1>"), "\(host.body)")
            #expect(host.body.contains("Your guardian chose to shield this site."), "\(host.body)")
            #expect(!host.body.contains("\nhttp\n"), "the server answered too: \(host.body)")
        }
        let absolute = try child(
            world, "raw", "10.1.1.1", "80",
            Array("GET http://blocked.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n".utf8).hex)
        #expect(absolute == "page")
        let connect = try child(
            world, "raw", "10.1.1.1", "80", Array("CONNECT blocked.test:443 HTTP/1.1\r\n\r\n".utf8).hex)
        #expect(connect == "page")
        let plain = try curl(world, as: world.child, "-H", "Host: allowed.test", "http://10.1.1.1/")
        #expect(plain.status == 0 && plain.body == "http\n", "\(plain)")
        // Root and a bystander reach the shielded site meanwhile.
        for user in [nil, world.bystander] {
            let other = try curl(world, as: user, "--resolve", "blocked.test:443:10.1.1.1", "https://blocked.test/")
            #expect(other.status == 0 && other.body == "https blocked.test\n", "\(user ?? "root"): \(other)")
            let plainOther = try curl(world, as: user, "-H", "Host: blocked.test", "http://10.1.1.1/")
            #expect(plainOther.status == 0, "\(user ?? "root"): \(plainOther)")
        }
        // The refusals are counted as the child's shielded lookups of the domain.
        let status = try world.status(of: world.child)
        let names = Set((status.domainShield?.recentLookups ?? []).compactMap { status.names[$0.token]?.identity })
        #expect(names.contains("blocked.test"), "\(names)")
        // Under the shield's own name, as the guardian wrote it: not other.test.
        #expect(names.contains("play.other.test") && !names.contains("other.test"), "\(names)")
        // And counted by why: 8 curls, s_client and 3 HTTP requests named a shielded host.
        let counted = status.domainShield?.refusedConnections ?? [:]
        #expect((counted["name"] ?? 0) >= 12, "\(counted)")
        let text = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(text.stdout.contains("connections refused since the agent started: name "), "\(text.stdout)")
        #expect(world.agentIsRunning)
    }

    /// Chromium's and Firefox's hellos carry post-quantum key shares and span two segments; the
    /// name may be in the second. Cut at every place around the name, the hello is refused.
    @Test func aHelloSplitAcrossSegmentsIsGatheredAndJudged() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let split = try child(world, "hello", "video.blocked.test", "10.1.1.1", "443", "name")
        #expect(split.hasPrefix("reset "), "\(split)")
        for cut in ["1", "3", "5", "6", "40", "100"] {
            let result = try child(world, "hello", "video.blocked.test", "10.1.1.1", "443", cut)
            #expect(result.hasPrefix("reset "), "cut at \(cut): \(result)")
        }
        // Trickled one byte a segment, the hello is still gathered and judged.
        #expect(try child(world, "trickle", "video.blocked.test", "10.1.1.1", "443", "2").hasPrefix("reset "))
        #expect(try child(world, "trickle", "video.allowed.test", "10.1.1.1", "443", "2").hasPrefix("answered "))
        // The same split hello naming an allowed host is answered (a ServerHello comes back).
        let allowed = try child(world, "hello", "video.allowed.test", "10.1.1.1", "443", "name")
        #expect(allowed.hasPrefix("answered "), "\(allowed)")
        // A service that names nothing (it speaks first, as SSH does) is passed.
        #expect(try child(world, "connect", "10.1.1.1", "2222") == "answered")
    }

    /// The address a child's resolver returned for a shielded name is refused to that child,
    /// whatever name the connection claims, and without any hello at all.
    @Test func anAddressLearnedFromAnAnswerIsRefusedUnderAnotherName() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        // Before: 10.2.2.3 and 10.2.2.2 are served to the child under an allowed name.
        let before = try curl(world, as: world.child, "--resolve", "other.test:443:10.2.2.3", "https://other.test/")
        #expect(before.status == 0, "\(before)")
        // video.allowed.test is an alias of cdn.blocked.test (10.2.2.3): the reply is refused
        // (NXDOMAIN), and the address it carried is noted.
        let alias = try world.inNetwork(
            as: world.child, "/usr/bin/dig", ["+tries=1", "@127.0.0.1", "video.allowed.test"])
        #expect(alias.stdout.contains("NXDOMAIN"), "\(alias.stdout)")
        // The child asks for the shielded name itself: NXDOMAIN at once, and the agent learns
        // its address (10.2.2.2) from the same resolver in the background.
        let direct = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+tries=1", "@127.0.0.1", "blocked.test"])
        #expect(direct.stdout.contains("NXDOMAIN"), "\(direct.stdout)")
        var learned = false
        for _ in 0..<100 where !learned {
            Thread.sleep(forTimeInterval: 0.05)
            learned = try curl(world, as: world.child, "https://10.2.2.2/").status != 0
        }
        #expect(learned, "the shielded name's address is refused once looked up")
        for (name, address) in [("other.test", "10.2.2.3"), ("www.allowed.test", "10.2.2.2")] {
            let refused = try curl(world, as: world.child, "--resolve", "\(name):443:\(address)", "https://\(name)/")
            #expect(refused.status == 7, "\(name) at \(address): refused at the SYN: \(refused)")
        }
        // No hello at all: the nameless service on the same address, and a UDP datagram.
        #expect(try child(world, "connect", "10.2.2.2", "2222") == "refused")
        #expect(try child(world, "udp", "10.2.2.2", "4433", "plain") == "refused")
        // Other addresses, and the bystander on the learned ones, are untouched.
        #expect(try child(world, "connect", "10.1.1.1", "2222") == "answered")
        let bystander = try curl(
            world, as: world.bystander, "--resolve", "other.test:443:10.2.2.3", "https://other.test/")
        #expect(bystander.status == 0, "\(bystander)")
    }

    /// Learned addresses with the resolver a family PC really has, on loopback (issue 39): a
    /// dnsmasq on 127.0.0.53, as systemd-resolved listens, and one on 127.0.0.1 (in place of the
    /// world's), each named by the system's resolv.conf. Each answers the shielded site's names
    /// with loopback addresses, and allowed names that lead to them: a CNAME (which dnsmasq sends
    /// alone, with no address), a DNAME and an HTTPS record's target. Each such answer is
    /// NXDOMAIN for the child and the address behind it is learned (by the agent's own lookup of
    /// the target), as is the shielded name's she asked for herself; the bystander is served.
    @Test(arguments: ["127.0.0.53", "127.0.0.1"])
    func addressesAreLearnedFromAResolverOnLoopback(resolver: String) throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let namespace = try #require(world.namespace)
        if resolver == "127.0.0.1",
            let text = try? String(contentsOfFile: world.directory + "/dnsmasq.pid", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(pid, SIGKILL)  // the world's own, replaced by this test's
            Thread.sleep(forTimeInterval: 0.2)
        }
        func wire(_ name: String) -> String {
            name.split(separator: ".").map { String(format: "%02x", $0.utf8.count) + Array($0.utf8).hex }.joined()
                + "00"
        }
        try system(
            "/usr/sbin/ip", "netns", "exec", namespace, "/usr/sbin/dnsmasq", "--no-resolv", "--no-hosts",
            "--bind-interfaces", "--listen-address=\(resolver)", "--port=53", "--user=root", "--cache-size=0",
            "--address=/blocked.test/127.0.0.80", "--address=/d.blocked.test/127.0.0.82",
            "--address=/s.blocked.test/127.0.0.83", "--address=/blocked.test/::",
            // (dnsmasq sends a CNAME to an --address name alone, with no address.)
            "--cname=alias.test,blocked.test", "--dns-rr=old.test,39,\(wire("d.blocked.test"))",
            "--dns-rr=svc.test,65,0001\(wire("s.blocked.test"))", "--pid-file=\(world.directory)/loopback-resolver.pid")
        defer {
            if let text = try? String(contentsOfFile: world.directory + "/loopback-resolver.pid", encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                kill(pid, SIGKILL)
            }
        }
        if resolver != "127.0.0.1" {
            // The system's resolver is this one now (written in place: the agent sees the file
            // `ip netns exec` mounted over its resolv.conf, and looks at it at most every 5 s).
            let handle = try #require(FileHandle(forWritingAtPath: "/etc/netns/\(namespace)/resolv.conf"))
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data("nameserver \(resolver)\n".utf8))
            try handle.close()
            Thread.sleep(forTimeInterval: 5.5)
        }
        func refused(_ address: String) throws -> Bool {
            try curl(
                world, as: world.child, "--resolve", "other-name.test:443:\(address)", "https://other-name.test/"
            ).status == 7
        }
        for (name, type, address) in [
            ("alias.test", "A", "127.0.0.80"), ("old.test", "DNAME", "127.0.0.82"), ("svc.test", "HTTPS", "127.0.0.83"),
        ] {
            #expect(try !refused(address), "\(address) refused before anything named it")
            let theirs = try world.inNetwork(
                as: world.bystander, "/usr/bin/dig", ["+tries=1", "@\(resolver)", name, type])
            #expect(
                theirs.stdout.contains("status: NOERROR") && theirs.stdout.contains("blocked.test"), "\(theirs.stdout)")
            let hers = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+tries=1", "@\(resolver)", name, type])
            #expect(hers.stdout.contains("NXDOMAIN"), "\(name) \(type) via \(resolver): \(hers.stdout)")
            var learned = false
            for _ in 0..<100 where !learned {
                learned = try refused(address)
                if !learned { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(learned, "\(address), behind \(name) \(type), learned via \(resolver)")
        }
        // The shielded name asked for itself is NXDOMAIN; the bystander reaches every address.
        let direct = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+tries=1", "@\(resolver)", "blocked.test"])
        #expect(direct.stdout.contains("NXDOMAIN"), "\(direct.stdout)")
        for address in ["127.0.0.80", "127.0.0.82", "127.0.0.83"] {
            let served = try curl(
                world, as: world.bystander, "--resolve", "other-name.test:443:\(address)", "https://other-name.test/")
            #expect(served.status == 0, "the bystander at \(address): \(served)")
        }
    }

    /// A resolver the child picks (on 10.6.6.6, standing for a server of her own on the internet)
    /// steers the agent's book of learned addresses: it answers an allowed name with the shielded
    /// site's address, to make that address look shared, and 300 shielded names with 70 addresses
    /// each, to push the site's address out. Neither works: what the system's resolver and the
    /// agent's own lookups said holds, and her answers only ever restrict her.
    @Test func theChildsOwnResolverCannotSteerTheLearnedAddresses() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let ready = world.directory + "/her-resolver.ready"
        try system(
            "/bin/sh", "-c",
            "setsid /usr/sbin/ip netns exec \(world.namespace ?? "") /usr/bin/python3 "
                + "\(AgentWorld.fixture("her-resolver.py")) 10.6.6.6 10.2.2.2 \(ready) > /dev/null 2>&1 < /dev/null &")
        for _ in 0..<250 where !Files.exists(ready) { Thread.sleep(forTimeInterval: 0.02) }
        // The shielded name, asked for: its address is learned as shielded.
        _ = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+tries=1", "@127.0.0.1", "blocked.test"])
        var learned = false
        for _ in 0..<100 where !learned {
            Thread.sleep(forTimeInterval: 0.05)
            learned = try curl(world, as: world.child, "https://10.2.2.2/").status != 0
        }
        #expect(learned)
        let before = try curl(world, as: world.child, "--resolve", "cover.test:443:10.2.2.2", "https://cover.test/")
        #expect(before.status == 7, "refused at the SYN while the address is only the shielded name's: \(before)")
        // Her resolver vouches for the address under another name: it stays the shielded site's.
        let cover = try world.inNetwork(
            as: world.child, "/usr/bin/dig", ["+short", "+tries=1", "@10.6.6.6", "cover.test"])
        #expect(cover.stdout.contains("10.2.2.2"), "\(cover.stdout)")
        let vouched = try curl(world, as: world.child, "--resolve", "cover.test:443:10.2.2.2", "https://cover.test/")
        #expect(vouched.status == 7, "refused at the SYN: \(vouched)")
        #expect(try child(world, "connect", "10.2.2.2", "2222") == "refused")
        // 300 shielded names of hers, 70 addresses each, for a day: the site's address stays.
        let batch = world.directory + "/flood.names"
        try (0..<300).map { "flood\($0).blocked.test" }.joined(separator: "\n").write(
            toFile: batch, atomically: true, encoding: .utf8)
        chmod(batch, 0o644)
        let flood = try world.inNetwork(
            as: world.child, "/usr/bin/dig", ["+tries=1", "+time=1", "@10.6.6.6", "-f", batch])
        #expect(flood.stdout.components(separatedBy: "NXDOMAIN").count > 250, "her flood was answered and judged")
        let nameless = try curl(world, as: world.child, "https://10.2.2.2/")
        #expect(nameless.status != 0 && nameless.body.isEmpty, "after the flood: \(nameless)")
        #expect(try child(world, "connect", "10.2.2.2", "2222") == "refused")
        // The bystander reaches the site throughout.
        let bystander = try curl(
            world, as: world.bystander, "--resolve", "blocked.test:443:10.2.2.2", "https://blocked.test/")
        #expect(bystander.status == 0 && bystander.body == "https blocked.test\n", "\(bystander)")
        #expect(world.agentIsRunning)
    }

    /// QUIC is refused to the child (its send fails at once, so a browser falls back to TCP), on
    /// 443 and on any port by its shape; other UDP passes.
    /// SSH, mail and FTP servers speak first: the client sends nothing until the greeting comes,
    /// which needs the handshake's last ACK to reach the server. Her ACKs pass in the kernel, not
    /// judged (an ACK names nothing); until 2026-11-29 they were dropped by her chain's last rule,
    /// and her SSH and mail hung. Her server-first connection to a shielded name's address is
    /// still refused, at its SYN: the kernel's set of such addresses sends it to the queue, while
    /// her other SYNs pass in the kernel.
    @Test func aServerThatSpeaksFirstReachesTheChild() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let server = try world.inNetwork(
            as: nil, "/usr/bin/python3", [AgentWorld.fixture("web-child.py"), "greeting-server", "2525", "120"])
        #expect(server.stdout.contains("listening"), "\(server.stderr)")
        for address in ["10.1.1.1", "fd00::1"] {
            #expect(try child(world, "greeted", address, "2525") == "greeted", "\(address)")
            let theirs = try world.inNetwork(
                as: world.bystander, "/usr/bin/python3",
                [AgentWorld.fixture("web-child.py"), "greeted", address, "2525"])
            #expect(theirs.stdout.contains("greeted"), "\(address): \(theirs.stdout) \(theirs.stderr)")
        }
        // The shielded name's address (10.2.2.2), once learned from her lookup, refuses the same
        // server at the SYN.
        #expect(try child(world, "greeted", "10.2.2.2", "2525") == "greeted")
        let direct = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+tries=1", "@127.0.0.1", "blocked.test"])
        #expect(direct.stdout.contains("NXDOMAIN"), "\(direct.stdout)")
        var refused = ""
        for _ in 0..<50 where refused != "refused" {
            Thread.sleep(forTimeInterval: 0.1)
            refused = try child(world, "greeted", "10.2.2.2", "2525")
        }
        #expect(refused == "refused")
        #expect(try child(world, "greeted", "10.1.1.1", "2525") == "greeted")
        // The SYN fast path: her SYNs to addresses not learned for shielded names passed in the
        // kernel (the kernel set's rules counted them), and the one to 10.2.2.2 was in the set.
        func synsPassedInTheKernel(ipv6: Bool) throws -> Int {
            let listing = try world.inNetwork(
                as: nil, ipv6 ? "/usr/sbin/ip6tables" : "/usr/sbin/iptables",
                ["-w", "-L", world.chain, "-v", "-x", "-n"])
            return listing.stdout.split(separator: "\n").filter { $0.contains("match-set \(world.chain)-sh") }
                .compactMap { Int($0.split(separator: " ").first ?? "") }.reduce(0, +)
        }
        let passed4 = try synsPassedInTheKernel(ipv6: false)
        let passed6 = try synsPassedInTheKernel(ipv6: true)
        #expect(passed4 >= 3 && passed6 >= 1, "IPv4 \(passed4), IPv6 \(passed6)")
        #expect(try child(world, "greeted", "10.2.2.2", "2525") == "refused")
        #expect(try synsPassedInTheKernel(ipv6: false) == passed4, "the SYN to a learned address came to the queue")
        // Shared, once an allowed name of hers answers with the same address: a connection that
        // names a host she may visit goes through, but the server that speaks first to her, who
        // named nothing, gives her nothing (the fourth attack's finding 2).
        let shared = try world.inNetwork(as: world.child, "/usr/bin/getent", ["hosts", "shared-mirror.test"])
        #expect(shared.stdout.contains("10.2.2.2"), "\(shared.stdout) \(shared.stderr)")
        let named = try curl(
            world, as: world.child, "--resolve", "shared-mirror.test:443:10.2.2.2", "https://shared-mirror.test/")
        #expect(named.status == 0 && named.body == "https shared-mirror.test\n", "\(named)")
        let nameless = try child(world, "greeted", "10.2.2.2", "2525")
        #expect(nameless != "greeted", "a shared address's server spoke first to her: \(nameless)")
        #expect(try child(world, "greeted", "10.1.1.1", "2525") == "greeted")
    }

    @Test func quicIsRefusedAndOtherUDPPasses() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        #expect(try child(world, "udp", "10.1.1.1", "443", "quic") == "refused")
        #expect(try child(world, "udp", "10.1.1.1", "4433", "quic") == "refused")
        #expect(try child(world, "udp", "fd00::1", "4433", "quic") == "refused")
        #expect(try child(world, "udp", "10.1.1.1", "4433", "plain") == "answered")
        #expect(try child(world, "udp", "fd00::1", "4433", "plain") == "answered")
        // A QUIC Initial behind a segment of zeros, in one segmented send (UDP_SEGMENT), on a flow
        // a small datagram passed: the zeros may pass, the Initial never (the bystander's both do).
        for address in ["10.1.1.1", "fd00::1"] {
            let segmented = try child(world, "quic-segmented", address, "4433")
            #expect(
                ["answered echoed 0", "answered echoed 1", "answered refused"].contains(segmented),
                "\(address): \(segmented)")
            let theirs = try world.inNetwork(
                as: world.bystander, "/usr/bin/python3",
                [AgentWorld.fixture("web-child.py"), "quic-segmented", address, "4433"])
            #expect(theirs.stdout.contains("answered echoed 2"), "\(address): \(theirs.stdout) \(theirs.stderr)")
        }
        let quicRefusals = try world.status(of: world.child).domainShield?.refusedConnections?["quic"] ?? 0
        #expect(quicRefusals >= 2, "\(quicRefusals)")
        // While the child is authorized, browsers are told to keep DoH, ECH and QUIC off; the
        // policies go with the last authorization.
        let firefox = world.directory + "/root/etc/firefox/policies/policies.json"
        let chromium = world.directory + "/root/etc/chromium/policies/managed/screentime.json"
        let policy = try String(contentsOfFile: chromium, encoding: .utf8)
        #expect(policy.contains("\"DnsOverHttpsMode\":\"off\"") && policy.contains("\"QuicAllowed\":false"))
        #expect(try String(contentsOfFile: firefox, encoding: .utf8).contains("DNSOverHTTPS"))
        // Removed or changed by someone else (another agent's test, a package's upgrade), they
        // are written again at once.
        func eventually(_ condition: () -> Bool) -> Bool {
            for _ in 0..<100 where !condition() { Thread.sleep(forTimeInterval: 0.05) }
            return condition()
        }
        #expect(unlink(chromium) == 0)
        #expect(eventually { ((try? String(contentsOfFile: chromium, encoding: .utf8)) ?? "").contains("QuicAllowed") })
        try "{\"policies\": {\"DNSOverHTTPS\": {\"Enabled\": true}}}".write(
            toFile: firefox, atomically: true, encoding: .utf8)
        #expect(
            eventually {
                ((try? String(contentsOfFile: firefox, encoding: .utf8)) ?? "").contains("\"Locked\" : true")
            }, "\((try? String(contentsOfFile: firefox, encoding: .utf8)) ?? "")")
        // Its whole folder removed: written again, folders and all. (The agent may write it
        // again while the removal is under way, which then finds a folder not empty.)
        var removed = false
        for _ in 0..<20 where !removed {
            removed = (try? FileManager.default.removeItem(atPath: world.directory + "/root/etc/chromium")) != nil
        }
        #expect(removed)
        #expect(eventually { FileManager.default.fileExists(atPath: chromium) })
        // Its folder made impossible for a while (a file in its place): nothing to write or
        // watch. Once the file goes, the policy is back (tried again every 2 s), not left out.
        var blocked = false
        for _ in 0..<20 where !blocked {
            _ = try? FileManager.default.removeItem(atPath: world.directory + "/root/etc/chromium")
            blocked = FileManager.default.createFile(atPath: world.directory + "/root/etc/chromium", contents: Data())
        }
        #expect(blocked)
        Thread.sleep(forTimeInterval: 1)
        #expect(!FileManager.default.fileExists(atPath: chromium))
        #expect(unlink(world.directory + "/root/etc/chromium") == 0)
        #expect(eventually { FileManager.default.fileExists(atPath: chromium) }, "not written again")
        try guardian(world, "revoke", "--user", world.child)
        #expect(!FileManager.default.fileExists(atPath: firefox) && !FileManager.default.fileExists(atPath: chromium))
        #expect(
            try world.inNetwork(
                as: world.child, "/usr/bin/python3",
                [AgentWorld.fixture("web-child.py"), "udp", "10.1.1.1", "4433", "quic"]
            ).stdout.contains("answered"))
        let bystander = try world.inNetwork(
            as: world.bystander, "/usr/bin/python3",
            [AgentWorld.fixture("web-child.py"), "udp", "10.1.1.1", "4433", "quic"])
        #expect(bystander.stdout.contains("answered"), "\(bystander.stdout)")
    }

    /// Hostile openings — random bytes, lying lengths, a TLS stream with no hello, garbage in a
    /// Host — are refused or passed by the policy and never crash the agent; 10,000 half-open
    /// connections (3,000 with half a hello) cost the child its own oldest flows and leave the
    /// agent serving others.
    @Test func hostileOpeningsLeaveTheAgentServing() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let hostile = try child(world, "hostile", "10.1.1.1", "443", "200")
        // Random bytes that look like neither TLS nor HTTP pass (the server then hangs up on
        // them); everything that looks like TLS or HTTP and cannot be read is reset.
        let tally = Dictionary(
            uniqueKeysWithValues: hostile.split(separator: " ").compactMap { item -> (String, Int)? in
                let parts = item.split(separator: "=")
                return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? 0) : nil
            })
        #expect((tally["reset"] ?? 0) >= 160, "\(hostile)")
        #expect(world.agentIsRunning)
        let memoryBefore = try world.agentMemory()
        // 10,000 half-open connections, 3,000 of them holding half a hello, to the world's sink
        // (which holds them, reading nothing), then a whole hello to its HTTPS server: the agent's
        // part alone is measured. (Flooded itself, the server's one loop fell behind its own 10 s
        // handshake timeout under a whole run's load: CI of stop 59, fresh run 121.)
        let flood = try child(world, "flood", "10.1.1.1", "9444", "10000", "www.allowed.test", "3000", "443")
        let lines = flood.split(separator: "\n").map(String.init)
        let counters = try world.inNetwork(as: nil, "/usr/sbin/iptables", ["-w", "-vnL"]).stdout
        #expect(
            lines.last?.hasPrefix("after answered") == true,
            "\(flood)\n\(counters)\n\(world.agentLog(naming: nil, last: 30))")
        #expect(lines.first?.hasPrefix("held ") == true, "\(flood)")
        #expect(world.agentIsRunning)
        let memoryAfter = try world.agentMemory()
        // 256 flows at most per user, each at most 16 KiB: a bound, not a leak.
        #expect(memoryAfter - memoryBefore < 64 << 20, "agent memory \(memoryBefore) → \(memoryAfter)")
        // Another user, and the child itself afresh, are served. (Their 40 s are for a whole
        // run's load: CI of stop 45 timed the bystander's curl, which the agent never sees, out
        // at 8 s, when the flood went to this server itself.)
        let bystander = try curl(
            world, as: world.bystander, "--max-time", "40", "--resolve", "blocked.test:443:10.1.1.1",
            "https://blocked.test/")
        #expect(bystander.status == 0, "\(bystander)")
        // (The child's too: fresh run 28 timed it out at 8 s behind the same server.)
        let again = try curl(
            world, as: world.child, "--max-time", "40", "--resolve", "www.allowed.test:443:10.1.1.1",
            "https://www.allowed.test/")
        #expect(again.status == 0, "\(again)\n\(world.agentLog(naming: nil, last: 30))")
        let refused = try curl(
            world, as: world.child, "--resolve", "blocked.test:443:10.1.1.1", "https://blocked.test/")
        #expect(refused.status != 0)
    }

    /// An HTTPS record offering ECH keys reaches the child as an empty answer (so its browser's
    /// hello carries the name in the clear); one without them, and everyone else's, unchanged.
    @Test func httpsRecordsOfferingECHAreEmptiedForTheChild() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        func https(_ user: String?, _ name: String) throws -> (status: String, answers: Int) {
            let result = try world.inNetwork(
                as: user, "/usr/bin/dig", ["+tries=1", "+time=3", "@127.0.0.1", name, "TYPE65"])
            let status =
                result.stdout.split(separator: ",").first { $0.contains("status:") }?
                .split(separator: " ").last.map(String.init) ?? "?"
            let answers =
                result.stdout.split(separator: "\n").first { $0.contains("ANSWER:") }.flatMap { line in
                    line.split(separator: ",").first { $0.contains("ANSWER:") }?.split(separator: " ").last.flatMap {
                        Int($0)
                    }
                } ?? -1
            return (status, answers)
        }
        #expect(try https(nil, "ech.allowed.test") == ("NOERROR", 1))
        #expect(try https(world.bystander, "ech.allowed.test") == ("NOERROR", 1))
        #expect(try https(world.child, "ech.allowed.test") == ("NOERROR", 0))
        #expect(try https(world.child, "noech.allowed.test") == ("NOERROR", 1))
    }

    /// What an attack on the installed agent found, each turned into a check: one urgent byte
    /// before a hello; empty lines before an HTTP request; QUIC after a first small datagram on
    /// another port; a connection kept alive across a new shield; and the child's own server,
    /// which must stay reachable (its answers are not the child's connections).
    @Test func whatTheAttackFoundHolds() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        #expect(try child(world, "urgent", "blocked.test", "10.1.1.1", "443") == "reset")
        #expect(try child(world, "urgent", "www.allowed.test", "10.1.1.1", "443") == "reset")
        let emptyLines = try child(
            world, "raw", "10.1.1.1", "80", Array("\r\n\r\nGET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n".utf8).hex)
        #expect(emptyLines == "page")
        let pipelined = try child(
            world, "raw", "10.1.1.1", "80",
            Array("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n".utf8).hex)
        #expect(pipelined == "page")
        #expect(try child(world, "udp-then-quic", "10.1.1.1", "4433") == "answered refused")

        // A connection to an allowed site, kept alive; the guardian then shields it: the next
        // request on the same connection is reset (the browser would open a new one, refused).
        // First the control: with no change of shields the second request is answered.
        let control = world.directory + "/go-control"
        _ = FileManager.default.createFile(atPath: control, contents: nil)
        let unchanged = try child(world, "keepalive", "www.allowed.test", "10.1.1.1", "443", control)
        #expect(unchanged == "first answered\nsecond answered", "\(unchanged)")
        let go = world.directory + "/go"
        let output = world.directory + "/keepalive.out"
        let keeper = try backgroundChild(
            world, ["keepalive", "www.allowed.test", "10.1.1.1", "443", go], output: output)
        defer { if keeper.isRunning { kill(keeper.processIdentifier, SIGKILL) } }
        var first = ""
        for _ in 0..<500 where !first.contains("first") {
            Thread.sleep(forTimeInterval: 0.02)
            first = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        }
        #expect(first.contains("first answered"), "\(first)")
        try guardian(world, "shield", "--user", world.child, "--domain", "allowed.test")
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        #expect(AgentWorld.ended(keeper, within: 60), "the kept-alive connection's program did not end")
        let second = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // Reset (or, as Python's TLS reads it at times, ended): not answered.
        #expect(second.contains("second reset") || second.contains("second closed"), "\(second)")

        // The child's own server answers root and the bystander.
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/bin/sh")
        server.arguments = [
            "-c",
            "exec /usr/sbin/ip netns exec \(world.namespace ?? "") /usr/bin/setpriv --reuid=\(world.child) --regid=users"
                + " --init-groups -- /usr/bin/python3 -m http.server 8080 --bind 10.1.1.1 > /dev/null 2>&1 < /dev/null",
        ]
        try server.run()
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        var served = false
        for _ in 0..<100 where !served {
            Thread.sleep(forTimeInterval: 0.05)
            served = try curl(world, as: nil, "--max-time", "2", "http://10.1.1.1:8080/").status == 0
        }
        #expect(served, "root reaches the child's own server")
        #expect(try curl(world, as: world.bystander, "http://10.1.1.1:8080/").status == 0)
        #expect(world.agentIsRunning)
    }

    /// The block page goes only to the machine's own addresses (the third attack's first
    /// finding): her socket bound to an address of her choosing (IPV6_FREEBIND, no privilege
    /// needed) with the request on its SYN (TCP Fast Open, no cookie) had the agent send a page,
    /// from a source she chose, to wherever she named. A link that takes her chosen network
    /// counts what leaves by it: nothing.
    @Test func theBlockPageGoesOnlyToTheMachinesOwnAddresses() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let namespace = try #require(world.namespace)
        // A link with no address of its own (nothing of the kernel's leaves by it), its far end
        // a fixed neighbour.
        let ip = "/usr/sbin/ip"
        try system(ip, "-n", namespace, "link", "add", "st-sink", "type", "veth", "peer", "st-sunk")
        for link in ["st-sink", "st-sunk"] {
            try system(ip, "-n", namespace, "link", "set", link, "addrgenmode", "none")
            try system(ip, "-n", namespace, "link", "set", link, "up")
        }
        try system(ip, "-n", namespace, "-6", "route", "add", "fd00:99::/64", "dev", "st-sink")
        try system(
            ip, "-n", namespace, "-6", "neigh", "add", "fd00:99::7", "lladdr", "02:00:00:00:00:07", "dev", "st-sink",
            "nud", "permanent")
        /// Packets and bytes sent by the link so far.
        func sent() throws -> (packets: Int, bytes: Int) {
            func read(_ counter: String) throws -> Int {
                let text = try world.inNetwork(as: nil, "/bin/cat", ["/sys/class/net/st-sink/statistics/" + counter])
                return Int(text.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            }
            return (try read("tx_packets"), try read("tx_bytes"))
        }
        let before = try sent()
        let forged = try world.inNetwork(
            as: world.child, "/usr/bin/python3",
            [
                "-c",
                """
                import socket
                for port in range(4444, 4454):
                    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
                    s.setsockopt(socket.IPPROTO_IPV6, 78, 1)  # IPV6_FREEBIND
                    s.setsockopt(socket.IPPROTO_TCP, 34, 1)   # TCP_FASTOPEN_NO_COOKIE
                    s.bind(("fd00:99::7", port))
                    s.setblocking(False)
                    try:
                        s.sendto(b"GET / HTTP/1.1\\r\\nHost: blocked.test\\r\\n\\r\\n", socket.MSG_FASTOPEN, ("fd00::1", 80))
                        print("sent")
                    except BlockingIOError:
                        print("sent")
                    except OSError as error:
                        print("refused", error)
                """,
            ])
        #expect(forged.stdout.contains("sent"), "\(forged.stdout) \(forged.stderr)")
        Thread.sleep(forTimeInterval: 1)
        // The kernel's own reset of each refused opening goes to her address (74 bytes with its
        // link header, as for any REJECT); a page (900 bytes) does not.
        let after = try sent()
        let packets = after.packets - before.packets
        let bytes = after.bytes - before.bytes
        #expect(bytes <= packets * 100, "\(packets) packets of \(bytes) bytes left for her chosen address: a page")
        // Her own address still gets the page.
        let own = try child(
            world, "raw", "fd00::1", "80", Array("GET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n".utf8).hex)
        #expect(own == "page")
        #expect(world.agentIsRunning)
    }

    /// A connection the server ended with a reset (it was sent what it would not read) is reused
    /// by conntrack for a new SYN on the same ports, with the old flow's mark: the second hello,
    /// naming the shielded host, went by unjudged (found by the attack on the installed agent,
    /// TLS and HTTP). A SYN now clears the agent's mark: the second connection is judged, and
    /// refused; the bystander's same trick reaches the site.
    @Test func aConnectionReopenedOnAResetFlowsPortsIsJudgedAgain() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        for (kind, port) in [("tls", "443"), ("http", "80")] {
            for address in [RoutedServers.address4, RoutedServers.address6] {
                let hers = try child(world, "reopen", kind, address, port, "allowed.test", "blocked.test")
                // Refused: TLS reset, plain HTTP answered with the block page (to a server one
                // router away, the page comes back by the route any packet to her takes).
                #expect(hers == (kind == "http" ? "page" : "reset"), "\(kind) via \(address): \(hers)")
                let theirs = try world.inNetwork(
                    as: world.bystander, "/usr/bin/python3",
                    [AgentWorld.fixture("web-child.py"), "reopen", kind, address, port, "allowed.test", "blocked.test"])
                #expect(theirs.stdout.hasPrefix("answered"), "the bystander, \(kind) via \(address): \(theirs.stdout)")
            }
        }
        #expect(world.agentIsRunning)
    }

    /// HTTP openings a lenient server reads and the agent once read as naming nothing (a form
    /// feed between words, a leading blank) or as naming only the first request (a second behind
    /// a chunked body), sent to Python's own `http.server`, which splits a request line on any
    /// blank: the child's are reset; the bystander's same bytes are served.
    @Test func httpOpeningsReadAsTheMostLenientServerReadsThem() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let namespace = try #require(world.namespace)
        try system(
            "/bin/sh", "-c",
            "setsid /usr/sbin/ip netns exec \(namespace) /usr/bin/python3 -m http.server 8081 --bind 10.1.1.1 "
                + "--directory \(world.directory) > /dev/null 2>&1 < /dev/null &")
        var listening = false
        for _ in 0..<250 where !listening {
            Thread.sleep(forTimeInterval: 0.02)
            listening = try world.inNetwork(as: nil, "/bin/bash", ["-c", "exec 3<>/dev/tcp/10.1.1.1/8081"]).status == 0
        }
        #expect(listening)
        let openings = [
            "GET\u{0C}/\u{0C}HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
            " GET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
            "GET\u{1C}/ HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                + "GET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
            // A GET whose body is a request: python's server reads no GET body, and serves it.
            "GET / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 39\r\n\r\n"
                + "GET /x HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
        ]
        for opening in openings {
            let hex = Array(opening.utf8).hex
            #expect(try child(world, "raw", "10.1.1.1", "8081", hex) == "page", "\(opening.debugDescription)")
            let theirs = try world.inNetwork(
                as: world.bystander, "/usr/bin/python3",
                [AgentWorld.fixture("web-child.py"), "raw", "10.1.1.1", "8081", hex])
            #expect(
                theirs.stdout.hasPrefix("answered"), "the server reads \(opening.debugDescription): \(theirs.stdout)")
        }
        // The same with an allowed host is served to her.
        let allowed = Array("GET\u{0C}/\u{0C}HTTP/1.1\r\nHost: allowed.test\r\n\r\n".utf8).hex
        #expect(try child(world, "raw", "10.1.1.1", "8081", allowed) == "answered")
    }

    /// A decoy opening naming an allowed host, sent with TTL 1 (the router drops it) from pages
    /// the child then rewrites to name the shielded host, so that TCP's retransmission carries
    /// them: by `sendfile` from a file of hers and by `MSG_ZEROCOPY` from a buffer of hers, over
    /// TLS and plain HTTP, in both families. The bystander's same trick shows it works on this
    /// path; the child's is reset, and her unchanged retransmission is served.
    @Test(arguments: ["sendfile", "zerocopy"])
    func anOpeningSentAgainFromRewrittenPagesIsRefused(how: String) throws {
        let world = try shieldedWorld(configuration: ["helloFastPath": "true"])
        defer { world.tearDown() }
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        func resend(_ user: String, _ kind: String, _ address: String, decoy: String, real: String) throws -> String {
            let result = try world.inNetwork(
                as: user, "/usr/bin/python3",
                [AgentWorld.fixture("resend.py"), how, kind, address, kind == "tls" ? "443" : "80", decoy, real])
            guard result.status == 0 else { throw WorldError("resend.py \(how) \(kind): \(result.stderr)") }
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for address in [RoutedServers.address4, RoutedServers.address6] {
            let bystander = try resend(world.bystander, "tls", address, decoy: "allowed.test", real: "blocked.test")
            #expect(bystander == "served blocked.test", "the trick itself, via \(address): \(bystander)")
            for kind in ["tls", "http"] {
                let child = try resend(world.child, kind, address, decoy: "allowed.test", real: "blocked.test")
                #expect(child == "reset", "\(kind) via \(address): \(child)")
            }
            let same = try resend(world.child, "tls", address, decoy: "allowed.test", real: "allowed.test")
            #expect(same == "served allowed.test", "unchanged, via \(address): \(same)")
            // Again, now that her hello naming allowed.test to this server is let go in the kernel
            // (the hello fast path): the decoy goes there, and the rewritten opening sent again
            // is compared with its copy all the same.
            let ipv6 = address.contains(":")
            let inKernel = try hellosPassedInTheKernel(world, ipv6: ipv6)
            let again = try resend(world.child, "tls", address, decoy: "allowed.test", real: "blocked.test")
            #expect(again == "reset", "the decoy let go in the kernel, via \(address): \(again)")
            #expect(
                try hellosPassedInTheKernel(world, ipv6: ipv6) > inKernel,
                "the decoy was not let go in the kernel, via \(address): nothing was tried")
            let plain = try resend(world.child, "http", address, decoy: "allowed.test", real: "allowed.test")
            #expect(plain == "answered", "unchanged HTTP, via \(address): \(plain)")
        }
        let counted = try world.status(of: world.child).domainShield?.refusedConnections ?? [:]
        #expect((counted["resent"] ?? 0) >= 4, "\(counted)")
        #expect(world.agentIsRunning)
    }

    /// The re-sent opening from a socket closed at once (third attack): the decoy goes with TTL 1,
    /// the page is rewritten, and the child closes the socket; TCP sends the opening again from
    /// a socket no process holds, which no owner rule matched, and the server was sent the
    /// shielded name (send-only: nothing can be read back, but a plain-HTTP request is a request).
    /// The bystander's same trick shows the name reaching a logging server one router away; the
    /// child's never reaches it.
    @Test(arguments: ["sendfile", "zerocopy"])
    func anOpeningSentAgainFromAClosedSocketIsComparedToo(how: String) throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        let received = try loggingServer(world, routed)
        func closeEarly(_ user: String, _ address: String) throws {
            let result = try world.inNetwork(
                as: user, "/usr/bin/python3",
                [
                    AgentWorld.fixture("resend.py"), how, "http", address, "8080", "allowed.test", "blocked.test",
                    "close",
                ])
            #expect(result.stdout.contains("closed early"), "\(result.stdout) \(result.stderr)")
        }
        for address in [RoutedServers.address4, RoutedServers.address6] {
            try closeEarly(world.bystander, address)
            let theirs = received().components(separatedBy: "Host: blocked.test").count - 1
            #expect(theirs >= 1, "the trick itself, via \(address): the server got \(received())")
            try closeEarly(world.child, address)
            Thread.sleep(forTimeInterval: 1)
            let now = received().components(separatedBy: "Host: blocked.test").count - 1
            #expect(now == theirs, "the child's closed socket sent the shielded name via \(address): \(received())")
        }
        #expect(world.agentIsRunning)
    }

    /// A server a router away (`routed`) that writes down all each connection sends it (until it
    /// ends, or 5 s of nothing) on port 8080; gives what it got so far.
    func loggingServer(_ world: AgentWorld, _ routed: RoutedServers) throws -> () -> String {
        let log = world.directory + "/received.log"
        let ready = world.directory + "/received.ready"
        let script = """
            import socket, sys, threading
            listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            listener.bind(("::", 8080)); listener.listen(64)
            open(sys.argv[2], "w").close()
            def take(connection):
                connection.settimeout(5)
                data = b""
                try:
                    while True:
                        chunk = connection.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                with open(sys.argv[1], "ab") as out:
                    out.write(data + b"\\n")
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=take, args=(connection,), daemon=True).start()
            """
        try system(
            "/bin/sh", "-c",
            "setsid /usr/sbin/ip netns exec \(routed.server) /usr/bin/python3 -c '\(script)' \(log) \(ready)"
                + " > /dev/null 2>&1 < /dev/null &")
        for _ in 0..<500 where !Files.exists(ready) { Thread.sleep(forTimeInterval: 0.02) }
        #expect(Files.exists(ready), "the logging server did not start")
        return { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
    }

    /// The rest of an opening sent from a socket she closed (`orphan-paced.py`: the start judged
    /// pending, her pacing rate cut so that the rest leaves after `close()`): the attack on the
    /// installed agent had the server read `Host: blocked.test` 10 of 10 tries. Such a segment of a
    /// pending flow now comes to the queue, which drops it: no socket is there to name a user.
    /// The bystander's same trick shows the rest does leave.
    @Test func theRestOfAnOpeningSentFromAClosedSocketNeverLeaves() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        let received = try loggingServer(world, routed)
        func count() -> Int { received().components(separatedBy: "Host: blocked.test").count - 1 }
        for address in [RoutedServers.address4, RoutedServers.address6] {
            for user in [world.bystander, world.child] {
                let before = count()
                let result = try world.inNetwork(
                    as: user, "/usr/bin/python3",
                    [AgentWorld.fixture("orphan-paced.py"), address, "8080", "blocked.test"])
                #expect(result.stdout.contains("closed"), "\(result.stdout) \(result.stderr)")
                if user == world.bystander {
                    #expect(
                        eventually(15) { count() == before + 1 },
                        "the trick itself, via \(address): the server got \(received())")
                } else {
                    // As long as the bystander's took, and more.
                    Thread.sleep(forTimeInterval: 10)
                    #expect(count() == before, "her closed socket sent the shielded name via \(address): \(received())")
                }
            }
        }
        #expect(world.agentIsRunning)
    }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
