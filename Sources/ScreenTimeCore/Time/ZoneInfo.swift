import FoundationEssentials
import Glibc

/// A time zone read from the system's own zone files (TZif, RFC 8536: `/usr/share/zoneinfo`,
/// `/etc/localtime`), with no ICU: FoundationEssentials knows only fixed offsets from GMT
/// (`TimeZone(identifier: "Europe/Paris")` is nil there), and Foundation's ICU is most of what the
/// programs ship. The offset from UTC at any instant: the file's transitions, then its footer's
/// POSIX TZ rule for the years after the last one (as glibc reads the same file).
public struct ZoneInfo: Sendable, Equatable {
    /// The zone's name (`Europe/Paris`), or the path it was read from when it has none.
    public let identifier: String
    /// Seconds since 1970 at which the offset changes, ascending.
    let transitions: [Int64]
    /// For each transition, the index in `types` of what holds from it on.
    let transitionTypes: [Int]
    let types: [LocalTimeType]
    /// What holds after the last transition, when the file says (its footer).
    let rule: PosixTimeZone?

    struct LocalTimeType: Sendable, Equatable {
        let offset: Int32
        let isDaylightSaving: Bool
        let abbreviation: String
    }

    /// Where the system's zones are.
    public static let directory = "/usr/share/zoneinfo"

    /// A named zone of `directory`. The name is a path below it: letters, digits and `/ _ - +`,
    /// with no `..`.
    public init(identifier: String, directory: String = ZoneInfo.directory) throws {
        guard Self.isValidIdentifier(identifier) else {
            throw ZoneInfoError("not a time zone name: \(identifier.debugDescription)")
        }
        try self.init(path: directory + "/" + identifier, identifier: identifier)
    }

    /// A named zone of `directory`, or UTC by one of its names where the directory has no file
    /// for it (a system without tzdata); nil for any other name it has no file for.
    public static func named(_ identifier: String, directory: String = ZoneInfo.directory) -> ZoneInfo? {
        if let zone = try? ZoneInfo(identifier: identifier, directory: directory) { return zone }
        return ["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Zulu", "Etc/Zulu"].contains(identifier) ? .utc : nil
    }

    /// The zone of a TZif file at `path`.
    public init(path: String, identifier: String? = nil) throws {
        let bytes = try Self.readFile(path)
        do {
            try self.init(tzif: bytes, identifier: identifier ?? path)
        } catch let error as ZoneInfoError {
            throw ZoneInfoError("\(path): \(error.description)")
        }
    }

    /// The zone of TZif bytes.
    public init(tzif bytes: [UInt8], identifier: String) throws {
        var reader = TZifReader(bytes: bytes)
        let first = try reader.header()
        guard first.version >= 2 else {
            // Version 1: 32-bit times, no footer.
            let block = try reader.block(first, timeSize: 4)
            self.init(identifier: identifier, block: block, rule: nil)
            return
        }
        _ = try reader.block(first, timeSize: 4)  // the 32-bit data, for old readers
        let second = try reader.header()
        let block = try reader.block(second, timeSize: 8)
        let footer = try reader.footer()
        let rule = try footer.isEmpty ? nil : PosixTimeZone(parsing: footer)
        self.init(identifier: identifier, block: block, rule: rule)
    }

    private init(identifier: String, block: TZifReader.Block, rule: PosixTimeZone?) {
        self.identifier = identifier
        transitions = block.transitions
        transitionTypes = block.transitionTypes
        types = block.types
        self.rule = rule
    }

    /// The zone the machine's clock shows: `TZ` (a name, `:name`, or a path) if `environment`
    /// sets it to a zone file, else `/etc/localtime`; UTC where neither can be read.
    public static func current(
        environment: [String: String]? = nil, localtime: String = "/etc/localtime",
        directory: String = ZoneInfo.directory
    ) -> ZoneInfo {
        let environment = environment ?? ProcessInfo.processInfo.environment
        if var name = environment["TZ"], !name.isEmpty {
            if name.hasPrefix(":") { name.removeFirst() }
            if name.hasPrefix("/"),
                let zone = try? ZoneInfo(path: name, identifier: Self.name(ofPath: name, in: directory))
            {
                return zone
            }
            if let zone = try? ZoneInfo(identifier: name, directory: directory) { return zone }
            if let zone = try? ZoneInfo(rule: name) { return zone }
        }
        // Its name where the link points, else as /etc/timezone says (a copy, not a link).
        var name = Self.name(ofLink: localtime, in: directory)
        if !isValidIdentifier(name), let file = try? readFile("/etc/timezone"),
            let line = String(decoding: file, as: UTF8.self).split(whereSeparator: \.isWhitespace).first,
            isValidIdentifier(String(line))
        {
            name = String(line)
        }
        if let zone = try? ZoneInfo(path: localtime, identifier: name) { return zone }
        return .utc
    }

