import CDNSFastPath
import Glibc
import Synchronization

/// The DNS fast path: a table in the kernel of the questions a filtered user may ask, and have
/// answered, without a trip through the queue or connection tracking, and the two programs
/// (iptables' `bpf` match, in the raw table) that read it: one notes each question it lets go
/// (its flow and id), the other lets go the answer to that very question, once. See
/// `Sources/CDNSFastPath/bpf/dns-fast-path.bpf.c` and `Firewall.untrackedRuleset`.
///
/// The agent puts a question in the table only after it judged that very question (the same
/// user, type and name, byte for byte) and its answer through the queue: a name it allows,
/// answered by addresses of that name and nothing else. An entry holds until its expiry (at most
/// half a minute) and while the table's generation is its own; the agent moves the generation
/// on at every change of a filter, which voids every entry at once. An answer that is anything
/// but addresses of the question's name (an alias, an error, a truncated reply) takes the name
/// off the table in the kernel and is dropped (her resolver asks again, through the queue).
///
/// The programs are pinned, for iptables-restore to find, only while the rules are installed
/// (`pinned`), in a bpf file system mounted for the agent alone (`directory`): a rule keeps its
/// program, and the program its table, alive in the kernel, after the agent too.
public final class DNSFastPath: Sendable {
    /// The bpf file system's mount point, where the programs are pinned while the rules are
    /// installed.
    public let directory: String
    private nonisolated(unsafe) let path: OpaquePointer

    /// Mounts the file system and loads the programs and their table. Needs CAP_SYS_ADMIN (the
    /// mount, the load), so before the agent drops its capabilities; pinning and the table's
    /// changes need none.
    public init(directory: String) throws(SystemError) {
        var made: OpaquePointer?
        var stage: UnsafePointer<CChar>?
        let result = dns_fast_path_open(directory, &made, &stage)
        guard result == 0, let made else {
            let step = stage.map { String(cString: $0) } ?? "load"
            throw SystemError(
                .systemCall, "the DNS fast path: \(step) at \(directory): \(String(cString: strerror(-result)))",
                errno: -result)
        }
        self.directory = directory
        path = made
    }

    deinit { dns_fast_path_close(path, directory) }

    /// Detaches the bpf file system when the agent stops (an agent that is killed leaves it
    /// mounted, empty, until the next one starts; where systemd runs it, its mount namespace
    /// goes with it). The programs stay loaded, and the rules keep theirs.
    public func unmount() { dns_fast_path_unmount(directory) }

    /// Where the programs are pinned while `pinned` runs: the one that matches a question the
    /// table lets pass (OUTPUT), and the one that matches an answer it lets pass (INPUT).
    public var programs: Firewall.DNSFastPathPrograms {
        Firewall.DNSFastPathPrograms(
            question: directory + "/question", answer: directory + "/answer", hello: directory + "/hello",
            acknowledged: directory + "/acknowledged", asked: directory + "/asked")
    }

    /// Runs `body` (the rules' install) with the programs pinned at `programs`, then unpins them.
    public func pinned<Result>(
        _ body: (Firewall.DNSFastPathPrograms) throws(SystemError) -> Result
    ) throws(SystemError) -> Result {
        let result = dns_fast_path_pin(path, directory)
        guard result == 0 else { throw SystemError.call("pinning the DNS fast path's programs", -result) }
        defer { dns_fast_path_unpin(directory) }
        return try body(programs)
    }

    /// The longest name (in wire form, its final zero included) the table holds.
    public static let longestName = Int(DNS_FAST_PATH_NAME_MAX)
    /// The entries it holds; the least recently used goes when it is full.
    public static let capacity = Int(DNS_FAST_PATH_ENTRIES)

    /// A question, as the kernel side keys it: the name exactly as sent (wire form), its type.
    public struct Question: Hashable, Sendable {
        public var uid: UInt32
        public var type: UInt16
        public var name: [UInt8]

        public init(uid: UInt32, type: UInt16, name: [UInt8]) {
            self.uid = uid
            self.type = type
            self.name = name
        }

        /// Whether the kernel side can hold it: a name of at most `longestName` bytes, type A
        /// or AAAA.
        public var fits: Bool { !name.isEmpty && name.count <= DNSFastPath.longestName && (type == 1 || type == 28) }

        fileprivate var key: dns_fast_path_key {
            var key = dns_fast_path_key()
            key.uid = uid
            key.type = type
            key.length = UInt16(name.count)
            withUnsafeMutableBytes(of: &key.name) { buffer in
                for (index, byte) in name.prefix(DNSFastPath.longestName).enumerated() { buffer[index] = byte }
            }
            return key
        }

