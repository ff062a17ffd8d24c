import Foundation
import Testing

@testable import LinuxSupport

/// The hello fast path's kernel side (the `hello` program beside the DNS fast path's), in the
/// kernel: run on TCP segments through the kernel's test run, its table filled through libbpf.
/// The rules that use it, with a real child's connections, are in the connection shield's
/// integration tests.
@Suite(.enabled(if: getuid() == 0, "needs root: mounting a bpf file system, loading BPF programs"))
struct HelloFastPathTests {
    static func word(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    static func element(_ type: Int, _ body: [UInt8]) -> [UInt8] { word(type) + word(body.count) + body }

    static func serverName(_ names: [String]) -> [UInt8] {
        let list = names.flatMap { name -> [UInt8] in [0] + word(name.utf8.count) + Array(name.utf8) }
        return element(0, word(list.count) + list)
    }

    static func alpn(_ protocols: [String]) -> [UInt8] {
        let list = protocols.flatMap { name -> [UInt8] in [UInt8(name.utf8.count)] + Array(name.utf8) }
        return element(16, word(list.count) + list)
    }

    /// A ClientHello handshake message (its header included) with these extensions.
    static func clientHello(_ extensions: [[UInt8]], session: Int = 32) -> [UInt8] {
        let all = extensions.flatMap { $0 }
        let body =
            word(0x0303) + Array(repeating: 7, count: 32) + [UInt8(session)] + Array(repeating: 9, count: session)
            + word(4) + word(0x1301) + word(0x1302) + [1, 0] + word(all.count) + all
        return [1, 0] + word(body.count) + body
    }

    /// The usual hello: a GREASE-like extension, the name, ALPN, supported versions.
    static func extensions(name: String = "www.allowed.test") -> [[UInt8]] {
        [element(0x0A0A, []), serverName([name]), alpn(["h2", "http/1.1"]), element(43, [2, 3, 4])]
    }

    static func record(_ handshake: [UInt8], version: UInt8 = 1) -> [UInt8] {
        [0x16, 3, version] + word(handshake.count) + handshake
    }

    static let hello = record(clientHello(extensions()))

    /// An Ethernet frame of a TCP segment from 127.0.0.1:40000 to `server`:`port` (or over IPv6
    /// loopback), with `flags` (ACK|PSH by default).
    static func frame(
        _ payload: [UInt8], ipv6: Bool = false, server: [UInt8] = [127, 0, 0, 1], port: Int = 443, flags: UInt8 = 0x18,
        fragment: Bool = false
    ) -> [UInt8] {
        let tcp =
            word(40_000) + word(port) + [0, 0, 0, 1] + [0, 0, 0, 1] + [0x50, flags] + word(512) + [0, 0, 0, 0] + payload
        let loopback6 = Array(repeating: UInt8(0), count: 15) + [1]
        let ip =
            ipv6
            ? [0x60, 0, 0, 0] + word(tcp.count) + [6, 64] + loopback6 + loopback6
            : [0x45, 0] + word(20 + tcp.count) + [0, 0] + (fragment ? [0x20, 0] : [0x40, 0]) + [64, 6, 0, 0]
                + [127, 0, 0, 1] + server
        return Array(repeating: 0, count: 12) + word(ipv6 ? 0x86DD : 0x0800) + ip + tcp
    }

    /// A server's segment from `server`:443 back to 127.0.0.1:`clientPort` (or over IPv6
    /// loopback), acknowledging `acknowledgement`, with `flags` (ACK by default).
    static func reply(
        acknowledging acknowledgement: UInt32, ipv6: Bool = false, server: [UInt8] = [127, 0, 0, 1],
        clientPort: Int = 40_000, flags: UInt8 = 0x10
    ) -> [UInt8] {
        let ack = withUnsafeBytes(of: acknowledgement.bigEndian) { Array($0) }
        let tcp = word(443) + word(clientPort) + [0, 0, 0, 1] + ack + [0x50, flags] + word(512) + [0, 0, 0, 0]
        let loopback6 = Array(repeating: UInt8(0), count: 15) + [1]
        let ip =
            ipv6
            ? [0x60, 0, 0, 0] + word(tcp.count) + [6, 64] + loopback6 + loopback6
            : [0x45, 0] + word(20 + tcp.count) + [0, 0, 0x40, 0, 64, 6, 0, 0] + server + [127, 0, 0, 1]
        return Array(repeating: 0, count: 12) + word(ipv6 ? 0x86DD : 0x0800) + ip + tcp
    }

    /// `acknowledged` (in INPUT) matches the server's acknowledgement of the whole of a hello
    /// `hello` let go, on that very connection, once, under the generation it was let go under;
    /// nothing else. (The segments `frame` makes start at sequence number 1.)
    @Test func theServersAcknowledgementOfAHelloTheKernelLetGoIsMatchedAndNothingElse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hello-acked-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try DNSFastPath(directory: directory)
        let end = UInt32(1 + Self.hello.count)
        #expect(try !path.matches("acknowledged", frame: Self.reply(acknowledging: end)), "no hello let go")
        let loopback6 = Array(repeating: UInt8(0), count: 15) + [1]
        for address in [[127, 0, 0, 1], loopback6] {
            try path.allow(
                DNSFastPath.Hello(uid: 0, address: address, port: 443, name: Array("www.allowed.test".utf8)),
                seconds: 30, generation: 0)
        }
        for ipv6 in [false, true] {
            #expect(try path.matches("hello", frame: Self.frame(Self.hello, ipv6: ipv6)))
            let refused: [(String, [UInt8])] = [
                ("short of the hello's end", Self.reply(acknowledging: end - 1, ipv6: ipv6)),
                ("before it", Self.reply(acknowledging: 1, ipv6: ipv6)),
                ("half the sequence space on", Self.reply(acknowledging: end &+ 0x8000_0000, ipv6: ipv6)),
                ("with RST", Self.reply(acknowledging: end, ipv6: ipv6, flags: 0x14)),
                ("a SYN-ACK", Self.reply(acknowledging: end, ipv6: ipv6, flags: 0x12)),
                ("without ACK", Self.reply(acknowledging: end, ipv6: ipv6, flags: 0x08)),
                ("another connection's", Self.reply(acknowledging: end, ipv6: ipv6, clientPort: 40_001)),
            ]
            for (what, frame) in refused {
                #expect(try !path.matches("acknowledged", frame: frame), "\(what), IPv6 \(ipv6)")
            }
            #expect(try !path.matches("acknowledged", frame: Self.reply(acknowledging: end, server: [127, 0, 0, 2])))
            #expect(try path.matches("acknowledged", frame: Self.reply(acknowledging: end + 700, ipv6: ipv6)))
            #expect(try !path.matches("acknowledged", frame: Self.reply(acknowledging: end, ipv6: ipv6)), "twice")
        }
        // A filter changed between the hello and its acknowledgement: no match (the flow stays
        // watched, her data compared in the queue).
        #expect(try path.matches("hello", frame: Self.frame(Self.hello)))
        try path.setGeneration(1)
        #expect(try !path.matches("acknowledged", frame: Self.reply(acknowledging: end)))
        // A hello the queue judges (not let go here) leaves nothing to match.
        #expect(try !path.matches("hello", frame: Self.frame(Self.hello)))
        #expect(try !path.matches("acknowledged", frame: Self.reply(acknowledging: end)))
        let programs = try path.pinned { programs throws(SystemError) in
            #expect(programs.acknowledged.map { FileManager.default.fileExists(atPath: $0) } == true)
            return programs
        }
        #expect(programs.acknowledged == directory + "/acknowledged")
    }

