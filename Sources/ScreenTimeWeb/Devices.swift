import FoundationEssentials
public import NIOCore
import Synchronization

/// Which device a connection comes from, as sessions are bound to it and limits count it.
///
/// From the network, a device is its address. From this PC itself (a browser at the PC, or any
/// program of anyone's on it) the address says nothing: every account's programs share loopback
/// and the PC's own addresses, and a browser sends the dashboard's cookie to any port of the host,
/// so a server of the child's on another port would get the guardian's cookie and could replay it
/// from the same address. So a connection from this PC is known by the account whose program
/// opened it (the kernel's socket table says, `/proc/net/tcp`): the guardian's browser and the
/// child's programs are different devices, whatever address they use.
public enum Devices {
    /// The device of a connection, computed at its start and kept until its end (a request's
    /// context reads it from here), by both ends of the connection: its remote end alone is not
    /// one connection when the dashboard listens on more than one address (a child's connection
    /// from `[::1]:P` to `[fd00::2]:8443` and the guardian's from `[::1]:P` to `[::1]:8443` both
    /// exist at once, and the child can make that happen on purpose).
    private static let known = Mutex<[String: String]>([:])

    /// The key of a connection: both its ends, as TCP tells connections apart.
    static func key(remote: SocketAddress?, local: SocketAddress?) -> String? {
        guard let remoteAddress = remote?.ipAddress, let remotePort = remote?.port,
            let localAddress = local?.ipAddress, let localPort = local?.port
        else { return nil }
        return "\(remoteAddress)|\(remotePort)|\(localAddress)|\(localPort)"
    }

    /// The device of the connection from `remote` to `local`.
    public static func device(remote: SocketAddress?, local: SocketAddress?) -> String {
        if let key = key(remote: remote, local: local), let device = known.withLock({ $0[key] }) { return device }
        return identify(remote: remote, local: local)
    }

    /// Works out and keeps the device of a connection that has just opened.
    static func opened(remote: SocketAddress?, local: SocketAddress?) -> String {
        let device = identify(remote: remote, local: local)
        if let key = key(remote: remote, local: local) { known.withLock { $0[key] = device } }
        return device
    }

    static func closed(remote: SocketAddress?, local: SocketAddress?) {
        if let key = key(remote: remote, local: local) { _ = known.withLock { $0.removeValue(forKey: key) } }
    }

    static func identify(remote: SocketAddress?, local: SocketAddress?) -> String {
        guard let remote, let text = remote.ipAddress else { return "unknown" }
        if let local, let uid = owner(remote: remote, local: local) { return "this PC, uid \(uid)" }
        var address = text.lowercased()
        if address.hasPrefix("::ffff:"), address.contains(".") { address = String(address.dropFirst(7)) }
        return address
    }

    /// The uid owning the socket at the other end of a TCP connection, when that end is on this PC
    /// (in this network namespace): the socket table's row whose local end is `remote` and whose
    /// remote end is `local`. Nil for a connection from elsewhere.
    static func owner(
        remote: SocketAddress, local: SocketAddress, tables: [String] = ["/proc/net/tcp", "/proc/net/tcp6"]
    ) -> UInt32? {
        guard let remoteText = remote.ipAddress, let localText = local.ipAddress, let remotePort = remote.port,
            let localPort = local.port, let remoteBytes = DashboardIdentity.ipBytes(remoteText),
            let localBytes = DashboardIdentity.ipBytes(localText)
        else { return nil }
        switch ask(client: remoteBytes, clientPort: remotePort, server: localBytes, serverPort: localPort) {
        case .owner(let uid): return uid
        case .none: return nil
        // Without sock_diag (a sandbox that forbids netlink): the socket tables, read whole.
        case .failed:
            return fromTables(
                client: remoteBytes, clientPort: remotePort, server: localBytes, serverPort: localPort, tables: tables)
        }
    }

    /// The same, from the socket tables (`/proc/net/tcp`, `/proc/net/tcp6`), read whole.
    static func fromTables(
        client remoteBytes: [UInt8], clientPort remotePort: Int, server localBytes: [UInt8], serverPort localPort: Int,
        tables: [String] = ["/proc/net/tcp", "/proc/net/tcp6"]
    ) -> UInt32? {
        let wanted = (entry(remoteBytes, remotePort), entry(localBytes, localPort))
        for table in tables {
            guard let data = FileManager.default.contents(atPath: table) else { continue }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 7, fields[1] == wanted.0, fields[2] == wanted.1 else { continue }
                return UInt32(fields[7])
            }
        }
        return nil
    }

    /// An address and port as the socket table writes them: each 32-bit word of the address in
    /// the machine's byte order, in hex, then the port.
    static func entry(_ bytes: [UInt8], _ port: Int) -> Substring {
        var text = ""
        for word in stride(from: 0, to: bytes.count, by: 4) {
            for index in (word..<word + 4).reversed() { text += hex(bytes[index], width: 2) }
        }
        return Substring(text + ":" + hex(port, width: 4))
    }
}