        fileprivate init(_ key: dns_fast_path_key) {
            uid = key.uid
            type = key.type
            name = withUnsafeBytes(of: key.name) {
                Array($0.prefix(Int(min(key.length, UInt16(DNSFastPath.longestName)))))
            }
        }
    }

    /// What a reply (a DNS message) would let into the table, if the agent allows its question:
    /// the question's type and name (as sent); nil for a
    /// reply whose answers the kernel side would not let pass. The same test as the `answer`
    /// program's: a response with no error, not truncated, one question (A or AAAA, class IN,
    /// an uncompressed name of at most `longestName` bytes), one to sixteen answers that are
    /// each an address of that name (a pointer to the question's), nothing in authority, an
    /// EDNS record at most, nothing after.
    public static func entry(answeredBy reply: some Collection<UInt8>) -> (type: UInt16, name: [UInt8])? {
        let bytes = Array(reply)
        func word(_ at: Int) -> Int? { at + 1 < bytes.count ? Int(bytes[at]) << 8 | Int(bytes[at + 1]) : nil }
        guard let flags = word(2), flags & 0xFA0F == 0x8000, word(4) == 1, let answers = word(6),
            (1...16).contains(answers),
            word(8) == 0, let additionals = word(10), additionals <= 1
        else { return nil }
        var at = 12
        while true {
            guard at < bytes.count, at - 12 < longestName else { return nil }
            let count = Int(bytes[at])
            if count == 0 { break }
            guard count <= 63 else { return nil }
            at += count + 1
        }
        let name = Array(bytes[12...at])
        guard name.count <= longestName, let type = word(at + 1), type == 1 || type == 28, word(at + 3) == 1 else {
            return nil
        }
        at += 5
        for _ in 0..<answers {
            guard word(at) == 0xC00C, word(at + 2) == type, word(at + 4) == 1, word(at + 8) != nil,
                let length = word(at + 10), length == (type == 1 ? 4 : 16)
            else { return nil }
            at += 12 + length
        }
        if additionals == 1 {
            guard at + 11 <= bytes.count, bytes[at] == 0, word(at + 1) == 41, let length = word(at + 9) else {
                return nil
            }
            at += 11 + length
        }
        guard at == bytes.count else { return nil }
        return (UInt16(type), name)
    }

    /// Lets `question` be asked in the kernel, and its answer pass there (the answer to that very
    /// question, nothing but addresses of its name), for `seconds` under `generation`. Returns the
    /// questions the entry it replaced had passed (for the usage reports), 0 for none.
    @discardableResult
    public func allow(_ question: Question, seconds: Double, generation: UInt64) throws(SystemError) -> UInt64 {
        guard question.fits else {
            throw SystemError(.systemCall, "the DNS fast path holds names of 1 to \(Self.longestName) bytes, A or AAAA")
        }
        let expires = dns_fast_path_now() &+ UInt64(max(0, min(seconds, 86_400)) * 1e9)
        var key = question.key
        var hits: UInt64 = 0
        let result = dns_fast_path_put(path, &key, expires, generation, &hits)
        guard result == 0 else { throw SystemError.call("the DNS fast path's table", -result) }
        return hits
    }

    /// Takes `question` off the table; returns the questions it had passed.
    @discardableResult
    public func remove(_ question: Question) throws(SystemError) -> UInt64 {
        var key = question.key
        var hits: UInt64 = 0
        let result = dns_fast_path_remove(path, &key, &hits)
        guard result == 0 else { throw SystemError.call("the DNS fast path's table", -result) }
        return hits
    }

    /// Voids every entry not of `generation`.
    public func setGeneration(_ generation: UInt64) throws(SystemError) {
        let result = dns_fast_path_set_generation(path, generation)
        guard result == 0 else { throw SystemError.call("the DNS fast path's generation", -result) }
    }

    /// The questions each entry passed since it was made or last asked, and zero them.
    public func takeHits() -> [Question: UInt64] {
        final class Taken { var hits: [Question: UInt64] = [:] }
        let taken = Taken()
        withExtendedLifetime(taken) {
            _ = dns_fast_path_take_hits(
                path, Unmanaged.passUnretained(taken).toOpaque(),
                { context, key, hits in
                    guard let context, let key else { return }
                    let taken = Unmanaged<Taken>.fromOpaque(context).takeUnretainedValue()
                    taken.hits[Question(key.pointee), default: 0] += hits
                }, Int32(Self.capacity * 2))
        }
        return taken.hits
    }

