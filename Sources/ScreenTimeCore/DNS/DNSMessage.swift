/// A DNS message (RFC 1035 §4, with EDNS from RFC 6891): parsed from the wire and written back.
///
/// The parser takes any bytes and either gives a message or throws `invalidDNSMessage` saying
/// what was wrong; it never traps and never reads past the input. Compression pointers must point
/// backwards (which rules out loops), names stay within 255 bytes, counts must match the records
/// present. Record data is kept as bytes, except that names inside it are not expanded: the filter
/// needs the questions; answers are carried so that a reply can be inspected and rewritten.
public struct DNSMessage: Hashable, Sendable {
    public struct Question: Hashable, Sendable {
        public var name: DNSName
        public var type: UInt16
        public var `class`: UInt16

        public init(name: DNSName, type: UInt16, class: UInt16 = 1) {
            self.name = name
            self.type = type
            self.class = `class`
        }
    }

    public struct Record: Hashable, Sendable {
        public var name: DNSName
        public var type: UInt16
        public var `class`: UInt16
        public var ttl: UInt32
        public var data: [UInt8]

        public init(name: DNSName, type: UInt16, class: UInt16, ttl: UInt32, data: [UInt8]) {
            self.name = name
            self.type = type
            self.class = `class`
            self.ttl = ttl
            self.data = data
        }
    }

    /// The OPT pseudo-record's fields (RFC 6891).
    public struct EDNS: Hashable, Sendable {
        public var udpPayloadSize: UInt16
        public var extendedRCode: UInt8
        public var version: UInt8
        public var dnssecOK: Bool
        public var options: [UInt8]

        public init(
            udpPayloadSize: UInt16, extendedRCode: UInt8 = 0, version: UInt8 = 0, dnssecOK: Bool = false,
            options: [UInt8] = []
        ) {
            self.udpPayloadSize = udpPayloadSize
            self.extendedRCode = extendedRCode
            self.version = version
            self.dnssecOK = dnssecOK
            self.options = options
        }
    }

    public static let typeOPT: UInt16 = 41
    public static let rcodeNXDomain: UInt8 = 3

    public var id: UInt16
    /// The 16 flag bits of the header: QR, opcode, AA, TC, RD, RA, Z, AD, CD, RCODE.
    public var flags: UInt16
    public var questions: [Question]
    public var answers: [Record]
    public var authorities: [Record]
    /// Additional records other than OPT.
    public var additionals: [Record]
    public var edns: EDNS?

