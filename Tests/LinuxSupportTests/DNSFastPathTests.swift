import Foundation
import Testing

@testable import LinuxSupport

/// The DNS fast path's kernel side, in the kernel: its programs loaded from the object the agent
/// embeds and run on packets through the kernel's test run, its table filled through libbpf
/// (a bpf file system of this test's own, unmounted after). The rules that use it, with a real
/// child's lookups, are in the domain shield's integration tests.
@Suite(.enabled(if: getuid() == 0, "needs root: mounting a bpf file system, loading BPF programs"))
struct DNSFastPathTests {
    static func wire(_ name: String) -> [UInt8] {
        name.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    static func word(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    /// An EDNS record: the root name, OPT, 1,232 bytes, no options.
    static let edns: [UInt8] = [0] + word(41) + word(1232) + [0, 0, 0, 0] + word(0)

    static func question(_ name: String, type: Int = 1, flags: Int = 0x0100, edns: Bool = false) -> [UInt8] {
        word(0x1234) + word(flags) + word(1) + word(0) + word(0) + word(edns ? 1 : 0) + wire(name) + word(type)
            + word(1) + (edns ? Self.edns : [])
    }

    static func address(_ type: Int = 1, _ last: UInt8 = 1) -> [UInt8] {
        word(0xC00C) + word(type) + word(1) + [0, 0, 0, 60] + word(type == 1 ? 4 : 16)
            + (type == 1 ? [10, 1, 1, last] : [0xFD] + Array(repeating: 0, count: 14) + [last])
    }

    static func alias(_ target: String) -> [UInt8] {
        word(0xC00C) + word(5) + word(1) + [0, 0, 0, 60] + word(wire(target).count) + wire(target)
    }

    static func reply(
        _ name: String, type: Int = 1, flags: Int = 0x8180, answers: [[UInt8]], edns: Bool = false
    ) -> [UInt8] {
        word(0x1234) + word(flags) + word(1) + word(answers.count) + word(0) + word(edns ? 1 : 0) + wire(name)
            + word(type) + word(1) + answers.flatMap { $0 } + (edns ? Self.edns : [])
    }

    /// An Ethernet frame of a UDP datagram on loopback (IPv4 or IPv6); the kernel's test run
    /// strips the Ethernet header, and the program reads from the IP header, as from iptables.
    static func frame(_ payload: [UInt8], ipv6: Bool = false, sourcePort: Int = 40_000, port: Int = 53) -> [UInt8] {
        let udp = word(sourcePort) + word(port) + word(8 + payload.count) + word(0) + payload
        let loopback6 = Array(repeating: UInt8(0), count: 15) + [1]
        let ip =
            ipv6
            ? [0x60, 0, 0, 0] + word(udp.count) + [17, 64] + loopback6 + loopback6
            : [0x45, 0] + word(20 + udp.count) + [0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]
        return Array(repeating: 0, count: 12) + word(ipv6 ? 0x86DD : 0x0800) + ip + udp
    }

    @Test func theAgentsTestOfAReplyIsTheKernels() {
        let name = Self.wire("www.allowed.test")
        let plain = Self.reply("www.allowed.test", answers: [Self.address(), Self.address(1, 2)])
        #expect(
            DNSFastPath.entry(answeredBy: plain).map { [Int($0.type)] + $0.name.map(Int.init) } == [1]
                + name.map(Int.init))
        #expect(
            DNSFastPath.entry(answeredBy: Self.reply("www.allowed.test", answers: [Self.address()], edns: true)) != nil)
        #expect(DNSFastPath.entry(answeredBy: Self.reply("x.test", type: 28, answers: [Self.address(28)]))?.type == 28)
        // Not passed: an alias (even before addresses), an error, a truncated reply, no answer,
        // an address of the other type, something after the message, another question type, a
        // question name longer than the table holds.
        for refused in [
            Self.reply("www.allowed.test", answers: [Self.alias("cdn.blocked.test"), Self.address()]),
            Self.reply("www.allowed.test", answers: [Self.address(), Self.alias("cdn.blocked.test")]),
            Self.reply("www.allowed.test", flags: 0x8183, answers: []),
            Self.reply("www.allowed.test", flags: 0x8182, answers: [Self.address()]),
            Self.reply("www.allowed.test", flags: 0x8380, answers: [Self.address()]),
            Self.reply("www.allowed.test", answers: []),
            Self.reply("www.allowed.test", answers: [Self.address(28)]),
            Self.reply("www.allowed.test", answers: [Self.address()]) + [0],
            Self.reply("www.allowed.test", type: 65, answers: [Self.address()]),
            Self.reply(String(repeating: "a.", count: 64) + "test", answers: [Self.address()]),
            Array(Self.reply("www.allowed.test", answers: [Self.address()]).prefix(40)),
        ] {
            #expect(DNSFastPath.entry(answeredBy: refused) == nil, "\(refused)")
        }
    }

