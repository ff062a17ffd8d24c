import Foundation
import LinuxSupport
import Testing

// The DNS fast path lets her questions and their answers go untracked (the raw table): what
// comes back must be the answer to that very question, once.
extension DomainShieldIntegrationTests {
    /// A server that answers each question three times: the answer (an address), the same id
    /// again with an alias into the shielded domain, and another id. Her own program asks it,
    /// on loopback (127.0.0.2) and a router away, and reads all that comes back for 1.5 s: only
    /// the first answer reaches her, whether her question went through the queue (the first) or
    /// was let go untracked in the kernel (the rest: the raw table's counters say so). The
    /// others start a flow of their own, which the input chain drops (they used to come to the
    /// queue on her flow's mark, which an untracked question no longer leaves).
    @Test func anAnswerLetGoUntrackedIsTheOneAnswerToHerQuestion() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try world.startWebServers()
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        let server = """
            import socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((sys.argv[1], 53))
            target = b"\\x03cdn\\x07blocked\\x04test\\x00"
            while True:
                q, peer = s.recvfrom(512)
                end = q.index(0, 12) + 5
                good = q[:2] + bytes.fromhex("81800001000100000000") + q[12:end]
                good += bytes.fromhex("c00c000100010000003c00040a010101")
                alias = q[:2] + bytes.fromhex("81800001000200000000") + q[12:end]
                alias += bytes.fromhex("c00c000500010000003c") + len(target).to_bytes(2, "big") + target
                alias += target + bytes.fromhex("000100010000003c00040a020203")
                other = bytes([q[0] ^ 0x55, q[1]]) + good[2:]
                for answer in (good, alias, other):
                    s.sendto(answer, peer)
            """
        let local = try herServer(world, server, "127.0.0.2")
        defer { stop(local) }
        let ready = world.directory + "/routed-dns.ready"
        let script = world.directory + "/routed-dns.py"
        try (server.replacingOccurrences(of: "while True:", with: "open(sys.argv[2], 'w').close()\nwhile True:"))
            .write(toFile: script, atomically: true, encoding: .utf8)
        try system(
            "/bin/sh", "-c",
            "setsid /usr/sbin/ip netns exec \(routed.server) /usr/bin/python3 \(script) \(RoutedServers.address4) "
                + "\(ready) > /dev/null 2>&1 < /dev/null &")
        #expect(eventually(10) { Files.exists(ready) }, "the routed server did not start")
        // Her program: one question, then every datagram that comes in 1.5 s, as "id:rcode:answers".
        let asker = """
            import os, socket, sys, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.connect((sys.argv[1], 53))
            ident = os.urandom(2)
            name = b"".join(bytes([len(l)]) + l for l in b"www.allowed.test".split(b".")) + b"\\x00"
            s.send(ident + bytes.fromhex("01000001000000000000") + name + bytes.fromhex("00010001"))
            s.settimeout(0.2)
            seen, until = [], time.time() + 1.5
            while time.time() < until:
                try:
                    a = s.recv(512)
                except socket.timeout:
                    continue
                same = "same" if a[:2] == ident else "other"
                seen.append("%s:%d:%d" % (same, a[3] & 15, int.from_bytes(a[6:8], "big")))
            print(" ".join(seen))
            """
        func ask(_ address: String) throws -> String {
            try world.inNetwork(as: world.child, "/usr/bin/python3", ["-c", asker, address]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for address in ["127.0.0.2", RoutedServers.address4] {
            // The first through the queue; then, with the name on the fast path, untracked.
            var untracked = false
            for round in 0..<4 {
                let before = try fastPathCounts(world)
                let seen = try ask(address)
                let after = try fastPathCounts(world)
                #expect(seen == "same:0:1", "via \(address), round \(round): she got \(seen)")
                if after == before.map({ $0 + 1 }) { untracked = true }
            }
            #expect(untracked, "via \(address): no question went untracked: \(world.queueAndCounters())")
            // The agent's own answer to a shielded question, written over it, comes in on the
            // question's new flow: not one the input chain drops (the attack on the installed
            // agent found every such lookup of hers timing out with a rule that did).
            let shielded = try dig(world, as: world.child, "blocked.test", server: address)
            #expect(shielded.status == "NXDOMAIN" && shielded.addresses.isEmpty, "via \(address): \(shielded.output)")
        }
        #expect(world.agentIsRunning)
    }
}

extension DomainShieldIntegrationTests {
    /// Her questions sent with `MSG_ZEROCOPY` from a page another process of hers rewrites at
    /// once, allowed.test ↔ blocked.test (`zerocopy-questions.py`). The raw table read one name
    /// and the page was sent later: 52 of 300 blocked.test questions reached her resolver a router
    /// away, 29 of 200 on loopback (the attack on the installed agent, 2026-12-01). Now the bytes
    /// are copied into the packet and read again in the mangle table: the resolver (hers, on
    /// loopback, logging each name) sees blocked.test never, while her allowed questions still go
    /// through the kernel.
    @Test func aQuestionRewrittenAfterTheKernelReadItNeverLeaves() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        let log = world.directory + "/names.log"
        let server = try herServer(
            world,
            """
            import socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.2", 53))
            out = open(sys.argv[1], "a", buffering=1)
            while True:
                q, peer = s.recvfrom(512)
                end = q.index(0, 12)
                out.write("%d %r\\n" % (int.from_bytes(q[:2], "big"), q[12:end]))
                s.sendto(q[:2] + bytes.fromhex("81800001000100000000") + q[12:end + 5]
                    + bytes.fromhex("c00c000100010000003c00040a010101"), peer)
            """, log)
        defer { stop(server) }
        // Her plain lookups of allowed.test: the name on the fast path.
        var onFastPath = false
        for _ in 0..<10 where !onFastPath {
            let before = try fastPathCounts(world)
            _ = try dig(world, as: world.child, "allowed.test", server: "127.0.0.2")
            onFastPath = try fastPathCounts(world)[0] > before[0]
        }
        #expect(onFastPath, "\(world.queueAndCounters())")
        let before = try fastPathCounts(world)
        let printed = try world.inNetwork(
            as: world.child, "/usr/bin/python3",
            [AgentWorld.fixture("zerocopy-questions.py"), "127.0.0.2", "allowed.test", "blocked.test", "300"]
        ).stdout
        Thread.sleep(forTimeInterval: 0.5)
        let names = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        // Hers: the id her page carries (0x4242). The agent's own lookups of a shielded name she
        // asked for (its addresses, learned to refuse them) have ids of their own.
        let leaked = names.split(separator: "\n").filter { $0.hasPrefix("16962 ") && $0.contains("blocked") }.count
        print(
            "her zerocopy questions: \(printed.trimmingCharacters(in: .whitespacesAndNewlines)); "
                + "names the resolver saw: \(names.split(separator: "\n").count), blocked.test \(leaked)")
        #expect(leaked == 0, "blocked.test reached her resolver \(leaked) times")
        #expect(
            try fastPathCounts(world)[0] > before[0] + 30,
            "her questions went through the kernel: \(world.queueAndCounters())")
        #expect(world.agentIsRunning)
    }
}
