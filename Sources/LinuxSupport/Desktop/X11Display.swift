import CLinuxShim
import CXCB
import FoundationEssentials
import Glibc
import Synchronization

/// Reading an Xauthority file's bytes (the child's file: read as `UntrustedFile`, parsed here
/// with every length checked).
public enum XAuthority {
    /// Every MIT-MAGIC-COOKIE-1 that may be display `number`'s, in the order to try them: the
    /// entries for that number (whatever host they name: a decoy for another host placed first
    /// only costs a refused try), then those for any display.
    public static func cookies(in bytes: [UInt8], display number: Int) -> [[UInt8]] {
        var offset = 0
        func field() -> ArraySlice<UInt8>? {
            guard offset + 2 <= bytes.count else { return nil }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard offset + 2 + length <= bytes.count else { return nil }
            defer { offset += 2 + length }
            return bytes[(offset + 2)..<(offset + 2 + length)]
        }
        let wanted = Array(String(number).utf8)
        var exact: [[UInt8]] = []
        var any: [[UInt8]] = []
        while offset + 2 <= bytes.count, exact.count + any.count < 16 {
            offset += 2  // the address family
            guard field() != nil, let display = field(), let name = field(), let data = field() else { break }
            guard Array(name) == Array("MIT-MAGIC-COOKIE-1".utf8), data.count == 16 else { continue }
            let cookie = Array(data)
            if Array(display) == wanted, !exact.contains(cookie) { exact.append(cookie) }
            if display.isEmpty, !any.contains(cookie) { any.append(cookie) }
        }
        return exact + any.filter { !exact.contains($0) }
    }

}

/// A local X11 display as `DISPLAY` names it (`:0`, `:1.0`, `unix:2`); a display over TCP
/// (`host:0`) is not one the agent reads.
public struct X11Display: Hashable, Sendable, CustomStringConvertible {
    public let number: Int
    public let screen: Int
    /// Reached over TCP on loopback (`localhost:N`, `127.0.0.1:N`, this machine's name): port
    /// 6000 + N, where a server started with `-listen tcp` answers, whatever answers at its
    /// Unix socket (another server may).
    public let overTCP: Bool

    public init(number: Int, screen: Int, overTCP: Bool = false) {
        self.number = number
        self.screen = screen
        self.overTCP = overTCP
    }

    public init?(_ value: String) {
        var text = Substring(value)
        if text.hasPrefix("unix:") { text = text.dropFirst(4) }
        var overTCP = false
        // `HOST:N`: a display over TCP, read when the host is this machine (any other is not
        // the child's screen here).
        if text.first != ":", let colon = text.lastIndex(of: ":") {
            guard Self.isThisMachine(text[..<colon]) else { return nil }
            text = text[colon...]
            overTCP = true
        }
        guard text.first == ":" else { return nil }
        let parts = text.dropFirst().split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, (1...6).contains(first.count), first.allSatisfy(\.isASCII),
            let number = Int(first), number >= 0
        else { return nil }
        var screen = 0
        if parts.count == 2 {
            guard (1...3).contains(parts[1].count), let value = Int(parts[1]), value >= 0 else { return nil }
            screen = value
        }
        self.number = number
        self.screen = screen
        self.overTCP = overTCP
    }

    /// A host name that is this machine: loopback's names and addresses, and its own name.
    static func isThisMachine(_ host: Substring) -> Bool {
        let name = host.lowercased()
        if ["localhost", "localhost.localdomain", "ip6-localhost", "::1", "[::1]"].contains(name) { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts.first == "127", parts.allSatisfy({ UInt8($0) != nil }) { return true }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return false }
        let own = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return !own.isEmpty && name == own.lowercased()
    }

    /// The server's socket.
    public var socketPath: String { "/tmp/.X11-unix/X\(number)" }

    /// The Unix addresses its server's connections are accepted at (path and abstract name);
    /// none over TCP.
    public var unixAddresses: Set<String> { overTCP ? [] : [socketPath, "@" + socketPath] }

    /// Where its server is reached, as said in messages.
    public var address: String { overTCP ? "localhost port \(6000 + number)" : socketPath }

    /// The same display, another screen.
    public func screen(_ other: Int) -> X11Display { X11Display(number: number, screen: other, overTCP: overTCP) }

    public var description: String {
        (overTCP ? "localhost" : "") + (screen == 0 ? ":\(number)" : ":\(number).\(screen)")
    }
}
