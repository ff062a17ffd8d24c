import Glibc

/// Which processes are connected to a Unix-socket server (a Wayland compositor whose focus the
/// agent cannot read): the kernel's own pairing of connected sockets (sock_diag's
/// `UNIX_DIAG_PEER`), matched against the sockets in each candidate's descriptor table. Nothing a
/// client claims: a program that hides its environment or its name still holds the socket.
public enum UnixPeers {
    /// Who serves the Unix socket at `path` (the kernel's word, from a connection made and closed
    /// at once), giving up after `timeout`.
    public static func server(of path: String, timeout: Duration) throws(SystemError) -> PeerCredentials {
        let fd = try X11FocusWatch.connect(path, timeout: timeout)
        defer { close(fd) }
        return try X11FocusWatch.peerCredentials(fd, path: path)
    }

    /// The socket inodes among `pid`'s descriptors (`socket:[N]` links of `/proc/PID/fd`).
    public static func socketInodes(pid: Int32, root: String = "/proc") -> Set<UInt32> {
        guard let directory = opendir("\(root)/\(pid)/fd") else { return [] }
        defer { closedir(directory) }
        var found = Set<UInt32>()
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard Int32(name) != nil else { continue }
            let length = readlinkat(dirfd(directory), name, &target, target.count - 1)
            guard length > 9 else { continue }
            let text = String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("socket:["), text.hasSuffix("]"),
                let inode = UInt32(text.dropFirst(8).dropLast())
            else { continue }
            found.insert(inode)
        }
        return found
    }

    /// Every connected Unix socket's peer, by inode: one sock_diag dump of the machine's Unix
    /// sockets (in the agent's network namespace).
    public static func peers() throws(SystemError) -> [UInt32: UInt32] {
        let fd = try systemCall("socket(NETLINK_SOCK_DIAG)") {
            socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4)
        }
        defer { close(fd) }
        // nlmsghdr (length, type SOCK_DIAG_BY_FAMILY, flags REQUEST|DUMP, seq, pid), then
        // unix_diag_req (family, protocol, pad, states: all, ino: any, show: PEER, cookie).
        var request: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { request += $0 } }
        append(UInt32(16 + 24))
        append(UInt16(20))
        append(UInt16(0x1 | 0x300))
        append(UInt32(1))
        append(UInt32(0))
        request += [UInt8(AF_UNIX), 0, 0, 0]
        append(UInt32.max)
        append(UInt32(0))
        append(UInt32(0x4))
        append(UInt32.max)
        append(UInt32.max)
        // Unconnected, a netlink socket sends to the kernel.
        let sent = send(fd, request, request.count, 0)
        guard sent == request.count else { throw SystemError.call("sendto(NETLINK_SOCK_DIAG)", errno) }
        var peers: [UInt32: UInt32] = [:]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let got = try systemCall("recv(NETLINK_SOCK_DIAG)") { recv(fd, &buffer, buffer.count, 0) }
            var offset = 0
            while offset + 16 <= got {
                let length = Int(word(buffer, offset))
                let type = UInt16(buffer[offset + 4]) | UInt16(buffer[offset + 5]) << 8
                guard length >= 16, offset + length <= got else { return peers }
                if type == 3 { return peers }  // NLMSG_DONE
                if type == 2 {  // NLMSG_ERROR
                    let code = length >= 20 ? Int32(bitPattern: word(buffer, offset + 16)) : -EIO
                    throw SystemError.call("sock_diag dump", -code)
                }
                // unix_diag_msg: family, type, state, pad, ino, cookie[2]; then attributes.
                if length >= 32 {
                    let inode = word(buffer, offset + 20)
                    var attribute = offset + 32
                    while attribute + 4 <= offset + length {
                        let size = Int(UInt16(buffer[attribute]) | UInt16(buffer[attribute + 1]) << 8)
                        let kind = UInt16(buffer[attribute + 2]) | UInt16(buffer[attribute + 3]) << 8
                        guard size >= 4, attribute + size <= offset + length else { break }
                        if kind == 2, size >= 8 { peers[inode] = word(buffer, attribute + 4) }  // UNIX_DIAG_PEER
                        attribute += (size + 3) & ~3
                    }
                }
                offset += (length + 3) & ~3
            }
        }
    }

    /// The pids among `candidates` that hold a socket connected to one of `server`'s sockets.
    public static func clients(
        of server: Int32, among candidates: [Int32], root: String = "/proc"
    )
        throws(SystemError) -> [Int32]
    {
        let serverSockets = socketInodes(pid: server, root: root)
        guard !serverSockets.isEmpty else { return [] }
        let pairs = try peers()
        let wanted = Set(serverSockets.compactMap { pairs[$0] })
        guard !wanted.isEmpty else { return [] }
        return candidates.filter { $0 != server && !socketInodes(pid: $0, root: root).isDisjoint(with: wanted) }
    }

    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}
