import CLinuxShim
import CXCB
import FoundationEssentials
import Glibc
import Synchronization

// The connection.
extension X11FocusWatch {
    /// Who serves a display's socket, asked of the kernel (the socket's peer), before anything is
    /// sent to it.
    public static func server(
        of display: X11Display, timeout: Duration = .seconds(5)
    ) throws(SystemError)
        -> PeerCredentials
    {
        let fd = try connect(display, timeout: timeout)
        defer { close(fd) }
        return try peerCredentials(fd, path: display.address)
    }

    /// A connection to `display`'s server: its Unix socket (or abstract name), or over TCP.
    static func connect(_ display: X11Display, timeout: Duration) throws(SystemError) -> Int32 {
        display.overTCP
            ? try StreamConnection.loopbackTCP(port: 6000 + display.number, timeout: timeout)
            : try StreamConnection.unix(display.socketPath, timeout: timeout)
    }

    static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Who is at the other end of a connected socket, as the kernel saw them (`SO_PEERCRED`).
    static func peerCredentials(_ fd: Int32, path: String) throws(SystemError) -> PeerCredentials {
        // Over TCP the kernel keeps no credentials: the process holding the server's end of the
        // connection, in the kernel's table of connections, and its owner.
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        if named == 0, Int32(address.ss_family) == AF_INET || Int32(address.ss_family) == AF_INET6 {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let found = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) }
            }
            // Both families' ports are the same two bytes after the family.
            let port = withUnsafeBytes(of: peer) { Int(UInt16($0[2]) << 8 | UInt16($0[3])) }
            guard found == 0,
                let server = TCPPeers.listener(port: port, ipv6: Int32(address.ss_family) == AF_INET6)
            else {
                throw SystemError(.command, "\(path): no process of this machine listens there")
            }
            return PeerCredentials(pid: server.pid, uid: server.uid, gid: 0)
        }
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard screentime_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
            throw SystemError.call("getsockopt(\(path), SO_PEERCRED)", errno)
        }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}