    public init(
        id: UInt16, flags: UInt16, questions: [Question], answers: [Record] = [], authorities: [Record] = [],
        additionals: [Record] = [], edns: EDNS? = nil
    ) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
        self.edns = edns
    }

    public var isResponse: Bool { flags & 0x8000 != 0 }
    public var opcode: UInt8 { UInt8((flags >> 11) & 0xF) }
    public var isTruncated: Bool { flags & 0x0200 != 0 }
    public var recursionDesired: Bool { flags & 0x0100 != 0 }
    public var rcode: UInt8 { UInt8(flags & 0xF) }

    // MARK: parsing

    public init(parsing bytes: some Collection<UInt8>) throws(ScreenTimeCoreError) {
        var reader = Reader(Array(bytes))
        id = try reader.u16("the header")
        flags = try reader.u16("the header")
        let counts = (
            try reader.u16("the header"), try reader.u16("the header"), try reader.u16("the header"),
            try reader.u16("the header")
        )
        // Each question takes at least 5 bytes and each record 11: counts beyond what the bytes
        // could hold are refused before anything is allocated for them.
        let room = reader.remaining
        guard Int(counts.0) * 5 + (Int(counts.1) + Int(counts.2) + Int(counts.3)) * 11 <= room else {
            throw ScreenTimeCoreError(
                .invalidDNSMessage, "the header counts more questions and records than \(room) bytes can hold")
        }
        var questions: [Question] = []
        for _ in 0..<counts.0 {
            let name = try reader.name()
            questions.append(
                Question(name: name, type: try reader.u16("a question"), class: try reader.u16("a question")))
        }
        self.questions = questions
        answers = try (0..<counts.1).map { _ throws(ScreenTimeCoreError) in try reader.record() }
        authorities = try (0..<counts.2).map { _ throws(ScreenTimeCoreError) in try reader.record() }
        var additionals: [Record] = []
        var edns: EDNS?
        for _ in 0..<counts.3 {
            let record = try reader.record()
            if record.type == Self.typeOPT {
                guard edns == nil, record.name.labels.isEmpty else {
                    throw ScreenTimeCoreError(.invalidDNSMessage, "an OPT record must be alone and owned by the root")
                }
                edns = EDNS(
                    udpPayloadSize: record.class, extendedRCode: UInt8(record.ttl >> 24),
                    version: UInt8(truncatingIfNeeded: record.ttl >> 16), dnssecOK: record.ttl & 0x8000 != 0,
                    options: record.data)
            } else {
                additionals.append(record)
            }
        }
        self.additionals = additionals
        self.edns = edns
        guard reader.remaining == 0 else {
            throw ScreenTimeCoreError(.invalidDNSMessage, "\(reader.remaining) bytes follow the last record")
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var remaining: Int { bytes.count - offset }

        mutating func u8(_ what: String) throws(ScreenTimeCoreError) -> UInt8 {
            guard offset < bytes.count else { throw truncated(what) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16(_ what: String) throws(ScreenTimeCoreError) -> UInt16 {
            guard offset + 2 <= bytes.count else { throw truncated(what) }
            defer { offset += 2 }
            return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        }

        mutating func u32(_ what: String) throws(ScreenTimeCoreError) -> UInt32 {
            UInt32(try u16(what)) << 16 | UInt32(try u16(what))
        }

        mutating func take(_ count: Int, _ what: String) throws(ScreenTimeCoreError) -> [UInt8] {
            guard count <= remaining else { throw truncated(what) }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        /// A possibly compressed name. A pointer must point before the place it was read from, so
        /// following pointers always moves backwards and ends.
        mutating func name() throws(ScreenTimeCoreError) -> DNSName {
            var labels: [[UInt8]] = []
            var length = 1
            var position = offset
            var resumeAt: Int?
            var limit = offset
            while true {
                guard position < bytes.count else { throw truncated("a name") }
                let byte = bytes[position]
                switch byte & 0xC0 {
                case 0x00:
                    if byte == 0 {
                        offset = resumeAt ?? position + 1
                        return DNSName(validLabels: labels)
                    }
                    let count = Int(byte)
                    guard position + 1 + count <= bytes.count else { throw truncated("a label") }
                    length += count + 1
                    guard length <= DNSName.maximumLength else {
                        throw ScreenTimeCoreError(.invalidDNSMessage, "a name longer than 255 bytes")
                    }
                    labels.append(Array(bytes[position + 1..<position + 1 + count]))
                    position += 1 + count
                case 0xC0:
                    guard position + 1 < bytes.count else { throw truncated("a compression pointer") }
                    let target = Int(byte & 0x3F) << 8 | Int(bytes[position + 1])
                    guard target < limit else {
                        throw ScreenTimeCoreError(
                            .invalidDNSMessage, "a compression pointer that does not point backwards")
                    }
                    if resumeAt == nil { resumeAt = position + 2 }
                    limit = target
                    position = target
                default:
                    throw ScreenTimeCoreError(
                        .invalidDNSMessage, "a label type that does not exist (0x\(String(byte, radix: 16)))")
                }
            }
        }

        mutating func record() throws(ScreenTimeCoreError) -> Record {
            let name = try name()
            let type = try u16("a record")
            let recordClass = try u16("a record")
            let ttl = try u32("a record")
            let length = Int(try u16("a record"))
            return Record(name: name, type: type, class: recordClass, ttl: ttl, data: try take(length, "record data"))
        }

        func truncated(_ what: String) -> ScreenTimeCoreError {
            ScreenTimeCoreError(.invalidDNSMessage, "the message ends inside \(what) (\(bytes.count) bytes)")
        }
    }

    // MARK: writing

    /// The message on the wire. Names are compressed against earlier names (whole suffixes), as
    /// servers do; record data is written as it is.
    public func serialized() -> [UInt8] {
        var writer = Writer()
        writer.u16(id)
        writer.u16(flags)
        writer.u16(UInt16(clamping: questions.count))
        writer.u16(UInt16(clamping: answers.count))
        writer.u16(UInt16(clamping: authorities.count))
        writer.u16(UInt16(clamping: additionals.count + (edns == nil ? 0 : 1)))
        for question in questions {
            writer.name(question.name)
            writer.u16(question.type)
            writer.u16(question.class)
        }
        for record in answers + authorities + additionals { writer.record(record) }
        if let edns {
            writer.record(
                Record(
                    name: DNSName(validLabels: []), type: Self.typeOPT, class: edns.udpPayloadSize,
                    ttl: UInt32(edns.extendedRCode) << 24 | UInt32(edns.version) << 16 | (edns.dnssecOK ? 0x8000 : 0),
                    data: edns.options))
        }
        return writer.bytes
    }

    private struct Writer {
        var bytes: [UInt8] = []
        /// Offsets of names already written, by their suffix (case as written).
        var written: [DNSName: Int] = [:]

        mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }

        mutating func u32(_ value: UInt32) {
            u16(UInt16(value >> 16))
            u16(UInt16(truncatingIfNeeded: value))
        }

        mutating func name(_ name: DNSName) {
            for index in name.labels.indices {
                // Against the same suffix in the same case: a name is written as it was given
                // (an alias's target keeps its case after a question in another case).
                let suffix = DNSName(validLabels: Array(name.labels[index...]))
                if let offset = written[suffix] {
                    u16(0xC000 | UInt16(offset))
                    return
                }
                if bytes.count < 0x4000 { written[suffix] = bytes.count }
                bytes.append(UInt8(name.labels[index].count))
                bytes += name.labels[index]
            }
            bytes.append(0)
        }

        mutating func record(_ record: Record) {
            name(record.name)
            u16(record.type)
            u16(record.class)
            u32(record.ttl)
            u16(UInt16(clamping: record.data.count))
            bytes += record.data.prefix(Int(UInt16.max))
        }
    }

    // MARK: answers

    /// Record types whose data names another host: CNAME and DNAME (the name the answer goes on
    /// to), SVCB and HTTPS (their target name).
    static let aliasTypes: Set<UInt16> = [5, 39]
    static let serviceTypes: Set<UInt16> = [64, 65]

    /// What a reply's answer section holds, read without building the whole message.
    public struct Answers: Hashable, Sendable {
        /// Every name an answer leads to: the owner of each answer record, and the target of each
        /// CNAME, DNAME, SVCB and HTTPS record (compression followed, as in the message). A reply
        /// shielded by any of them must not reach a shielded child: `allowed.test CNAME
        /// shielded.test` would hand it the shielded name's addresses.
        public var names: [DNSName] = []
        /// The A and AAAA records' addresses (4 or 16 bytes) with their TTLs.
        public var addresses: [AddressRecord] = []
        /// Whether an SVCB or HTTPS record carries an `ech` parameter (key 5): the keys a browser
        /// would hide the server name of its ClientHello with.
        public var offersECH = false
    }

    /// An A or AAAA record's address (4 or 16 bytes) and TTL.
    public struct AddressRecord: Hashable, Sendable {
        public var address: [UInt8]
        public var ttl: UInt32

        public init(address: [UInt8], ttl: UInt32) {
            self.address = address
            self.ttl = ttl
        }
    }

    public static let typeA: UInt16 = 1
    public static let typeAAAA: UInt16 = 28
    public static let typeHTTPS: UInt16 = 65
    /// The SvcParamKey of `ech` in SVCB and HTTPS records (RFC 9460, RFC 9848).
    static let serviceParameterECH: UInt16 = 5

    /// The names a reply's answers lead to; see `Answers.names`.
    public static func answerNames(in bytes: some Collection<UInt8>) throws(ScreenTimeCoreError) -> [DNSName] {
        try answers(in: bytes).names
    }

    public static func answers(in bytes: some Collection<UInt8>) throws(ScreenTimeCoreError) -> Answers {
        var reader = Reader(Array(bytes))
        _ = try reader.u16("the header")
        _ = try reader.u16("the header")
        let questions = try reader.u16("the header")
        let answers = try reader.u16("the header")
        _ = try reader.u32("the header")
        guard Int(questions) * 5 + Int(answers) * 11 <= reader.remaining else {
            throw ScreenTimeCoreError(.invalidDNSMessage, "the header counts more than the message holds")
        }
        for _ in 0..<questions {
            _ = try reader.name()
            _ = try reader.u32("a question")
        }
        var result = Answers()
        for _ in 0..<answers {
            result.names.append(try reader.name())
            let type = try reader.u16("a record")
            let recordClass = try reader.u16("a record")
            let ttl = try reader.u32("a record")
            let length = Int(try reader.u16("a record"))
            let start = reader.offset
            guard length <= reader.remaining else { throw reader.truncated("record data") }
            if aliasTypes.contains(type) || serviceTypes.contains(type) {
                if serviceTypes.contains(type) { _ = try reader.u16("a service priority") }
                result.names.append(try reader.name())
                guard reader.offset <= start + length else {
                    throw ScreenTimeCoreError(.invalidDNSMessage, "a name runs past its record's data")
                }
                if serviceTypes.contains(type) {
                    // SvcParams: key, length, value, to the end of the data.
                    while reader.offset + 4 <= start + length {
                        let key = try reader.u16("a service parameter")
                        let valueLength = Int(try reader.u16("a service parameter"))
                        if key == serviceParameterECH { result.offersECH = true }
                        guard reader.offset + valueLength <= start + length else {
                            throw ScreenTimeCoreError(.invalidDNSMessage, "a service parameter runs past its record")
                        }
                        reader.offset += valueLength
                    }
                }
            } else if recordClass == 1, (type == typeA && length == 4) || (type == typeAAAA && length == 16) {
                result.addresses.append(AddressRecord(address: try reader.take(length, "an address"), ttl: ttl))
            }
            reader.offset = start + length
        }
        return result
    }

    /// The empty answer (NOERROR, no records) to a query: what a child gets in place of an HTTPS
    /// record that offers ECH, so that its browser connects with the name in the clear.
    public static func noData(answering query: DNSMessage) -> DNSMessage {
        let kept = query.flags & 0x7900  // opcode and RD
        return DNSMessage(
            id: query.id, flags: 0x8000 | kept | 0x0080, questions: query.questions,
            edns: query.edns.map { EDNS(udpPayloadSize: max(512, $0.udpPayloadSize)) })
    }

    /// The NXDOMAIN answer to a query: same ID and questions, QR and RA set, RD and the opcode
    /// kept, RCODE 3, no records; EDNS echoed when the query had it.
    public static func nxdomain(answering query: DNSMessage) -> DNSMessage {
        let kept = query.flags & 0x7900  // opcode and RD
        let flags = 0x8000 | kept | 0x0080 | UInt16(rcodeNXDomain)
        return DNSMessage(
            id: query.id, flags: flags, questions: query.questions,
            edns: query.edns.map { EDNS(udpPayloadSize: max(512, $0.udpPayloadSize)) })
    }
}