    @Test func theKernelPassesWhatTheTableHoldsAndNothingElse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dns-fast-path-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let path = try DNSFastPath(directory: directory)
            // The test run's socket is root's: the entries are uid 0's.
            let allowed = DNSFastPath.Question(uid: 0, type: 1, name: Self.wire("www.allowed.test"))
            let asked = Self.frame(Self.question("www.allowed.test"))
            let answered = Self.frame(
                Self.reply("www.allowed.test", answers: [Self.address()]), sourcePort: 53, port: 40_000)
            #expect(try !path.matches("question", frame: asked), "an empty table passes nothing")
            #expect(try !path.matches("answer", frame: answered))

            try path.allow(allowed, seconds: 30, generation: 0)
            #expect(try !path.matches("answer", frame: answered), "an answer to no question it let go")
            #expect(try path.matches("question", frame: asked))
            #expect(try path.matches("question", frame: Self.frame(Self.question("www.allowed.test", edns: true))))
            #expect(try path.matches("question", frame: Self.frame(Self.question("www.allowed.test"), ipv6: true)))
            // The answer to that very question: on its flow, with its id, once.
            #expect(
                try !path.matches(
                    "answer",
                    frame: Self.frame(
                        Self.reply("www.allowed.test", answers: [Self.address()]), sourcePort: 53, port: 40_001)))
            var otherID = Self.reply("www.allowed.test", answers: [Self.address()])
            otherID[1] ^= 1
            #expect(try !path.matches("answer", frame: Self.frame(otherID, sourcePort: 53, port: 40_000)))
            #expect(
                try !path.matches(
                    "answer",
                    frame: Self.frame(
                        Self.reply("www.allowed.test", answers: [Self.address()]), sourcePort: 5353, port: 40_000)))
            #expect(try path.matches("answer", frame: answered))
            #expect(try !path.matches("answer", frame: answered), "the same answer twice")
            #expect(
                try path.matches(
                    "answer",
                    frame: Self.frame(
                        Self.reply("www.allowed.test", answers: [Self.address(), Self.address(1, 9)], edns: true),
                        ipv6: true, sourcePort: 53, port: 40_000)))
            #expect(try path.matches("question", frame: asked))
            // Byte for byte: another case, type, name, or a question with more in it, is the
            // queue's.
            for other in [
                Self.question("WWW.allowed.test"), Self.question("www.allowed.test", type: 28),
                Self.question("www.allowed.test", type: 65), Self.question("allowed.test"),
                Self.question("www.allowed.test", flags: 0x8100),
                Self.question("www.allowed.test") + Self.question("x.test").dropFirst(12),
            ] {
                #expect(try !path.matches("question", frame: Self.frame(other)), "\(other)")
            }
            // Another user's entry passes nothing of root's.
            try path.remove(allowed)
            try path.allow(DNSFastPath.Question(uid: 1000, type: 1, name: allowed.name), seconds: 30, generation: 0)
            #expect(try !path.matches("question", frame: asked))
            try path.allow(allowed, seconds: 30, generation: 0)

            // A datagram sent in segments (UDP_SEGMENT) is seen whole here and split after: never
            // passed, whatever its first message (an EDNS record of the first may span the rest).
            #expect(try !path.matches("question", frame: asked, segmentSize: 40))
            // An answer in segments to a question let go: not passed, and the question off the
            // table.
            #expect(try !path.matches("answer", frame: answered, segmentSize: 40))
            #expect(try !path.matches("answer", frame: answered))
            #expect(try !path.matches("question", frame: asked))
            try path.allow(allowed, seconds: 30, generation: 0)
            #expect(try path.matches("question", frame: asked))

            // Counted: the three questions passed since it was made, told once.
            for _ in 0..<2 { _ = try path.matches("question", frame: asked) }
            #expect(path.takeHits()[allowed] == 3)
            #expect(path.takeHits()[allowed] == nil)

            // An alias in an answer: not passed, and the name is off the table for questions too.
            let aliased = Self.reply("www.allowed.test", answers: [Self.alias("cdn.blocked.test"), Self.address()])
            #expect(try path.matches("question", frame: asked))
            #expect(try !path.matches("answer", frame: Self.frame(aliased, sourcePort: 53, port: 40_000)))
            #expect(try !path.matches("question", frame: asked))
            #expect(try !path.matches("answer", frame: answered))
            // So is an error, after the name was allowed again.
            try path.allow(allowed, seconds: 30, generation: 0)
            let failed = Self.reply("www.allowed.test", flags: 0x8182, answers: [Self.address()])
            #expect(try path.matches("question", frame: asked))
            #expect(try !path.matches("answer", frame: Self.frame(failed, sourcePort: 53, port: 40_000)))
            #expect(try !path.matches("question", frame: asked))
            // And a truncated reply.
            try path.allow(allowed, seconds: 30, generation: 0)
            let truncated = Self.reply("www.allowed.test", flags: 0x8380, answers: [Self.address()])
            #expect(try path.matches("question", frame: asked))
            #expect(try !path.matches("answer", frame: Self.frame(truncated, sourcePort: 53, port: 40_000)))
            #expect(try !path.matches("question", frame: asked))

            // An answer to another question on the flow, with the id, of one let go: not passed,
            // and the question off the table.
            try path.allow(allowed, seconds: 30, generation: 0)
            #expect(try path.matches("question", frame: asked))
            let elsewhere = Self.reply("www.blocked.test", answers: [Self.address()])
            #expect(try !path.matches("answer", frame: Self.frame(elsewhere, sourcePort: 53, port: 40_000)))
            #expect(try !path.matches("question", frame: asked))

            // A new generation voids every entry, and the questions let go under the last one:
            // their answers do not pass. One made under it holds.
            try path.allow(allowed, seconds: 30, generation: 0)
            #expect(try path.matches("question", frame: asked))
            try path.setGeneration(1)
            #expect(try !path.matches("answer", frame: answered))
            #expect(try !path.matches("question", frame: asked))
            try path.allow(allowed, seconds: 30, generation: 1)
            #expect(try path.matches("question", frame: asked))
            #expect(try path.matches("answer", frame: answered))
            #expect(try path.matches("question", frame: asked))
            // An entry's time runs out.
            try path.allow(allowed, seconds: 0.2, generation: 1)
            #expect(try path.matches("question", frame: asked))
            Thread.sleep(forTimeInterval: 0.4)
            #expect(try !path.matches("question", frame: asked))
            #expect(path.count >= 2)

            // Another agent's table (another file system) is its own.
            let other = try DNSFastPath(directory: directory + "-other")
            defer { try? FileManager.default.removeItem(atPath: directory + "-other") }
            #expect(try !other.matches("question", frame: asked))
            // Pinned only while the rules are installed.
            #expect(!FileManager.default.fileExists(atPath: directory + "/question"))
            let programs = try other.pinned { programs throws(SystemError) in
                #expect(FileManager.default.fileExists(atPath: programs.question))
                #expect(FileManager.default.fileExists(atPath: programs.answer))
                return programs
            }
            #expect(programs.question == directory + "-other/question")
            #expect(!FileManager.default.fileExists(atPath: programs.question))
        }
        // Gone with its owner: unmounted.
        let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        #expect(!mounts.contains(directory))
    }

    /// The object the agent embeds is the source's: `make bpf` was run after the last change.
    @Test func theEmbeddedProgramsAreTheSources() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let made = FileManager.default.temporaryDirectory.appendingPathComponent("dns-fast-path-\(getpid()).h").path
        defer { try? FileManager.default.removeItem(atPath: made) }
        let compile = Process()
        compile.executableURL = URL(fileURLWithPath: root + "/scripts/bpf-object")
        compile.arguments = ["Sources/CDNSFastPath/bpf/dns-fast-path.bpf.c", made]
        compile.currentDirectoryURL = URL(fileURLWithPath: root)
        try compile.run()
        compile.waitUntilExit()
        try #require(compile.terminationStatus == 0)
        let committed = try Data(
            contentsOf: URL(fileURLWithPath: root + "/Sources/CDNSFastPath/dns_fast_path_object.h"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: made)) == committed, "run `make bpf` and commit the header")
    }
}
