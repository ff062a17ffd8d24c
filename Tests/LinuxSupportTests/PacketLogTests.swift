import Foundation
import ScreenTimeTestThreads
import Synchronization
import Testing

@testable import LinuxSupport

/// The kernel's packet log and connection marks, for real: a TCP connection over loopback of a
/// program's own, a log group and chains of this test's own in the machine's namespace (removed
/// after). The server's packet is copied to the log while it goes on; the connection's mark set
/// through ctnetlink is what a rule then sees on the client's next packet.
@Suite(.threadsOfTheirOwn, .enabled(if: getuid() == 0, "needs root: CAP_NET_ADMIN for NFLOG and ctnetlink"))
struct PacketLogTests {
    @Test func aLoggedPacketGoesOnAndAMarkSetByNameIsWhatTheRulesSee() throws {
        let fixture = try Fixture()
        let directory = fixture.root
        let program = try TestProgram(
            "/usr/bin/python3",
            [
                "-c",
                """
                import os, socket, sys, time
                os.closerange(3, 65536)
                d = sys.argv[1]
                l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
                c = socket.create_connection(l.getsockname()); a, _ = l.accept()
                open(d + "/ports.tmp", "w").write("%d %d" % (l.getsockname()[1], c.getsockname()[1]))
                os.rename(d + "/ports.tmp", d + "/ports")
                def wait(name):
                    for _ in range(1000):
                        if os.path.exists(d + "/" + name): return
                        time.sleep(0.01)
                wait("send"); a.send(b"hello from the server")
                got = c.recv(100); open(d + "/got", "wb").write(got)
                wait("reply"); c.send(b"ping"); a.recv(10)
                time.sleep(5)
                """, directory,
            ])
        defer {
            kill(program.processIdentifier, SIGKILL)
            program.waitUntilExit()
        }
        var ports: [UInt16] = []
        for _ in 0..<500 where ports.count != 2 {
            ports = ((try? String(contentsOfFile: directory + "/ports", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { UInt16($0) }
            if ports.count != 2 { Thread.sleep(forTimeInterval: 0.01) }
        }
        try #require(ports.count == 2, "the program did not connect")
        let (server, client) = (ports[0], ports[1])
        let group = UInt16(40_000 + getpid() % 20_000)
        let chain = "stlog\(getpid())"
        func iptables(_ arguments: String...) throws {
            let outcome = try ChildProcess.run("/usr/sbin/iptables", ["-w"] + arguments, environment: [], deadline: 10)
            guard outcome.status == 0 else {
                throw SystemError(.netlink, "iptables \(arguments): \(String(decoding: outcome.errors, as: UTF8.self))")
            }
        }
        defer {
            _ = try? iptables("-D", "INPUT", "-j", chain)
            _ = try? iptables("-D", "OUTPUT", "-j", chain + "-out")
            for name in [chain, chain + "-out"] {
                _ = try? iptables("-F", name)
                _ = try? iptables("-X", name)
            }
        }
        try iptables("-N", chain)
        try iptables("-N", chain + "-out")
        try iptables(
            "-A", chain, "-p", "tcp", "--sport", "\(server)", "-j", "NFLOG", "--nflog-group", "\(group)",
            "--nflog-threshold", "1")
        // The client's data, copied on its way out (as the hello fast path copies her hello).
        try iptables(
            "-A", chain + "-out", "-p", "tcp", "--dport", "\(server)", "-m", "length", "--length", "53:65535", "-j",
            "NFLOG", "--nflog-group", "\(group)", "--nflog-threshold", "1")
        try iptables(
            "-A", chain + "-out", "-p", "tcp", "--dport", "\(server)", "-m", "connmark", "--mark", "0x120000/0xff0000",
            "-j", "RETURN")
        try iptables("-I", "INPUT", "1", "-j", chain)
        try iptables("-I", "OUTPUT", "1", "-j", chain + "-out")

        let log = try PacketLog(group: group)
        // The group is this log's: a second reader is refused, clearly.
        #expect(throws: SystemError.self) { _ = try PacketLog(group: group) }
        let copies = Mutex<[[UInt8]]>([])
        let outgoing = Mutex<[PacketLog.Copy]>([])
        let reader = Thread {
            try? log.run { copy in
                if copy.outgoing {
                    outgoing.withLock { $0.append(copy) }
                } else {
                    copies.withLock { $0.append(copy.bytes) }
                }
            }
        }
        reader.start()
        defer { log.stop() }
        FileManager.default.createFile(atPath: directory + "/send", contents: nil)
        let hello = Array("hello from the server".utf8)
        func logged() -> [UInt8]? {
            copies.withLock { copies in
                copies.first { bytes in
                    bytes.count > 40 && bytes[0] >> 4 == 4 && UInt16(bytes[20]) << 8 | UInt16(bytes[21]) == server
                        && bytes.suffix(hello.count).elementsEqual(hello)
                }
            }
        }
        for _ in 0..<300 where logged() == nil { Thread.sleep(forTimeInterval: 0.01) }
        #expect(logged() != nil, "no copy of the server's packet: \(copies.withLock { $0.count }) copies")
        // The packet itself went on: the client read it.
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: directory + "/got") {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect((try? Data(contentsOf: URL(fileURLWithPath: directory + "/got"))).map(Array.init) == hello)

        // The connection's mark, set by its name; the client's next packet meets the rule.
        let marks = try ConnectionMarks()
        try marks.setMark(
            source: [127, 0, 0, 1], sourcePort: client, destination: [127, 0, 0, 1], destinationPort: server,
            value: 0x0012_0000, mask: 0x00FF_0000)
        // Listed by its mark (the kernel's dump, filtered by it), and only by its own. (Named by
        // the first packet conntrack saw: the server's, when tracking began after the handshake.)
        let ours = [(client, server), (server, client)].map { from, to in
            ConnectionMarks.Flow(
                transport: 6, source: [127, 0, 0, 1], sourcePort: from, destination: [127, 0, 0, 1], destinationPort: to
            )
        }
        let listed = try marks.flows(marked: 0x0012_0000, mask: 0x00FF_0000)
        #expect(listed.contains { ours.contains($0) }, "\(listed)")
        #expect(try marks.flows(marked: 0x0013_0000, mask: 0x00FF_0000).allSatisfy { !ours.contains($0) })
        FileManager.default.createFile(atPath: directory + "/reply", contents: nil)
        func counted() throws -> Int {
            let listing = try ChildProcess.run(
                "/usr/sbin/iptables", ["-w", "-L", chain + "-out", "-v", "-x", "-n"], environment: [], deadline: 10)
            let rule = String(decoding: listing.output, as: UTF8.self).split(separator: "\n").first {
                $0.contains("RETURN")
            }
            return rule.flatMap { Int($0.split(separator: " ").first ?? "") } ?? -1
        }
        var seen = 0
        for _ in 0..<300 where seen == 0 {
            seen = try counted()
            if seen == 0 { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(seen >= 1, "the client's packet did not carry the mark set")
        // The client's "ping" was copied on its way out, with its socket's uid (root's here).
        let ping = Array("ping".utf8)
        for _ in 0..<300 where outgoing.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.01) }
        let out = outgoing.withLock { $0 }
        #expect(out.contains { $0.bytes.suffix(4).elementsEqual(ping) && $0.uid == 0 }, "\(out.map(\.uid))")
        #expect(copies.withLock { $0 }.allSatisfy { !$0.suffix(4).elementsEqual(ping) })
        // A connection that is not there: a clear error, nothing made.
        #expect(throws: SystemError.self) {
            try marks.setMark(
                source: [127, 0, 0, 1], sourcePort: client &+ 1, destination: [127, 0, 0, 1], destinationPort: server,
                value: 0x0012_0000, mask: 0x00FF_0000)
        }
        #expect(throws: SystemError.self) {
            try marks.setMark(
                source: [127, 0, 0, 1], sourcePort: client, destination: [1, 2, 3], destinationPort: server, value: 1,
                mask: 1)
        }
    }

    /// What one read of the log gives, cut short or not the log's: only whole packet messages'
    /// payloads come out.
    @Test func onlyWholePacketMessagesArePayloads() {
        func message(type: UInt16, _ attributes: [[UInt8]]) -> [UInt8] {
            NetfilterNetlink.message(subsystem: 0, command: type, flags: 0, sequence: 0, family: 2, attributes)
        }
        let packet = [UInt8](repeating: 0x45, count: 30)
        let good = message(
            type: 4 << 8, [NetfilterNetlink.attribute(2, [0, 0, 0, 1]), NetfilterNetlink.attribute(9, packet)])
        let other = message(type: 2, [NetfilterNetlink.attribute(9, packet)])
        #expect(PacketLog.copies(ArraySlice(good)).map(\.bytes) == [packet])
        #expect(PacketLog.copies(ArraySlice(other + good)).map(\.bytes) == [packet])
        #expect(PacketLog.copies(ArraySlice(good.dropLast(3))).isEmpty)
        #expect(PacketLog.copies(ArraySlice(good + [1, 2, 3])).map(\.bytes) == [packet])
        // Which way it went (the hook in its header: 3, OUTPUT) and its socket's uid.
        let sent = message(
            type: 4 << 8,
            [
                NetfilterNetlink.attribute(1, [8, 0, 3, 0]), NetfilterNetlink.attribute(9, packet),
                NetfilterNetlink.attribute(11, [0, 0, 0x03, 0xE9]),
            ])
        let received = message(
            type: 4 << 8, [NetfilterNetlink.attribute(1, [8, 0, 1, 0]), NetfilterNetlink.attribute(9, packet)])
        let read = PacketLog.copies(ArraySlice(sent + received))
        #expect(
            read.map(\.outgoing) == [true, false] && read.map(\.uid) == [1001, nil]
                && read.allSatisfy { $0.bytes == packet })
    }
}
