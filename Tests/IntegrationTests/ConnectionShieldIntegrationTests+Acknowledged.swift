import Foundation
import LinuxSupport
import Testing

extension ConnectionShieldIntegrationTests {
    /// The agent reads a watched flow's acknowledgement from a copy in the log, after the packet
    /// went on, and marks the flow by its addresses and ports (ctnetlink has no other name for
    /// it). By then she may have reset that connection and opened a new one on the same ports,
    /// whose hello names a shielded site: the late write must not pass it. So the write sets only
    /// the acknowledged bits, which pass a flow only beside WATCHED (the agent's verdict on that
    /// very connection's packet). Here the late write is made by hand on a fresh connection of
    /// hers, before its hello: the hello is still judged and refused. The control shows what a
    /// write of PASSED itself, as a first version did, would have let through.
    @Test func aLateAcknowledgementOnANewConnectionOnTheSamePortsPassesNothing() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let rules = try world.firewallRules()
        // The rules' own values: the acknowledged bits that promote a watched flow, and PASSED.
        let promote = try #require(
            rules.first { $0.hasPrefix("-A \(world.chain) -p tcp -m connmark") && $0.contains("--set-xmark") },
            "\(rules)")
        let promoted = try #require(
            promote.split(separator: " ").drop { $0 != "--mark" }.dropFirst().first
                .flatMap { UInt32($0.prefix { $0 != "/" }.dropFirst(2), radix: 16) })
        let acknowledged = promoted & Firewall.acknowledgedMask
        #expect(acknowledged != 0, "\(promote)")
        let passedRule = try #require(
            rules.first { $0.hasPrefix("-A \(world.chain) -p tcp -m connmark --mark") && $0.hasSuffix("-j RETURN") })
        let passed = try #require(
            passedRule.split(separator: " ").drop { $0 != "--mark" }.dropFirst().first
                .flatMap { UInt32($0.prefix { $0 != "/" }.dropFirst(2), radix: 16) })

        let refusedRule = try #require(
            rules.first {
                $0.hasPrefix("-A \(world.chain) -p tcp -m tcp ! --tcp-flags RST RST -m connmark --mark")
                    && $0.contains("-j REJECT")
            })
        let refused = try #require(
            refusedRule.split(separator: " ").drop { $0 != "--mark" }.dropFirst().first
                .flatMap { UInt32($0.prefix { $0 != "/" }.dropFirst(2), radix: 16) })

        /// A connection of hers to the shielded site's server, its hello held until `write` has
        /// set its connection's mark: what she is then answered.
        func connection(
            naming name: String = "blocked.test", _ write: (ConnectionMarks, [UInt8], UInt16) throws -> Void
        ) throws -> String {
            // (Her files in a directory of hers: she writes where her end is.)
            let ready = try world.childDirectory() + "/late-ready-\(UUID().uuidString.prefix(6))"
            let go = ready + "-go"
            let output = world.directory + "/late-\(UUID().uuidString.prefix(6)).out"
            let late = try backgroundChild(
                world, ["late", name, "10.1.1.1", "443", ready, go], output: output)
            defer { if late.isRunning { kill(late.processIdentifier, SIGKILL) } }
            var own: [Substring] = []
            for _ in 0..<500 where own.count != 2 {
                Thread.sleep(forTimeInterval: 0.02)
                own = ((try? String(contentsOfFile: ready, encoding: .utf8)) ?? "").split(separator: " ")
            }
            let address = try #require(own.first.flatMap { IPAddress.bytes(String($0)) }, "\(own)")
            let port = try #require(own.last.flatMap { UInt16($0) }, "\(own)")
            try inNetworkNamespace("/run/netns/" + (try #require(world.namespace))) {
                try write(ConnectionMarks(), address, port)
            }
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            #expect(AgentWorld.ended(late, within: 30), "her late hello's program did not end")
            return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        let late = try connection { marks, address, port in
            try marks.setMark(
                source: address, sourcePort: port, destination: [10, 1, 1, 1], destinationPort: 443,
                value: acknowledged, mask: Firewall.acknowledgedMask)
        }
        #expect(late == "reset", "a late acknowledgement passed a new connection's shielded hello: \(late)")
        // The control: PASSED itself, written the same way, lets the same hello through.
        let control = try connection { marks, address, port in
            try marks.setMark(
                source: address, sourcePort: port, destination: [10, 1, 1, 1], destinationPort: 443, value: passed,
                mask: Firewall.markMask)
        }
        #expect(control == "answered", "the control: \(control)")
        // A late refusal (the agent read a packet of an old connection it no longer holds) that
        // finds her new one, whose hello names a site she may visit: it is answered. (Loopback
        // gives a closed connection's ports to the next one at once: run 77 saw the dashboard's
        // and her X display's connections reset this way, when the refusal was REFUSED itself.)
        let refusal = try connection(naming: "www.allowed.test") { marks, address, port in
            try marks.setMark(
                source: address, sourcePort: port, destination: [10, 1, 1, 1], destinationPort: 443,
                value: Firewall.refusalAsked, mask: Firewall.acknowledgedMask)
        }
        #expect(refusal == "answered", "a late refusal reset a new connection: \(refusal)")
        let refusedControl = try connection(naming: "www.allowed.test") { marks, address, port in
            try marks.setMark(
                source: address, sourcePort: port, destination: [10, 1, 1, 1], destinationPort: 443,
                value: refused, mask: Firewall.markMask)
        }
        #expect(refusedControl == "reset", "the control (REFUSED written by name): \(refusedControl)")
    }

    /// A connection kept quiet across a new shield of its own site (found by the attack on the
    /// acknowledgement log): her request is acknowledged at once (the agent reads that and lets
    /// the flow go) but answered only after the guardian shields the site. Her next request on
    /// the same connection is reset, as any connection passed before a change of shields is.
    @Test func aConnectionKeptQuietAcrossANewShieldIsRefusedAfter() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let said = try quietConnection(world) {
            try guardian(world, "shield", "--user", world.child, "--domain", "allowed.test")
        }
        #expect(said.contains("first answered"), "\(said)")
        #expect(said.contains("second reset") || said.contains("second closed"), "\(said)")
    }

    /// The same across a service's file that a guardian edited, and the agent reloaded: a
    /// shielded service that now names her site shields her open connection to it too (its
    /// domains were not in what tells the agent to judge passed connections again).
    @Test func aConnectionKeptQuietAcrossAServiceFileThatNowNamesItsSiteIsRefusedAfter() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        try guardian(world, "shield", "--user", world.child, "--service", "tubesite")
        let file = world.directory + "/services/tubesite.service"
        let said = try quietConnection(world) {
            let rules = try world.firewallRules()
            try "name = Tube Site\ncategory = video\ndomains = other.test allowed.test\napps = org.example.Counter\n"
                .write(toFile: file, atomically: true, encoding: .utf8)
            world.signalAgent(SIGHUP)
            // The reload is read a moment after the signal: her new lookups say when its filters
            // are in, and the rules (a new generation) when the connections passed before are to
            // be judged again. On a loaded machine the rules came seconds after the filters, and
            // her request sent between the two was answered, as it is in that moment.
            #expect(
                eventually(10) {
                    let result = try? world.inNetwork(
                        as: world.child, "/usr/bin/dig",
                        ["+tries=1", "+time=2", "+short", "@127.0.0.1", "allowed.test"])
                    return result.map { $0.status == 0 && $0.stdout.isEmpty } ?? false
                }, "the service's new domain was not shielded")
            #expect(eventually(20) { (try? world.firewallRules()).map { $0 != rules } ?? false }, "no new rules")
        }
        #expect(said.contains("first answered"), "\(said)")
        #expect(said.contains("second reset") || said.contains("second closed"), "\(said)")
    }

    /// A connection kept idle through eight changes of the filters: the PASSED mark's generation
    /// came round to its own again, and her next request, to a site shielded by the last change,
    /// passed unjudged (found 2026-11-30). Before a generation is used again, the connections
    /// still marked with it are refused.
    @Test func aConnectionIdleUntilItsGenerationComesRoundAgainIsRefused() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let said = try quietConnection(world) {
            for index in 1..<Int(Firewall.generations) {
                try guardian(world, "shield", "--user", world.child, "--domain", "other\(index).test")
            }
            try guardian(world, "shield", "--user", world.child, "--domain", "allowed.test")
        }
        #expect(!said.contains("second answered"), "\(said)")
        #expect(said.contains("reset") || said.contains("second closed"), "\(said)")
    }

    /// A stream passed before a shield of its own site, on which only the server sends (a
    /// download, a radio station): her TCP sends nothing but ACKs, which pass in the kernel, so
    /// it went on after the shield (found 2026-11-30). It is reset once the shield is in.
    @Test func aStreamPassedBeforeAShieldOfItsSiteEndsWithTheShield() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        // A server of root's that sends a kilobyte every 50 ms for 20 s after her request.
        let server = try serve(
            world, "stream-server.py",
            """
            import socket, time
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("10.1.1.1", 8082)); s.listen(4)
            c, _ = s.accept()
            c.recv(4096)
            try:
                c.sendall(b"HTTP/1.1 200 OK\\r\\n\\r\\n")
                for _ in range(400):
                    c.sendall(b"x" * 1000); time.sleep(0.05)
            except OSError:
                pass
            """, [])
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let output = world.directory + "/stream.out"
        let mark = world.directory + "/stream-shielded"
        let client = try backgroundChild(
            world, ["listen", "www.allowed.test", "10.1.1.1", "8082", mark, "15"], output: output)
        defer { if client.isRunning { kill(client.processIdentifier, SIGKILL) } }
        Thread.sleep(forTimeInterval: 2)
        try guardian(world, "shield", "--user", world.child, "--domain", "allowed.test")
        // The shield is in when the command returns; what was on its way by then is let be.
        Thread.sleep(forTimeInterval: 1)
        _ = FileManager.default.createFile(atPath: mark, contents: nil)
        #expect(AgentWorld.ended(client, within: 40), "her program did not end")
        let said = try #require(listened(output))
        #expect(said.before > 10_000, "the stream did not flow before the shield: \(said)")
        #expect(said.after == 0, "the stream went on after the shield: \(said)")
        #expect(said.ended == "reset", "\(said)")
    }

    /// A long poll across a shield (found by the attack on the installed agent): her request is
    /// acknowledged (its mark WATCHED, with the acknowledgement's generation) and answered only
    /// after the guardian shields the site, then at full speed. Her ACKs passed in the kernel
    /// until the agent, reading the server's packets from the log, asked for the connection to
    /// be refused: 0.95–4 MB got through. Now her first ACK after the shield goes to the queue,
    /// so the server sends her at most what her receive window takes.
    @Test func aLongPollAnsweredAfterAShieldGetsNoMoreThanHerWindow() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let (go, got) = (world.directory + "/poll-go", world.directory + "/poll-got")
        let server = try holdingServer(
            world, "poll-server.py", port: 8083, go: go, got: got,
            answer: """
                end = time.monotonic() + 3
                try:
                    c.sendall(b"HTTP/1.1 200 OK\\r\\n\\r\\n")
                    while time.monotonic() < end: c.sendall(b"x" * 16384)
                except OSError:
                    pass
                """)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let output = world.directory + "/poll.out"
        // Her receive buffer 64 KiB (the kernel doubles it): her window stays below 128 KiB.
        let client = try backgroundChild(
            world, ["listen", "www.allowed.test", "10.1.1.1", "8083", go, "10", "65536"], output: output)
        defer { if client.isRunning { kill(client.processIdentifier, SIGKILL) } }
        #expect(eventually(30) { Files.exists(got) }, "her request never reached the server")
        Thread.sleep(forTimeInterval: 0.5)
        try guardian(world, "shield", "--user", world.child, "--domain", "allowed.test")
        Thread.sleep(forTimeInterval: 0.5)
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        #expect(AgentWorld.ended(client, within: 40), "her program did not end")
        let said = try #require(listened(output))
        print("a long poll answered after the shield: \(said)")
        #expect(said.after <= 256 << 10, "more than her window after the shield: \(said)")
        #expect(said.ended == "reset", "\(said)")
    }

    /// Her program holds a plain-HTTP connection to allowed.test open across `change`: its request
    /// judged and acknowledged by the server's kernel at once, answered only after the change;
    /// then a second request on the same connection. What her program said of each.
    func quietConnection(_ world: AgentWorld, across change: () throws -> Void) throws -> String {
        // A server of root's that answers each request, the first only once GO exists; GOT
        // once it has the first.
        let go = world.directory + "/quiet-go"
        let got = world.directory + "/quiet-got"
        let server = try holdingServer(
            world, "quiet-server.py", port: 8081, go: go, got: got,
            answer: """
                c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 6\\r\\n\\r\\nfirst\\n")
                if c.recv(4096): c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 7\\r\\n\\r\\nsecond\\n")
                time.sleep(5)
                """)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let output = world.directory + "/quiet.out"
        let client = try backgroundChild(world, ["quiet", "www.allowed.test", "10.1.1.1", "8081"], output: output)
        defer { if client.isRunning { kill(client.processIdentifier, SIGKILL) } }
        // Her request judged, and acknowledged by the server's kernel at once (a moment for the
        // agent to read that); then the change.
        #expect(eventually(30) { Files.exists(got) }, "her first request never reached the server")
        Thread.sleep(forTimeInterval: 0.5)
        try change()
        Thread.sleep(forTimeInterval: 0.5)
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        #expect(AgentWorld.ended(client, within: 40), "her program did not end")
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }

    /// Starts `code` (Python) as root in the world's network namespace, written to `name` in its
    /// directory, with `arguments`; after half a second for it to listen.
    func serve(_ world: AgentWorld, _ name: String, _ code: String, _ arguments: [String]) throws -> Process {
        let script = world.directory + "/" + name
        try code.write(toFile: script, atomically: true, encoding: .utf8)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        server.arguments = ["netns", "exec", world.namespace ?? "", "/usr/bin/python3", script] + arguments
        try server.run()
        Thread.sleep(forTimeInterval: 0.5)
        return server
    }

    /// A server of root's on 10.1.1.1:`port` that takes her request, makes the file `got`, waits
    /// for the file `go`, then runs `answer` (Python, its connection in `c`).
    func holdingServer(
        _ world: AgentWorld, _ name: String, port: Int, go: String, got: String, answer: String
    ) throws -> Process {
        try serve(
            world, name,
            """
            import os, socket, sys, time
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("10.1.1.1", \(port))); s.listen(4)
            c, _ = s.accept()
            c.recv(4096)
            open(sys.argv[2], "w").close()
            while not os.path.exists(sys.argv[1]): time.sleep(0.01)

            """ + answer, [go, got])
    }

    /// What web-child.py's `listen` printed in `output`: the bytes before and after its mark, and
    /// how it ended; nil when it printed anything else.
    func listened(_ output: String) -> (before: Int, after: Int, ended: String)? {
        let words = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(whereSeparator: \.isWhitespace)
        guard words.count == 5, words[0] == "before", words[2] == "after", let before = Int(words[1]),
            let after = Int(words[3])
        else { return nil }
        return (before, after, String(words[4]))
    }
}