    /// Whether the identifier is a zone's name (`Europe/Paris`), which another program can find in
    /// its own zone database, not a path or a TZ rule.
    public var isNamed: Bool { Self.isValidIdentifier(identifier) }

    /// UTC, with no file.
    public static let utc = ZoneInfo(
        identifier: "UTC", rule: PosixTimeZone(standard: .init(offset: 0, isDaylightSaving: false, abbreviation: "UTC"))
    )

    /// The zone of a POSIX TZ rule alone (`CET-1CEST,M3.5.0,M10.5.0/3`, `<+0530>-5:30`), as `TZ`
    /// may give one.
    public init(rule text: String) throws {
        self.init(identifier: text, rule: try PosixTimeZone(parsing: text))
    }

    private init(identifier: String, rule: PosixTimeZone) {
        self.identifier = identifier
        transitions = []
        transitionTypes = []
        types = [rule.standard]
        self.rule = rule
    }

    /// The zone's name from where a link such as /etc/localtime points (`../usr/share/zoneinfo/
    /// Europe/Paris` gives `Europe/Paris`); the link's own path when it is none.
    static func name(ofLink path: String, in directory: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return path }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name(ofPath: target, in: directory) ?? path
    }

    /// `Europe/Paris` from a path into the zone directory (`/usr/share/zoneinfo/Europe/Paris`,
    /// `../usr/share/zoneinfo/Europe/Paris`); nil for any other.
    static func name(ofPath target: String, in directory: String) -> String? {
        for marker in [directory + "/", "zoneinfo/"] {
            let target = Array(target.utf8)
            let marker = Array(marker.utf8)
            guard target.count > marker.count else { continue }
            for start in stride(from: target.count - marker.count, through: 0, by: -1)
            where target[start..<start + marker.count].elementsEqual(marker) {
                let name = String(decoding: target[(start + marker.count)...], as: UTF8.self)
                if isValidIdentifier(name) { return name }
                break
            }
        }
        return nil
    }

    static func isValidIdentifier(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.hasPrefix("/")
            && name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { part in
                !part.isEmpty && part != "." && part != ".."
            }
            && name.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                        || "/_-+".unicodeScalars.contains(scalar))
            }
    }

    /// A zone file is small (the largest in tzdata is under 4 KB); more than this is not one.
    static let largestFile = 1 << 20

    static func readFile(_ path: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw ZoneInfoError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ZoneInfoError("\(path) is not a regular file")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while bytes.count <= largestFile {
            let got = read(descriptor, &chunk, chunk.count)
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw ZoneInfoError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if got == 0 { return bytes }
            bytes += chunk[..<got]
        }
        throw ZoneInfoError("\(path) is larger than a zone file")
    }

    /// The offset from UTC, in seconds (east positive), at `instant` (seconds since 1970).
    public func offset(at instant: Int64) -> Int32 { localTimeType(at: instant).offset }

    /// Whether daylight-saving time holds at `instant`.
    public func isDaylightSavingTime(at instant: Int64) -> Bool { localTimeType(at: instant).isDaylightSaving }

    /// The abbreviation shown at `instant` (`CET`, `CEST`, `+03`).
    public func abbreviation(at instant: Int64) -> String { localTimeType(at: instant).abbreviation }

    func localTimeType(at instant: Int64) -> LocalTimeType {
        guard let last = transitions.last else { return rule.map { $0.localTimeType(at: instant) } ?? types[0] }
        if instant >= last, let rule { return rule.localTimeType(at: instant) }
        // Before the first transition: the first type (RFC 8536, 3.2).
        guard instant >= transitions[0] else { return types[0] }
        var low = 0
        var high = transitions.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if transitions[middle] <= instant { low = middle } else { high = middle - 1 }
        }
        return types[transitionTypes[low]]
    }

    /// The instants (seconds since 1970) whose wall clock here reads `wall` (seconds since 1970
    /// as if the wall clock were UTC), earliest first: one, none in a gap the clock skips (spring
    /// forward), two in the hour it shows twice (fall back).
    public func instants(atWallClock wall: Int64) -> [Int64] {
        let around = Set([offset(at: wall - 86_400), offset(at: wall + 86_400), offset(at: wall)])
        return around.map { wall - Int64($0) }.filter { Int64(offset(at: $0)) == wall - $0 }.sorted()
    }

    /// The wall clock (seconds since 1970 read as UTC) at `instant`.
    public func wallClock(at instant: Int64) -> Int64 { instant + Int64(offset(at: instant)) }
}