    /// Runs the kernel side's `question`, `answer`, `hello` or `acknowledged` program on an Ethernet frame, as the kernel's
    /// test run does (the program sees it from its IP header on, with a socket of uid 0), and says
    /// whether it matched. For the tests.
    /// With `segmentSize`, the frame is one sent in segments of that size (UDP_SEGMENT).
    public func matches(_ program: String, frame: [UInt8], segmentSize: Int = 0) throws(SystemError) -> Bool {
        var result: UInt32 = 0
        let status = frame.withUnsafeBytes {
            dns_fast_path_run(path, program, $0.baseAddress, UInt32($0.count), UInt32(segmentSize), &result)
        }
        guard status == 0 else { throw SystemError.call("a test run of the DNS fast path's \(program)", -status) }
        return result != 0
    }

    // MARK: hellos

    /// The longest server name the hello table holds.
    public static let longestServerName = Int(HELLO_FAST_PATH_NAME_MAX)

    /// A TLS hello, as the kernel side keys it: the sender's uid, the server's address and port,
    /// the one server name exactly as sent.
    public struct Hello: Hashable, Sendable {
        public var uid: UInt32
        /// 4 or 16 bytes.
        public var address: [UInt8]
        public var port: UInt16
        public var name: [UInt8]

        public init(uid: UInt32, address: [UInt8], port: UInt16, name: [UInt8]) {
            self.uid = uid
            self.address = address
            self.port = port
            self.name = name
        }

        /// Whether the kernel side can hold it: an address of 4 or 16 bytes, a name of 1 to
        /// `longestServerName` bytes.
        public var fits: Bool {
            (address.count == 4 || address.count == 16) && !name.isEmpty && name.count <= DNSFastPath.longestServerName
        }

        fileprivate var key: hello_fast_path_key {
            var key = hello_fast_path_key()
            key.uid = uid
            key.family = address.count == 4 ? 4 : 6
            key.length = UInt8(clamping: name.count)
            key.port = port
            withUnsafeMutableBytes(of: &key.address) { buffer in
                for (index, byte) in address.prefix(16).enumerated() { buffer[index] = byte }
            }
            withUnsafeMutableBytes(of: &key.name) { buffer in
                for (index, byte) in name.prefix(DNSFastPath.longestServerName).enumerated() { buffer[index] = byte }
            }
            return key
        }
    }

    /// Lets `hello` be sent in the kernel for `seconds` under `generation` (see the `hello`
    /// program). Returns the hellos the entry it replaced had passed, 0 for none.
    @discardableResult
    public func allow(_ hello: Hello, seconds: Double, generation: UInt64) throws(SystemError) -> UInt64 {
        guard hello.fits else {
            throw SystemError(
                .systemCall, "the hello table holds server names of 1 to \(Self.longestServerName) bytes")
        }
        let expires = dns_fast_path_now() &+ UInt64(max(0, min(seconds, 86_400)) * 1e9)
        var key = hello.key
        var hits: UInt64 = 0
        let result = hello_fast_path_put(path, &key, expires, generation, &hits)
        guard result == 0 else { throw SystemError.call("the hello table", -result) }
        return hits
    }

    /// Takes `hello` off the table; returns the hellos it had passed.
    @discardableResult
    public func remove(_ hello: Hello) throws(SystemError) -> UInt64 {
        var key = hello.key
        var hits: UInt64 = 0
        let result = hello_fast_path_remove(path, &key, &hits)
        guard result == 0 else { throw SystemError.call("the hello table", -result) }
        return hits
    }

    /// The entries in the hello table now, the void ones included.
    public var helloCount: Int { max(0, Int(hello_fast_path_count(path))) }

    /// The entries in the table now, the void ones included (what the least-recently-used
    /// eviction has not taken yet).
    public var count: Int { max(0, Int(dns_fast_path_count(path))) }
}

extension Firewall {
    /// Where the DNS fast path's two programs are pinned (`DNSFastPath`).
    public struct DNSFastPathPrograms: Equatable, Sendable {
        public var question: String
        public var answer: String
        /// The hello fast path's program (nil: every hello comes to the queue).
        public var hello: String?
        /// Its other half, which matches the server's acknowledgement of a hello it let go.
        public var acknowledged: String?
        /// The one that reads a question `question` let go again once its bytes are the packet's
        /// own (nil: no question is let go in the kernel, only answers).
        public var asked: String?

        public init(
            question: String, answer: String, hello: String? = nil, acknowledged: String? = nil, asked: String? = nil
        ) {
            self.question = question
            self.answer = answer
            self.hello = hello
            self.acknowledged = acknowledged
            self.asked = asked
        }
    }
}
