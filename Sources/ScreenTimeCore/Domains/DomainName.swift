import FoundationEssentials

/// A DNS domain name in canonical form: lower-case ASCII, Unicode labels in IDNA (`xn--`) form, no
/// trailing dot.
///
/// A guardian may type a name the way it appears in a browser: `Bücher.de`, `www.YouTube.com.`,
/// `https://www.youtube.com/watch?v=…` or `*.example.com` all give a name (the host, without the
/// wildcard). What is not a host name — an IP address, an empty label, a label over 63 bytes, a name
/// over 253 — is refused with the reason.
public struct DomainName: ValidatedString {
    /// The canonical ASCII form (`xn--bcher-kva.de`).
    public let ascii: String

    public var rawValue: String { ascii }

    public init(_ text: String) throws(ScreenTimeCoreError) {
        let host = Self.host(in: text)
        guard !host.isEmpty else {
            throw ScreenTimeCoreError(.invalidDomain, "'\(text.prefix(80))' holds no domain name")
        }
        let isASCII = host.utf8.allSatisfy { $0 < 0x80 }
        let folded = isASCII ? host.lowercased() : String(decoding: host._nfcCodeUnits, as: UTF8.self).lowercased()
        var labels: [String] = []
        for label in folded.split(separator: ".", omittingEmptySubsequences: false) {
            labels.append(try Self.asciiLabel(label, in: text))
        }
        let ascii = labels.joined(separator: ".")
        guard ascii.utf8.count <= 253 else {
            throw ScreenTimeCoreError(.invalidDomain, "'\(text.prefix(80))…' is longer than a domain name can be (253)")
        }
        if let last = labels.last, last.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw ScreenTimeCoreError(.invalidDomain, "'\(text.prefix(80))' is an address, not a domain name")
        }
        self.ascii = ascii
    }

    private init(validASCII: String) { ascii = validASCII }

    /// The labels, from the host's own to the top-level domain.
    public var labels: [Substring] { ascii.split(separator: ".") }

    /// The name for display: `xn--` labels shown in Unicode again.
    public var unicode: String {
        labels.map { label in
            label.hasPrefix("xn--") ? (Punycode.decode(label.dropFirst(4)) ?? String(label)) : String(label)
        }.joined(separator: ".")
    }

    /// The name one label up (`example.com` for `www.example.com`), nil for a top-level domain.
    public var parent: DomainName? {
        guard let dot = ascii.firstIndex(of: ".") else { return nil }
        return DomainName(validASCII: String(ascii[ascii.index(after: dot)...]))
    }

    /// This name and each name above it, the top-level domain last.
    public var selfAndAncestors: [DomainName] {
        var names = [self]
        while let parent = names[names.count - 1].parent { names.append(parent) }
        return names
    }

    /// The name made of the last `count` labels; nil if there are fewer.
    public func suffix(labelCount count: Int) -> DomainName? {
        guard count > 0 else { return nil }
        let labels = self.labels
        guard count <= labels.count else { return nil }
        return DomainName(validASCII: labels.suffix(count).joined(separator: "."))
    }

    /// Whether this name is `other` or lies under it (`a.b.example.com` is within `example.com`).
    public func isWithin(_ other: DomainName) -> Bool {
        ascii == other.ascii || ascii.hasSuffix("." + other.ascii)
    }

    /// The host part of what a person typed: URL scheme, user, port, path and a leading `*.` are
    /// dropped; the ideographic full stops IDNA treats as dots become dots; one trailing dot goes.
    private static func host(in text: String) -> String {
        var rest = Substring(text.trimmingWhitespace())
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if let colon = rest.lastIndex(of: ":"), rest[rest.index(after: colon)...].allSatisfy(\.isASCIIDigit) {
            rest = rest[..<colon]
        }
        if rest.hasPrefix("*.") { rest = rest.dropFirst(2) }
        var host = String(rest)
        if !host.utf8.allSatisfy({ $0 < 0x80 }) {
            var scalars = String.UnicodeScalarView()
            for scalar in host.unicodeScalars {
                let isFullStop = scalar == "\u{3002}" || scalar == "\u{FF0E}" || scalar == "\u{FF61}"
                scalars.append(isFullStop ? "." : scalar)
            }
            host = String(scalars)
        }
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    private static func asciiLabel(_ label: Substring, in text: String) throws(ScreenTimeCoreError) -> String {
        let ascii: String
        if label.unicodeScalars.allSatisfy(\.isASCII) {
            ascii = String(label)
            if ascii.hasPrefix("xn--"), Punycode.decode(ascii.dropFirst(4)) == nil {
                throw ScreenTimeCoreError(.invalidDomain, "'\(ascii)' in '\(text.prefix(80))' is not valid IDNA")
            }
        } else {
            guard let encoded = Punycode.encode(label.unicodeScalars) else {
                throw ScreenTimeCoreError(
                    .invalidDomain, "'\(label)' in '\(text.prefix(80))' cannot be put in IDNA form")
            }
            ascii = "xn--" + encoded
        }
        guard !ascii.isEmpty else {
            throw ScreenTimeCoreError(.invalidDomain, "'\(text.prefix(80))' has an empty label (two dots in a row?)")
        }
        guard ascii.utf8.count <= 63 else {
            throw ScreenTimeCoreError(.invalidDomain, "a label of '\(text.prefix(80))…' is longer than 63 bytes")
        }
        let characters = ascii.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F
        }
        guard characters, !ascii.hasPrefix("-"), !ascii.hasSuffix("-") else {
            throw ScreenTimeCoreError(
                .invalidDomain,
                "'\(label)' in '\(text.prefix(80))' is not a host label (letters, digits, - and _, not starting or ending with -)"
            )
        }
        return ascii
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