public struct ZoneInfoError: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Bounds-checked reads of a TZif file.
struct TZifReader {
    let bytes: [UInt8]
    var position = 0

    struct Header {
        let version: Int
        let isUTCCount, isStandardCount, leapCount, timeCount, typeCount, characterCount: Int
    }

    struct Block {
        var transitions: [Int64] = []
        var transitionTypes: [Int] = []
        var types: [ZoneInfo.LocalTimeType] = []
    }

    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - position else {
            throw ZoneInfoError("cut short at byte \(position) (\(count) more expected)")
        }
        defer { position += count }
        return bytes[position..<position + count]
    }

    mutating func integer(_ size: Int) throws -> Int64 {
        let field = try take(size)
        var value: UInt64 = 0
        for byte in field { value = value << 8 | UInt64(byte) }
        // Sign-extended from its size.
        let shift = UInt64(64 - 8 * size)
        return Int64(bitPattern: value << shift) >> Int64(shift)
    }

    mutating func header() throws -> Header {
        guard Array(try take(4)) == Array("TZif".utf8) else { throw ZoneInfoError("not a TZif file (no TZif magic)") }
        let versionByte = try take(1).first!
        let version: Int
        switch versionByte {
        case 0: version = 1
        case UInt8(ascii: "2")...UInt8(ascii: "9"): version = Int(versionByte - UInt8(ascii: "0"))
        default: throw ZoneInfoError("unknown TZif version byte \(versionByte)")
        }
        _ = try take(15)
        var counts: [Int] = []
        for _ in 0..<6 {
            let count = try integer(4)
            guard count >= 0, count < 1 << 20 else { throw ZoneInfoError("a count of \(count) in the header") }
            counts.append(Int(count))
        }
        guard counts[4] >= 1 else { throw ZoneInfoError("no local time type") }
        guard counts[1] == 0 || counts[1] == counts[4], counts[0] == 0 || counts[0] == counts[4]
        else { throw ZoneInfoError("indicator counts that do not match the types") }
        return Header(
            version: version, isUTCCount: counts[0], isStandardCount: counts[1], leapCount: counts[2],
            timeCount: counts[3], typeCount: counts[4], characterCount: counts[5])
    }

    mutating func block(_ header: Header, timeSize: Int) throws -> Block {
        var block = Block()
        block.transitions.reserveCapacity(header.timeCount)
        for _ in 0..<header.timeCount {
            let time = try integer(timeSize)
            if let previous = block.transitions.last, time <= previous {
                throw ZoneInfoError("transition times out of order")
            }
            block.transitions.append(time)
        }
        for _ in 0..<header.timeCount {
            let index = Int(try take(1).first!)
            guard index < header.typeCount else {
                throw ZoneInfoError("a transition to type \(index) of \(header.typeCount)")
            }
            block.transitionTypes.append(index)
        }
        var raw: [(offset: Int64, isDaylightSaving: Bool, index: Int)] = []
        for _ in 0..<header.typeCount {
            let offset = try integer(4)
            let isDaylightSaving = try take(1).first!
            let index = Int(try take(1).first!)
            // RFC 8536: -2^31 is not allowed; real zones are within a day.
            guard (-89_999...93_599).contains(offset), isDaylightSaving <= 1, index < max(header.characterCount, 1)
            else { throw ZoneInfoError("a local time type out of range (offset \(offset))") }
            raw.append((offset, isDaylightSaving == 1, index))
        }
        let characters = Array(try take(header.characterCount))
        block.types = raw.map { type in
            let rest = characters[min(type.index, characters.count)...]
            let name = rest.prefix { $0 != 0 }
            return ZoneInfo.LocalTimeType(
                offset: Int32(type.offset), isDaylightSaving: type.isDaylightSaving,
                abbreviation: String(decoding: name, as: UTF8.self))
        }
        _ = try take(header.leapCount * (timeSize + 4) + header.isStandardCount + header.isUTCCount)
        return block
    }

    /// The footer: a POSIX TZ string between two newlines (empty when none holds).
    mutating func footer() throws -> String {
        guard try take(1).first == 10 else { throw ZoneInfoError("no newline before the footer") }
        let rest = bytes[position...]
        guard let end = rest.firstIndex(of: 10), end - position <= 255 else {
            throw ZoneInfoError("the footer does not end in a newline")
        }
        position = end + 1
        return String(decoding: rest[..<end], as: UTF8.self)
    }
}
