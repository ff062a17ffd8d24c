/// A domain name as DNS carries it: labels of raw bytes (any byte may appear in a label on the
/// wire), at most 63 bytes each and 255 bytes in all.
///
/// Matching is by ASCII case-insensitive comparison, so `lowercased` folds A–Z only and leaves
/// other bytes as they are. A name with bytes that are not host-name characters still has a
/// parent chain, so a shield on `example.com` covers `\000weird.example.com` too.
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    public static let maximumLength = 255
    public static let maximumLabelLength = 63

    /// The labels, the top-level domain last; the root name has none.
    public let labels: [[UInt8]]

    public init(labels: [[UInt8]]) throws(ScreenTimeCoreError) {
        guard labels.allSatisfy({ !$0.isEmpty && $0.count <= Self.maximumLabelLength }) else {
            throw ScreenTimeCoreError(.invalidDNSMessage, "a DNS label is 1 to 63 bytes")
        }
        guard labels.reduce(1, { $0 + $1.count + 1 }) <= Self.maximumLength else {
            throw ScreenTimeCoreError(.invalidDNSMessage, "a DNS name is at most 255 bytes")
        }
        self.labels = labels
    }

    /// The name of a canonical domain.
    public init(_ domain: DomainName) {
        labels = domain.labels.map { Array($0.utf8) }
    }

    /// The length on the wire, uncompressed.
    public var wireLength: Int { labels.reduce(1) { $0 + $1.count + 1 } }

    /// The labels with A–Z folded to a–z.
    public var lowercased: DNSName {
        DNSName(validLabels: labels.map { $0.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 } })
    }

    /// The canonical domain this name is, if it is a valid host name (case folded).
    public var domainName: DomainName? {
        guard !labels.isEmpty, labels.allSatisfy({ $0.allSatisfy { $0 >= 0x21 && $0 < 0x7F && $0 != 0x2E } }) else {
            return nil
        }
        return try? DomainName(String(decoding: Array(labels.joined(separator: [0x2E])), as: UTF8.self))
    }

    /// Presentation form: `www.example.com.`, other bytes as `\DDD`.
    public var description: String {
        guard !labels.isEmpty else { return "." }
        var text = ""
        for label in labels {
            for byte in label {
                switch byte {
                case 0x2E, 0x5C: text += "\\" + String(UnicodeScalar(byte))
                case 0x21...0x7E: text.unicodeScalars.append(UnicodeScalar(byte))
                default: text += "\\" + String(format3: byte)
                }
            }
            text += "."
        }
        return text
    }

    init(validLabels: [[UInt8]]) { labels = validLabels }
}

extension String {
    fileprivate init(format3 byte: UInt8) {
        let digits = String(byte)
        self = String(repeating: "0", count: 3 - digits.count) + digits
    }
}
