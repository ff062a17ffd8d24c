import Foundation
import ScreenTimeCore
import Testing

/// Bytes from hex text, spaces allowed.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func name(_ text: String) -> DNSName {
    try! DNSName(labels: text.split(separator: ".").map { Array($0.utf8) })
}

@Suite struct DNSMessageTests {
    /// A query for www.example.com A, RD set, with an OPT record (UDP 1232, DO).
    static let query = hex(
        """
        abcd 0120 0001 0000 0000 0001
        03 777777 07 6578616d706c65 03 636f6d 00 0001 0001
        00 0029 04d0 00 00 8000 0000
        """)

    @Test func parsesAQueryWithEDNS() throws {
        let message = try DNSMessage(parsing: Self.query)
        #expect(message.id == 0xABCD)
        #expect(!message.isResponse)
        #expect(message.recursionDesired)
        #expect(message.opcode == 0)
        #expect(message.questions == [DNSMessage.Question(name: name("www.example.com"), type: 1)])
        #expect(message.edns == DNSMessage.EDNS(udpPayloadSize: 1232, dnssecOK: true))
        #expect(message.additionals.isEmpty)
        #expect(message.questions[0].name.description == "www.example.com.")
        #expect(message.questions[0].name.domainName == (try DomainName("www.example.com")))
        #expect(message.serialized() == Self.query)
    }

    @Test func followsCompressionPointers() throws {
        // A response: the answer's name points at the question's name (offset 12).
        let response = hex(
            """
            abcd 8180 0001 0001 0000 0000
            03 777777 07 6578616d706c65 03 636f6d 00 0001 0001
            c00c 0001 0001 0000012c 0004 c0000201
            """)
        let message = try DNSMessage(parsing: response)
        #expect(message.isResponse)
        #expect(message.answers.count == 1)
        #expect(message.answers[0].name == name("www.example.com"))
        #expect(message.answers[0].ttl == 300)
        #expect(message.answers[0].data == [192, 0, 2, 1])
        // Written back compressed the same way.
        #expect(message.serialized() == response)
    }

    @Test func severalQuestions() throws {
        let message = DNSMessage(
            id: 7, flags: 0x0100,
            questions: [
                .init(name: name("a.example"), type: 1), .init(name: name("b.a.example"), type: 28),
                .init(name: name("Example.ORG"), type: 15),
            ])
        let parsed = try DNSMessage(parsing: message.serialized())
        #expect(parsed == message)
        #expect(parsed.questions[2].name.lowercased == name("example.org"))
    }

    @Test func oddBytesInLabelsAreKeptAndShownEscaped() throws {
        let odd = try DNSName(labels: [[0x00, 0x41, 0x2E], Array("example".utf8), Array("com".utf8)])
        let message = DNSMessage(id: 1, flags: 0, questions: [.init(name: odd, type: 1)])
        let parsed = try DNSMessage(parsing: message.serialized())
        #expect(parsed.questions[0].name == odd)
        #expect(odd.description == "\\000A\\..example.com.")
        #expect(odd.domainName == nil)
        #expect(odd.lowercased.labels[0] == [0x00, 0x61, 0x2E])
    }

    @Test(arguments: [
        ("", "empty"),
        ("abcd 0100 0001", "a truncated header"),
        ("abcd 0100 0001 0000 0000 0000 03 777777", "a name without its end"),
        ("abcd 0100 0001 0000 0000 0000 05 6162", "a label longer than the message"),
        ("abcd 0100 0001 0000 0000 0000 00 0001", "a question without its class"),
        ("abcd 0100 0001 0000 0000 0000 c00c 0001 0001", "a pointer to itself"),
        ("abcd 0100 0001 0000 0000 0000 c00e 0001 0001 00", "a pointer forwards"),
        ("abcd 0100 0001 0000 0000 0000 01 61 c00c 0001 0001", "a pointer back into the same name (a loop)"),
        ("abcd 0100 0001 0000 0000 0000 41 61 00 0001 0001", "label type 01"),
        ("abcd 0100 0001 0000 0000 0000 81 61 00 0001 0001", "label type 10"),
        ("abcd 0100 ffff 0000 0000 0000 00 0001 0001", "counts beyond the bytes"),
        ("abcd 0100 0001 0000 0000 0000 00 0001 0001 ff", "trailing bytes"),
        ("abcd 8100 0000 0001 0000 0000 00 0001 0001 00000000 0010 01", "record data cut short"),
        ("abcd 0100 0000 0000 0000 0002 00 0029 0200 00000000 0000 00 0029 0200 00000000 0000", "two OPT records"),
        ("abcd 0100 0000 0000 0000 0001 01 61 00 0029 0200 00000000 0000", "an OPT record not owned by the root"),
    ])
    func refusesMalformedMessages(_ text: String, _ what: String) {
        #expect(throws: ScreenTimeCoreError.self, "\(what)") { try DNSMessage(parsing: hex(text)) }
    }

