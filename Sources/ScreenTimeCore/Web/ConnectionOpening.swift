/// What the first bytes a client sends on a TCP connection say about where it goes: the names a
/// TLS ClientHello or an HTTP request head carries, that it carries none (SSH, a game, a mail
/// client waiting for its server), or that it looks like TLS or HTTP and cannot be read.
///
/// The connection judge refuses a name its filter shields, passes a connection that names
/// nothing, and refuses the unreadable: the child never gains by sending what the agent cannot
/// parse.
public enum ConnectionOpening: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable { case tls, http }

    /// More bytes are needed; the segment may pass meanwhile.
    case incomplete
    /// The names the opening carries (for TLS the outer SNI; for HTTP every `Host`, the target's
    /// host and a CONNECT authority). Empty: TLS without SNI, HTTP/1.0 without `Host`.
    case names([DNSName], Kind)
    /// Neither TLS nor HTTP: nothing to judge by name.
    case unnamed
    /// TLS or HTTP that cannot be read, or a TLS stream whose hello was never seen.
    case unreadable(Kind, String)

    /// The most bytes waited for before an opening that is still incomplete counts as unreadable.
    public static let maximumLength = 16_384

    /// Reads the bytes a client sent from the start of a connection.
    public static func read(_ bytes: ArraySlice<UInt8>) -> ConnectionOpening {
        guard let first = bytes.first else { return .incomplete }
        // A TLS record that is not a handshake at the start of a stream: data, an alert or a
        // change of cipher spec on a connection whose hello the agent never saw (one open
        // before the child was shielded, or whose state was lost). Refused: the client opens a
        // new connection, whose hello is read.
        if (0x14...0x18).contains(first), first != 0x16, bytes.count < 2 || bytes[bytes.startIndex + 1] == 0x03 {
            return bytes.count < 3 ? .incomplete : .unreadable(.tls, "a TLS record of type \(first) before any hello")
        }
        return judged(TLSClientHello.read(bytes).map(\.serverNames), .tls, "ClientHello", length: bytes.count)
            ?? judged(HTTPRequestHead.read(bytes).map(\.hosts), .http, "request head", length: bytes.count)
            ?? .unnamed
    }

    /// One reader's outcome as an opening; nil when the bytes are not its protocol.
    private static func judged(
        _ reading: OpeningReading<[[UInt8]]>, _ kind: Kind, _ what: String, length: Int
    ) -> ConnectionOpening? {
        switch reading {
        case .other: nil
        case .read(let raw): names(raw, kind)
        case .invalid(let reason): .unreadable(kind, reason)
        case .incomplete:
            length >= maximumLength ? .unreadable(kind, "no whole \(what) in \(length) bytes") : .incomplete
        }
    }

    /// Host names as DNS names; a name that is not one (an empty label, a label over 63 bytes) is
    /// unreadable. An IP literal is no name: the address it connects to is judged instead.
    private static func names(_ raw: [[UInt8]], _ kind: Kind) -> ConnectionOpening {
        var names: [DNSName] = []
        for bytes in raw {
            var trimmed = bytes[...]
            while trimmed.last == 0x2E { trimmed = trimmed.dropLast() }
            if isAddressLiteral(trimmed) { continue }
            let labels = trimmed.split(separator: 0x2E, omittingEmptySubsequences: false).map(Array.init)
            guard let name = try? DNSName(labels: labels) else {
                return .unreadable(kind, "a server name that is not a DNS name")
            }
            names.append(name)
        }
        return .names(names, kind)
    }

    /// Dotted IPv4 or an IPv6 literal (HTTP hosts lose their brackets).
    private static func isAddressLiteral(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard !bytes.isEmpty else { return false }
        if bytes.contains(0x3A) { return bytes.allSatisfy { $0 == 0x3A || $0 == 0x2E || isHexDigit($0) } }
        let parts = bytes.split(separator: 0x2E, omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
    }
}
