import Foundation
import ScreenTimeCore
import Testing

/// The readers of a connection's first bytes: TLS ClientHello, HTTP request head, QUIC Initial,
/// on ClientHellos captured from curl, openssl, Chromium and Firefox
/// (`Fixtures/ClientHellos/README.md`), compared with tshark's reading of the same bytes.
@Suite struct ConnectionOpeningTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/ClientHellos/"
    static let helloNames = ["curl", "openssl", "chromium", "chromium-2", "firefox"]

    static func fixture(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: fixtures + name)))
    }

    static func hello(_ bytes: [UInt8]) -> TLSClientHello? {
        if case .read(let hello) = TLSClientHello.read(bytes[...]) { return hello }
        return nil
    }

    /// What tshark's reading (the reference script's JSON) says, in our terms.
    struct Reference: Decodable, Equatable {
        var serverName: String?
        var extensions: [Int]
        var cipherSuites: Int
        var alpn: [String]
        var hasECH: Bool
        var legacyVersion: String?
        var handshakeLength: Int?

        init(decoding data: Data) throws { self = try JSONDecoder().decode(Reference.self, from: data) }

        init(_ hello: TLSClientHello) {
            serverName = hello.serverName
            extensions = hello.extensions.map(Int.init)
            cipherSuites = hello.cipherSuiteCount
            alpn = hello.alpn.map { String(decoding: $0, as: UTF8.self) }
            hasECH = hello.hasECH
            legacyVersion = "0x" + String(format: "%04x", hello.legacyVersion)
            handshakeLength = hello.handshakeLength
        }
    }

    @Test(arguments: helloNames)
    func capturedHellosReadAsTsharkReadsThem(_ name: String) throws {
        let bytes = try Self.fixture(name + ".bin")
        let hello = try #require(Self.hello(bytes))
        let reference = try Reference(decoding: Data(contentsOf: URL(fileURLWithPath: Self.fixtures + name + ".json")))
        #expect(Reference(hello) == reference)
        #expect(hello.serverName == "video.shielded.test")
        #expect(ConnectionOpening.read(bytes[...]) == .names([try dnsName("video.shielded.test")], .tls))
    }

    /// Differential, live: tshark (through `scripts/reference-client-hello`) reads the captured
    /// hellos and hellos made here with other names, cut and re-recorded in several records, as
    /// this reader does.
    @Test func agreesWithTsharkOnHellosMadeHere() throws {
        var corpus: [(String, [UInt8])] = []
        for name in Self.helloNames { corpus.append((name, try Self.fixture(name + ".bin"))) }
        // The Chromium hello with its name swapped for others of the same length.
        let chromium = try Self.fixture("chromium.bin")
        let original = Array("video.shielded.test".utf8)
        let at = try #require(chromium.firstRange(of: original))
        for replacement in ["a.b.c.d.e.f.g.h.i.j", "xn--bcher-kva.test0", "MiXeD.CaSe.Examples"] {
            var changed = chromium
            #expect(replacement.utf8.count == original.count)
            changed.replaceSubrange(at, with: Array(replacement.utf8))
            corpus.append(("chromium as \(replacement)", changed))
        }
        // The Firefox hello re-recorded as three records (a hello may span records).
        let firefox = try Self.fixture("firefox.bin")
        corpus.append(("firefox in three records", Self.rerecorded(firefox, cuts: [100, 900])))
        for (label, bytes) in corpus {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("hello-\(UUID().uuidString).bin")
            try Data(bytes).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let output = try Self.reference(file.path)
            let reference = try Reference(decoding: output)
            let ours = try #require(Self.hello(bytes), "\(label)")
            #expect(Reference(ours) == reference, "\(label)")
        }
    }

    /// The same handshake message cut into several records.
    static func rerecorded(_ record: [UInt8], cuts: [Int]) -> [UInt8] {
        let message = Array(record[5...])
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        for cut in cuts + [message.count] {
            pieces.append(message[start..<cut])
            start = cut
        }
        return pieces.flatMap { piece -> [UInt8] in
            [0x16, 0x03, 0x01, UInt8(piece.count >> 8), UInt8(piece.count & 0xFF)] + piece
        }
    }

    static func reference(_ path: String) throws -> Data {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/reference-client-hello").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = [path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "reference-client-hello failed: install tshark (make deps)")
        return data
    }

    /// Every prefix of a hello is incomplete (it may pass while more comes), never a verdict:
    /// the name, wherever Chromium's permutation put it, is read only from the whole.
    @Test(arguments: helloNames)
    func everyPrefixIsIncomplete(_ name: String) throws {
        let bytes = try Self.fixture(name + ".bin")
        for length in 0..<bytes.count {
            #expect(ConnectionOpening.read(bytes[0..<length]) == .incomplete, "\(name) cut at \(length)")
        }
        // And bytes after the hello (early data) change nothing.
        #expect(ConnectionOpening.read((bytes + [0x17, 0x03, 0x03, 0, 1, 0])[...]) != .incomplete)
    }

    @Test func lyingLengthsAndWrongMessagesAreUnreadable() throws {
        let bytes = try Self.fixture("curl.bin")
        func read(_ edit: (inout [UInt8]) -> Void) -> ConnectionOpening {
            var changed = bytes
            edit(&changed)
            return ConnectionOpening.read(changed[...])
        }
        // A handshake that is not a ClientHello (a ServerHello's type).
        guard case .unreadable(.tls, _) = read({ $0[5] = 2 }) else { Issue.record("a ServerHello passed"); return }
        // The hello's length beyond the limit, and one too short for its fixed fields.
        guard case .unreadable(.tls, _) = read({ $0[6] = 0x01 }) else { Issue.record("a 64 KiB hello"); return }
        guard
            case .unreadable(.tls, _) = read({
                $0[8] = 10; $0[3] = 0; $0[4] = 14
            })
        else {
            Issue.record("a 10-byte hello")
            return
        }
        // A record version that is not TLS.
        guard case .unreadable(.tls, _) = read({ $0[2] = 0x09 }) else { Issue.record("record version"); return }
        // The extensions' length one more than there is.
        let extensionsAt =
            5 + 4 + 2 + 32 + 1 + Int(bytes[43]) + 2
            + (Int(bytes[44 + Int(bytes[43])]) << 8 | Int(bytes[45 + Int(bytes[43])])) + 2
        guard case .unreadable(.tls, _) = read({ $0[extensionsAt + 1] &+= 1 }) else {
            Issue.record("extension lengths")
            return
        }
        // Application data with no hello before it: a connection whose opening was not seen.
        guard case .unreadable(.tls, _) = ConnectionOpening.read([0x17, 0x03, 0x03, 0x00, 0x10][...]) else {
            Issue.record("TLS data without a hello")
            return
        }
    }

    /// Random bytes, and random damage to real hellos, never trap, and whatever they read as is
    /// one of the four outcomes, with names that are DNS names.
    @Test func fuzzedOpeningsNeverTrap() throws {
        var generator = SeededGenerator(seed: 19)
        var outcomes: [String: Int] = [:]
        let hellos = try Self.helloNames.map { try Self.fixture($0 + ".bin") }
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                if round % 4 == 0, !bytes.isEmpty { bytes[0] = 0x16 }
                if round % 8 == 0, bytes.count > 1 { bytes[1] = 0x03 }
            } else {
                bytes = hellos[round % hellos.count]
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] = UInt8.random(in: 0...255, using: &generator)
                }
                if round % 3 == 0 { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator))) }
            }
            let reading = ConnectionOpening.read(bytes[...])
            switch reading {
            case .incomplete: outcomes["incomplete", default: 0] += 1
            case .unnamed: outcomes["unnamed", default: 0] += 1
            case .unreadable: outcomes["unreadable", default: 0] += 1
            case .names(let names, _):
                outcomes["names", default: 0] += 1
                #expect(names.allSatisfy { !$0.labels.isEmpty })
            }
        }
        // The damage reached every outcome: the fuzzing is not stuck in one branch.
        #expect(outcomes.count == 4, "\(outcomes)")
    }

    // MARK: HTTP

    @Test func theHostOfAChromiumRequest() throws {
        let bytes = try Self.fixture("chromium-http.bin")
        #expect(ConnectionOpening.read(bytes[...]) == .names([try dnsName("video.shielded.test")], .http))
        for length in 0..<(bytes.count - 1) {
            #expect(ConnectionOpening.read(bytes[0..<length]) == .incomplete, "cut at \(length)")
        }
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: Blocked.Test:8080\r\n\r\n", ["blocked.test"]),
        ("GET http://blocked.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", ["blocked.test", "allowed.test"]),
        ("CONNECT blocked.test:443 HTTP/1.1\r\nHost: blocked.test:443\r\n\r\n", ["blocked.test", "blocked.test"]),
        ("POST /form HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", []),
        ("GET / HTTP/1.1\r\nhost:a.test\r\nHOST: b.test.\r\n\r\n", ["a.test", "b.test"]),
        ("GET / HTTP/1.1\nHost: user@c.test\n\n", ["c.test"]),
        ("GET / HTTP/1.1\r\nHost: [fd00::1]:80\r\n\r\n", []),
        ("GET / HTTP/1.1\r\nHost: 10.1.1.1\r\n\r\n", []),
        // What lenient servers take: empty lines first, a lower-case method, a tab, `Host :`.
        ("\r\n\r\nGET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n", ["blocked.test"]),
        ("get\t/ HTTP/1.1\r\nHost : blocked.test\r\n\r\n", ["blocked.test"]),
        ("GET / HTTP/1.1\rHost: blocked.test\r\r\n\r\n", ["blocked.test"]),
        // Read as the most lenient servers read them (restrictions, second round): a form feed
        // between words, a leading blank, a request behind a chunked body.
        ("GET\u{0C}/\u{0C}HTTP/1.1\r\nHost: blocked.test\r\n\r\n", ["blocked.test"]),
        (" GET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n", ["blocked.test"]),
        ("\tGET\u{0B}/ HTTP/1.1\r\nHost:\u{0C}blocked.test\u{0C}\r\n\r\n", ["blocked.test"]),
        (
            "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n"
                + "GET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n", ["a.test", "blocked.test"]
        ),
        ("POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", ["a.test"]),
        // Pipelined: every request in the bytes, past a body.
        (
            "GET / HTTP/1.1\r\nHost: a.test\r\n\r\nGET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
            ["a.test", "blocked.test"]
        ),
        (
            "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nXYZ HEAD / HTTP/1.1\r\nHost: blocked.test\r\n\r\n",
            ["a.test", "blocked.test"]
        ),
    ])
    func httpHosts(_ request: String, _ hosts: [String]) throws {
        #expect(ConnectionOpening.read(Array(request.utf8)[...]) == .names(try hosts.map(dnsName), .http))
    }

    /// A GET with a body that is a request: Python's BaseHTTPRequestHandler reads no body for a
    /// GET and serves the body as the next request (found by the second attack on the installed
    /// agent). Both readings are judged; a body that does not begin with a method is no request.
    @Test func aBodyThatIsARequestIsJudgedToo() throws {
        let inner = "GET /x HTTP/1.1\r\nHost: blocked.test\r\n\r\n"
        let outer = "GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: \(inner.utf8.count)\r\n\r\n"
        #expect(
            ConnectionOpening.read(Array((outer + inner).utf8)[...])
                == .names(try ["a.test", "blocked.test"].map(dnsName), .http))
        let text = "Dear teacher, here is my homework."
        let post = "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: \(text.utf8.count)\r\n\r\n" + text
        #expect(ConnectionOpening.read(Array(post.utf8)[...]) == .names([try dnsName("a.test")], .http))
    }

    @Test func httpThatCannotBeReadIsUnreadableAndOtherProtocolsAreUnnamed() {
        for unreadable in [
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/1.1\r\nHost: a b/c\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon here\r\n\r\n",
            // A body that begins as a request and is none (`GET HEAD /`): a server that reads no
            // body would take it for one.
            "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nGET HEAD / HTTP/1.1\r\nHost: b.test\r\n\r\n",
            // Two lengths that differ: where a second request starts depends on the server.
            "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nGET / HTTP/1.1\r\n\r\n",
        ] {
            guard case .unreadable(.http, _) = ConnectionOpening.read(Array(unreadable.utf8)[...]) else {
                Issue.record("\(unreadable.debugDescription) was not refused")
                continue
            }
        }
        let endless = Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000)).utf8)
        guard case .unreadable(.http, _) = ConnectionOpening.read(endless[...]) else {
            Issue.record("a head without an end was waited for")
            return
        }
        // A pipelined request begun and not yet whole is waited for.
        let begun = Array("GET / HTTP/1.1\r\nHost: a.test\r\n\r\nGET / HT".utf8)
        #expect(ConnectionOpening.read(begun[...]) == .incomplete)
        guard case .unreadable(.http, _) = ConnectionOpening.read(Array("get / http/1.1\r\n\r\n".utf8)[...]) else {
            Issue.record("a lower-case request line that is not HTTP/1 passed")
            return
        }
        for unnamed in ["SSH-2.0-OpenSSH_9.2\r\n", "\u{0}\u{1}binary", "HELLOTHEREFRIENDLYSERVER!"] {
            #expect(ConnectionOpening.read(Array(unnamed.utf8)[...]) == .unnamed, "\(unnamed.debugDescription)")
        }
        #expect(ConnectionOpening.read(Array("GE".utf8)[...]) == .incomplete)
    }

    // MARK: QUIC

    @Test func chromiumsQUICInitialIsRecognisedAndOtherDatagramsAreNot() throws {
        for name in ["chromium-quic-initial.bin", "chromium-quic-initial-2.bin"] {
            let datagram = try Self.fixture(name)
            #expect(QUICInitial.looksLikeClientInitial(datagram[...]), "\(name)")
            #expect(!QUICInitial.looksLikeClientInitial(datagram[0..<1199]), "unpadded: \(name)")
        }
        var rtp = [UInt8](repeating: 0, count: 1300)
        rtp[0] = 0x80  // RTP version 2
        rtp[5] = 8
        #expect(!QUICInitial.looksLikeClientInitial(rtp[...]))
        var shortHeader = try Self.fixture("chromium-quic-initial.bin")
        shortHeader[0] = 0x43
        #expect(!QUICInitial.looksLikeClientInitial(shortHeader[...]))
        var negotiation = try Self.fixture("chromium-quic-initial.bin")
        negotiation.replaceSubrange(1..<5, with: [0, 0, 0, 0])
        #expect(!QUICInitial.looksLikeClientInitial(negotiation[...]))
    }

    // MARK: addresses

    @Test func learnedAddressesAreShieldedSharedOrForgotten() throws {
        var book = LearnedAddresses(capacity: 100)
        let cdn = try #require(LearnedAddresses.Address([10, 2, 2, 2]))
        let video = try #require(
            LearnedAddresses.Address([UInt8](repeating: 0xFD, count: 1) + [UInt8](repeating: 0, count: 14) + [2]))
        #expect(cdn.description == "10.2.2.2" && video.description == "fd00:0:0:0:0:0:0:2")
        book.learn(cdn, shielded: true, ttl: 300, now: 0)
        book.learn(video, shielded: true, ttl: 10, now: 0)
        #expect(book.standing(of: cdn, now: 1) == .shielded)
        // Returned for an allowed name too: shared, judged by the name a connection carries.
        book.learn(cdn, shielded: false, ttl: 100, now: 2)
        #expect(book.standing(of: cdn, now: 3) == .shared)
        #expect(book.standing(of: cdn, now: 150) == .shielded)
        #expect(book.standing(of: cdn, now: 400) == .unknown)
        // A TTL shorter than the minimum lasts the minimum; an allowed address alone is unknown.
        #expect(book.standing(of: video, now: 59) == .shielded && book.standing(of: video, now: 61) == .unknown)
        let allowed = try #require(LearnedAddresses.Address([10, 1, 1, 1]))
        book.learn(allowed, shielded: false, ttl: 300, now: 0)
        #expect(book.standing(of: allowed, now: 1) == .unknown)
        #expect(LearnedAddresses.Address([1, 2, 3]) == nil)
    }

    /// A child flooding the book with answers of its own pushes out allowed addresses, never the
    /// shielded ones, and the book never grows past its capacity.
    @Test func aFloodOfAnswersKeepsTheShieldedAddresses() throws {
        var book = LearnedAddresses(capacity: 64)
        let shielded = try (0..<16).map { try #require(LearnedAddresses.Address([10, 2, 0, UInt8($0)])) }
        for address in shielded { book.learn(address, shielded: true, ttl: 60, now: 0) }
        for index in 0..<10_000 {
            let address = try #require(
                LearnedAddresses.Address([172, 16, UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF)]))
            book.learn(address, shielded: false, ttl: 86_400, now: 1)
            #expect(book.count <= 64)
        }
        #expect(shielded.allSatisfy { book.standing(of: $0, now: 2) == .shielded })
    }

    func dnsName(_ text: String) throws -> DNSName {
        try DNSName(labels: text.split(separator: ".").map { Array($0.utf8) })
    }
}