    @Test func refusesNamesOver255Bytes() {
        // 5 labels of 63 bytes: 321 bytes of name.
        let label = "3f" + String(repeating: "61", count: 63)
        let bytes = hex("abcd 0100 0001 0000 0000 0000" + String(repeating: label, count: 5) + "00 0001 0001")
        do {
            _ = try DNSMessage(parsing: bytes)
            Issue.record("a 321-byte name was accepted")
        } catch {
            #expect(error.message.contains("255"))
        }
        // Built through a pointer: a valid 193-byte first name, then two labels and a pointer to it
        // (128 + 193 = 321 bytes). Each part is fine on its own; the name is not.
        let first = String(repeating: label, count: 3) + "00 0001 0001"
        let second = String(repeating: label, count: 2) + "c00c 0001 0001"
        let viaPointer = hex("abcd 0100 0002 0000 0000 0000" + first + second)
        let pointerError = #expect(throws: ScreenTimeCoreError.self) { try DNSMessage(parsing: viaPointer) }
        #expect(pointerError?.message.contains("255") == true)
        // The first question alone parses: the refusal is the combined length.
        #expect((try? DNSMessage(parsing: hex("abcd 0100 0001 0000 0000 0000" + first))) != nil)
        // Made in code, the same limits hold.
        #expect(throws: ScreenTimeCoreError.self) {
            try DNSName(labels: Array(repeating: Array(repeating: 0x61, count: 63), count: 5))
        }
        #expect(throws: ScreenTimeCoreError.self) { try DNSName(labels: [[]]) }
    }

    @Test func nxdomainAnswersTheQuery() throws {
        let query = try DNSMessage(parsing: Self.query)
        let answer = DNSMessage.nxdomain(answering: query)
        let parsed = try DNSMessage(parsing: answer.serialized())
        #expect(parsed.id == query.id)
        #expect(parsed.isResponse)
        #expect(parsed.rcode == DNSMessage.rcodeNXDomain)
        #expect(parsed.recursionDesired)
        #expect(parsed.flags & 0x0080 != 0)  // RA
        #expect(parsed.flags & 0x0400 == 0)  // not authoritative
        #expect(parsed.questions == query.questions)
        #expect(parsed.answers.isEmpty && parsed.authorities.isEmpty)
        #expect(parsed.edns?.udpPayloadSize == 1232)
        // No EDNS in, none out.
        let plain = DNSMessage(id: 9, flags: 0x0100, questions: query.questions)
        #expect(DNSMessage.nxdomain(answering: plain).edns == nil)
    }

    /// Random bytes and random mutations of real messages: the parser never traps, and whatever
    /// it accepts it writes back into a message that reads the same.
    @Test func survivesRandomAndMutatedInput() throws {
        var generator = SeededGenerator(seed: 0x5EED_D115)
        let seeds: [[UInt8]] = [
            Self.query, DNSMessage.nxdomain(answering: try DNSMessage(parsing: Self.query)).serialized(),
            hex(
                "abcd 8180 0001 0001 0000 0000 03777777076578616d706c6503636f6d00 0001 0001 c00c 0001 0001 0000012c 0004 c0000201"
            ),
        ]
        var accepted = 0
        for round in 0..<60_000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                bytes = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    switch Int.random(in: 0...2, using: &generator) {
                    case 0:
                        bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                            in: 0...255, using: &generator)
                    case 1: bytes.removeLast(Int.random(in: 0...min(8, bytes.count - 1), using: &generator))
                    default:
                        bytes.insert(
                            UInt8.random(in: 0...255, using: &generator),
                            at: Int.random(in: 0...bytes.count, using: &generator))
                    }
                }
            }
            guard let message = try? DNSMessage(parsing: bytes) else { continue }
            accepted += 1
            #expect(try DNSMessage(parsing: message.serialized()) == message)
        }
        #expect(accepted > 1_000)
    }

    /// A reply's addresses (with their TTLs) and whether an HTTPS record offers ECH keys.
    @Test func answersGiveAddressesAndTellECH() throws {
        let name = try DNSName(labels: [Array("video".utf8), Array("test".utf8)])
        let https: [UInt8] = [0, 1, 0] + [0, 1, 0, 3, 2, 0x68, 0x32] + [0, 5, 0, 4, 1, 2, 3, 4]
        let reply = DNSMessage(
            id: 7, flags: 0x8180, questions: [DNSMessage.Question(name: name, type: 65)],
            answers: [
                DNSMessage.Record(name: name, type: 65, class: 1, ttl: 60, data: https),
                DNSMessage.Record(name: name, type: 1, class: 1, ttl: 300, data: [10, 2, 2, 2]),
                DNSMessage.Record(
                    name: name, type: 28, class: 1, ttl: 30, data: [0xFD] + Array(repeating: 0, count: 14) + [2]),
                DNSMessage.Record(name: name, type: 1, class: 1, ttl: 300, data: [1, 2, 3]),
            ])
        let answers = try DNSMessage.answers(in: reply.serialized())
        #expect(answers.offersECH)
        #expect(answers.addresses.map(\.address) == [[10, 2, 2, 2], [0xFD] + Array(repeating: 0, count: 14) + [2]])
        #expect(answers.addresses.map(\.ttl) == [300, 30])
        // Without the ech parameter, and a parameter that runs past its record, are told apart.
        var plain = reply
        plain.answers[0].data = [0, 1, 0] + [0, 1, 0, 3, 2, 0x68, 0x32]
        #expect(try !DNSMessage.answers(in: plain.serialized()).offersECH)
        var lying = reply
        lying.answers[0].data = [0, 1, 0] + [0, 1, 0, 9, 2, 0x68, 0x32]
        #expect(throws: ScreenTimeCoreError.self) { try DNSMessage.answers(in: lying.serialized()) }
        // The empty answer put in its place keeps the question and says NOERROR.
        let query = DNSMessage(id: 9, flags: 0x0100, questions: [DNSMessage.Question(name: name, type: 65)])
        let empty = DNSMessage.noData(answering: query)
        #expect(empty.rcode == 0 && empty.answers.isEmpty && empty.isResponse && empty.questions == query.questions)
    }

    /// Our reading against dnspython's, on a corpus dnspython made, and dnspython's reading of
    /// what we write.
    @Test func agreesWithDnspython() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/dns-reference.py").path
        let corpus = try runPython(script, "corpus", input: "")
        var lines = 0
        var ours: [String] = []
        for line in corpus.split(separator: "\n") {
            let entry = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let wire = hex(entry["wire"] as! String)
            let message = try DNSMessage(parsing: wire)
            #expect(reading(of: message) == entry["reading"] as! NSDictionary, "\(entry["wire"]!)")
            ours.append(hexString(message.serialized()))
            ours.append(hexString(DNSMessage.nxdomain(answering: message).serialized()))
            lines += 1
        }
        #expect(lines == 600)
        // dnspython reads every message we write as we do.
        let theirs = try runPython(script, "decode", input: ours.joined(separator: "\n") + "\n")
        for (wire, line) in zip(ours, theirs.split(separator: "\n")) {
            let decoded = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! NSDictionary
            #expect(decoded == reading(of: try DNSMessage(parsing: hex(wire))), "\(wire)")
        }
    }

    private func reading(of message: DNSMessage) -> NSDictionary {
        func labels(_ name: DNSName) -> [String] { name.labels.map(hexString) }
        func records(_ records: [DNSMessage.Record]) -> [[Any]] {
            records.map { [labels($0.name), Int($0.type), Int($0.class), Int($0.ttl)] }
        }
        let edns: Any =
            message.edns.map {
                ["payload": Int($0.udpPayloadSize), "version": Int($0.version), "dnssecOK": $0.dnssecOK] as NSDictionary
            } ?? NSNull()
        let dictionary: [String: Any] = [
            "id": Int(message.id), "flags": Int(message.flags),
            "questions": message.questions.map { [labels($0.name), Int($0.type), Int($0.class)] },
            "answers": records(message.answers), "authorities": records(message.authorities),
            "additionals": records(message.additionals), "edns": edns,
        ]
        // Through JSON, so that both sides are made of the same Foundation types.
        let data = try! JSONSerialization.data(withJSONObject: dictionary)
        return try! JSONSerialization.jsonObject(with: data) as! NSDictionary
    }

    private func runPython(_ script: String, _ mode: String, input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, mode]
        let output = Pipe()
        let stdin = Pipe()
        process.standardOutput = output
        process.standardInput = stdin
        try process.run()
        let writer = Thread {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(
            process.terminationStatus == 0, "dns-reference.py \(mode) failed: install python3-dnspython (make deps)")
        return String(decoding: data, as: UTF8.self)
    }
}

/// A small deterministic generator (SplitMix64), so a fuzz failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