    @Test func theKernelPassesOneWholeHelloTheTableHoldsAndNothingElse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hello-fast-path-\(getpid())")
            .path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try DNSFastPath(directory: directory)
        // The test run's socket is root's: the entries are uid 0's.
        let allowed = DNSFastPath.Hello(
            uid: 0, address: [127, 0, 0, 1], port: 443, name: Array("www.allowed.test".utf8))
        let sent = Self.frame(Self.hello)
        #expect(try !path.matches("hello", frame: sent), "an empty table passes nothing")
        try path.allow(allowed, seconds: 30, generation: 0)
        #expect(try path.matches("hello", frame: sent))
        #expect(try path.matches("hello", frame: Self.frame(Self.hello, flags: 0x10)), "ACK without PSH")
        #expect(
            try path.matches("hello", frame: Self.frame(Self.record(Self.clientHello(Self.extensions()), version: 3))))
        #expect(
            try path.matches("hello", frame: Self.frame(Self.record(Self.clientHello(Self.extensions(), session: 0)))))
        let loopback6 = Array(repeating: UInt8(0), count: 15) + [1]
        #expect(try !path.matches("hello", frame: Self.frame(Self.hello, ipv6: true)))
        try path.allow(
            DNSFastPath.Hello(uid: 0, address: loopback6, port: 443, name: allowed.name), seconds: 30, generation: 0)
        #expect(try path.matches("hello", frame: Self.frame(Self.hello, ipv6: true)))

        // The queue's, always: anything but one whole hello naming that one server, alone in its
        // segment, sent as one packet.
        let more = Array(repeating: UInt8(0x41), count: 40)
        let split = Self.clientHello(Self.extensions())
        let refused: [(String, [UInt8])] = [
            ("another case", Self.frame(Self.record(Self.clientHello(Self.extensions(name: "WWW.allowed.test"))))),
            ("another name", Self.frame(Self.record(Self.clientHello(Self.extensions(name: "www.other.test"))))),
            ("another port", Self.frame(Self.hello, port: 8443)),
            ("another server", Self.frame(Self.hello, server: [127, 0, 0, 2])),
            ("a byte after", Self.frame(Self.hello + [0])),
            ("data after", Self.frame(Self.hello + [0x17, 3, 3] + Self.word(more.count) + more)),
            ("half a hello", Self.frame(Array(Self.hello.prefix(60)))),
            (
                "two records",
                Self.frame(Self.record(Array(split.prefix(50))) + Self.record(Array(split.dropFirst(50))))
            ),
            (
                "two names",
                Self.frame(Self.record(Self.clientHello([Self.serverName(["www.allowed.test", "x.test"])])))
            ),
            (
                "two name extensions",
                Self.frame(
                    Self.record(
                        Self.clientHello([Self.serverName(["www.allowed.test"]), Self.serverName(["www.allowed.test"])])
                    ))
            ),
            ("no name", Self.frame(Self.record(Self.clientHello([Self.alpn(["h2"])])))),
            ("no extensions", Self.frame(Self.record(Self.clientHello([])))),
            (
                "an ALPN the agent cannot read",
                Self.frame(
                    Self.record(Self.clientHello([Self.serverName(["www.allowed.test"]), Self.alpn(["h2", ""])])))
            ),
            (
                "more extensions than the program reads",
                Self.frame(
                    Self.record(
                        Self.clientHello(
                            [Self.serverName(["www.allowed.test"])] + (0..<40).map { Self.element(0x1000 + $0, []) })))
            ),
            ("a server hello", Self.frame(Self.record([2] + Array(Self.clientHello(Self.extensions()).dropFirst())))),
            ("a record version that is not TLS", Self.frame([0x16, 2, 0] + Array(Self.hello.dropFirst(3)))),
            ("on a SYN (Fast Open)", Self.frame(Self.hello, flags: 0x12)),
            ("with a FIN", Self.frame(Self.hello, flags: 0x19)),
            ("urgent", Self.frame(Self.hello, flags: 0x38)),
            ("a fragment", Self.frame(Self.hello, fragment: true)),
        ]
        for (what, frame) in refused {
            #expect(try !path.matches("hello", frame: frame), "\(what)")
        }
        // A packet the kernel splits into segments after (segmentation offload) keeps its bytes in
        // the sender's pages: the queue's.
        #expect(try !path.matches("hello", frame: sent, segmentSize: 100))
        // Another user's entry passes nothing of root's.
        try path.remove(allowed)
        try path.allow(
            DNSFastPath.Hello(uid: 1000, address: allowed.address, port: 443, name: allowed.name), seconds: 30,
            generation: 0)
        #expect(try !path.matches("hello", frame: sent))
        // A new generation (a filter changed) voids it; one made under it holds; its time runs out.
        try path.allow(allowed, seconds: 30, generation: 0)
        try path.setGeneration(1)
        #expect(try !path.matches("hello", frame: sent))
        try path.allow(allowed, seconds: 0.2, generation: 1)
        #expect(try path.matches("hello", frame: sent))
        Thread.sleep(forTimeInterval: 0.4)
        #expect(try !path.matches("hello", frame: sent))
        #expect(path.helloCount >= 2)
        // Names the table cannot hold are refused to it.
        #expect(throws: SystemError.self) {
            try path.allow(
                DNSFastPath.Hello(
                    uid: 0, address: allowed.address, port: 443, name: Array(repeating: 0x61, count: 129)),
                seconds: 30, generation: 1)
        }
        // Pinned with the others while the rules are installed.
        let programs = try path.pinned { programs throws(SystemError) in
            #expect(programs.hello.map { FileManager.default.fileExists(atPath: $0) } == true)
            return programs
        }
        #expect(programs.hello == directory + "/hello")
    }
}
