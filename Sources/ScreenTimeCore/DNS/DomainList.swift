/// A web-category list: domains, each covering everything under it, answering "is this name or
/// one of its parents listed?" for names straight off the wire.
///
/// Built for a million entries: each domain is kept as a 64-bit hash of its labels taken from the
/// top-level domain down, in one hash set of integers (about 16 bytes a domain, no per-entry
/// allocation). A lookup hashes the query's suffixes incrementally — `com`, `example.com`,
/// `www.example.com` — with one set lookup each. Two different names share a hash with odds of about n/2⁶⁴ (about 1 in
/// 18 trillion for a million domains); a false match shields one name, it never lifts a shield.
/// The value is immutable: the agent swaps in a reloaded list without stopping lookups.
public struct DomainList: Sendable {
    private let hashes: Set<UInt64>

    /// Domains read, and lines skipped because they were not domains.
    public let count: Int
    public let skippedLines: [Int]

    /// Parses one domain per line; `#` starts a comment; blank lines are skipped; a line that is
    /// not a domain is skipped and its number reported (a list is data, and one bad line must not
    /// disable a category). Hosts-file lines (`0.0.0.0 example.com`) are read too.
    public init(parsing text: String) {
        var hashes: [UInt64] = []
        var skipped: [Int] = []
        let bytes = Array(text.utf8)
        var lineNumber = 0
        var lineStart = 0
        while lineStart <= bytes.count {
            lineNumber += 1
            var lineEnd = lineStart
            while lineEnd < bytes.count && bytes[lineEnd] != 0x0A { lineEnd += 1 }
            // The last word before any comment: a domain, or a hosts-file line's name.
            var contentEnd = lineStart
            while contentEnd < lineEnd && bytes[contentEnd] != 0x23 { contentEnd += 1 }
            var wordEnd = contentEnd
            while wordEnd > lineStart && Self.isSpace(bytes[wordEnd - 1]) { wordEnd -= 1 }
            var wordStart = wordEnd
            while wordStart > lineStart && !Self.isSpace(bytes[wordStart - 1]) { wordStart -= 1 }
            if wordStart < wordEnd {
                if let hash = Self.hash(ofASCII: bytes[wordStart..<wordEnd]) {
                    hashes.append(hash)
                } else if bytes[wordStart..<wordEnd].contains(where: { $0 >= 0x80 }),
                    let domain = try? DomainName(String(decoding: bytes[wordStart..<wordEnd], as: UTF8.self))
                {
                    hashes.append(Self.hash(of: DNSName(domain).labels.map { $0[...] }))
                } else {
                    skipped.append(lineNumber)
                }
            }
            lineStart = lineEnd + 1
        }
        let unique = Set(hashes)
        self.hashes = unique
        self.count = unique.count
        self.skippedLines = skipped
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }

    /// The hash of an ASCII host name checked as `DomainName` checks it (labels of letters,
    /// digits, - and _, 1 to 63 bytes, not starting or ending with -, 253 bytes in all, a
    /// top-level label that is not all digits, one trailing dot allowed); nil if it is not one.
    private static func hash(ofASCII word: ArraySlice<UInt8>) -> UInt64? {
        var end = word.endIndex
        if end > word.startIndex && word[end - 1] == 0x2E { end -= 1 }
        guard end > word.startIndex, end - word.startIndex <= 253 else { return nil }
        var labels: [ArraySlice<UInt8>] = []
        var labelStart = word.startIndex
        for index in word.startIndex...end {
            guard index == end || word[index] == 0x2E else {
                let byte = word[index]
                let valid =
                    (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == 0x2D || byte == 0x5F
                if !valid { return nil }
                continue
            }
            let label = word[labelStart..<index]
            guard (1...63).contains(label.count), label.first != 0x2D, label.last != 0x2D else { return nil }
            labels.append(label)
            labelStart = index + 1
        }
        guard let top = labels.last, !top.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        // IDNA labels are checked by DomainName, which decodes them.
        if labels.contains(where: {
            $0.count >= 4 && ($0[$0.startIndex] | 0x20) == 0x78 && ($0[$0.startIndex + 1] | 0x20) == 0x6E
                && $0[$0.startIndex + 2] == 0x2D && $0[$0.startIndex + 3] == 0x2D
        }) {
            guard let domain = try? DomainName(String(decoding: word, as: UTF8.self)) else { return nil }
            return hash(of: DNSName(domain).labels.map { $0[...] })
        }
        return hash(of: labels)
    }

    /// Whether the name, or any name above it, is on the list (case-insensitive).
    public func contains(_ name: DNSName) -> Bool {
        var state = Self.offsetBasis
        for label in name.labels.reversed() {
            state = Self.mix(state, label: label[...])
            if hashes.contains(state) { return true }
        }
        return false
    }

    /// Whether a canonical domain, or any domain above it, is on the list.
    public func contains(_ domain: DomainName) -> Bool { contains(DNSName(domain)) }

    /// Whether any of a name's suffix hashes (`suffixHashes(of:)`) is on the list.
    func contains(suffixHashes: [UInt64]) -> Bool { suffixHashes.contains(where: hashes.contains) }

    /// The hashes of a name's suffixes, the top-level domain's first and the whole name's last:
    /// what one lookup in several lists computes once.
    static func suffixHashes(of name: DNSName) -> [UInt64] {
        var result: [UInt64] = []
        result.reserveCapacity(name.labels.count)
        var state = offsetBasis
        for label in name.labels.reversed() {
            state = mix(state, label: label[...])
            result.append(state)
        }
        return result
    }

    /// The hash a domain has on a list.
    static func hash(of domain: DomainName) -> UInt64 { hash(of: DNSName(domain).labels.map { $0[...] }) }

    /// A list of the given domains.
    public init(_ domains: some Sequence<DomainName>) {
        let unique = Set(domains.map(Self.hash(of:)))
        hashes = unique
        count = unique.count
        skippedLines = []
    }

    /// The memory the hashes take, in bytes (the set's buckets; a bitmap adds 1/64).
    public var byteCount: Int { hashes.capacity * MemoryLayout<UInt64>.stride * 65 / 64 }

    private static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01B3

    /// FNV-1a over the labels from the top down, each preceded by its length, ASCII case folded;
    /// the state after each label is that suffix's hash.
    private static func mix(_ state: UInt64, label: ArraySlice<UInt8>) -> UInt64 {
        var state = (state ^ UInt64(label.count)) &* prime
        for byte in label {
            let folded = (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
            state = (state ^ UInt64(folded)) &* prime
        }
        // A final avalanche, so that near names do not give near hashes.
        state ^= state >> 33
        state = state &* 0xFF51_AFD7_ED55_8CCD
        state ^= state >> 33
        return state
    }

    private static func hash(of labels: [ArraySlice<UInt8>]) -> UInt64 {
        labels.reversed().reduce(offsetBasis) { mix($0, label: $1) }
    }
}
