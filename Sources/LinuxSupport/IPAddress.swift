import Glibc

/// IP address literals, as `inet_pton` reads them.
public enum IPAddress {
    /// Whether the text is an IPv4 (dotted quad) or IPv6 address literal.
    public static func isLiteral(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }
}
