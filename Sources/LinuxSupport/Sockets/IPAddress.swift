import Glibc

/// IP address literals, as `inet_pton` reads them.
public enum IPAddress {
    /// Whether the text is an IPv4 (dotted quad) or IPv6 address literal.
    public static func isLiteral(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }
}

extension IPAddress {
    /// The bytes of an address literal: 4 for IPv4, 16 for IPv6 (a `%scope` suffix is ignored);
    /// nil for anything else.
    public static func bytes(_ text: some StringProtocol) -> [UInt8]? {
        let literal = String(text.prefix { $0 != "%" })
        var buffer = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET, literal, &buffer) == 1 { return Array(buffer.prefix(4)) }
        if inet_pton(AF_INET6, literal, &buffer) == 1 { return buffer }
        return nil
    }
}
