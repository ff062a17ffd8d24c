import CLinuxShim
import Glibc

/// Which processes are connected to a Unix-socket server (a Wayland compositor whose focus the
/// agent cannot read): the kernel's own pairing of connected sockets (sock_diag's
/// `UNIX_DIAG_PEER`), matched against the sockets in each candidate's descriptor table. Nothing a
/// client claims: a program that hides its environment or its name still holds the socket.
public enum UnixPeers {
    /// Who serves the Unix socket at `path` (the kernel's word, from a connection made and closed
    /// at once), giving up after `timeout`.
    public static func server(of path: String, timeout: Duration) throws(SystemError) -> PeerCredentials {
        let fd = try StreamConnection.unix(path, timeout: timeout)
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

    /// A Unix socket as sock_diag tells it: its peer's inode when connected, and its address (a
    /// listener's, which the connections it accepted share; "@" starts an abstract one).
    public struct Socket: Sendable, Hashable {
        public var peer: UInt32?
        public var name: String?
        /// The inode of the file a path socket was bound to (which its connections share): the
        /// same after the file is renamed, when the name above still says the old path.
        public var fileInode: UInt32?
    }

    /// Every connected Unix socket's peer, by inode.
    public static func peers() throws(SystemError) -> [UInt32: UInt32] {
        try sockets().compactMapValues(\.peer)
    }

    /// Every Unix socket with its peer and address, by inode: one sock_diag dump of the
    /// machine's Unix sockets (in the agent's network namespace).
    public static func sockets() throws(SystemError) -> [UInt32: Socket] {
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
        append(UInt32(0x4 | 0x2 | 0x1))  // UDIAG_SHOW_PEER | UDIAG_SHOW_VFS | UDIAG_SHOW_NAME
        append(UInt32.max)
        append(UInt32.max)
        // Unconnected, a netlink socket sends to the kernel.
        let sent = send(fd, request, request.count, 0)
        guard sent == request.count else { throw SystemError.call("sendto(NETLINK_SOCK_DIAG)", errno) }
        var peers: [UInt32: Socket] = [:]
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
                        if kind == 2, size >= 8 { peers[inode, default: Socket()].peer = word(buffer, attribute + 4) }
                        // UNIX_DIAG_VFS: the bound file's inode, then its device.
                        if kind == 1, size >= 12 {
                            peers[inode, default: Socket()].fileInode = word(buffer, attribute + 4)
                        }
                        if kind == 0, size > 4 {  // UNIX_DIAG_NAME: sun_path, a NUL first when abstract
                            let path = buffer[(attribute + 4)..<(attribute + size)]
                            let abstract = path.first == 0
                            let text = String(
                                decoding: (abstract ? path.dropFirst() : path).prefix { $0 != 0 }, as: UTF8.self)
                            peers[inode, default: Socket()].name = (abstract ? "@" : "") + text
                        }
                        attribute += (size + 3) & ~3
                    }
                }
                offset += (length + 3) & ~3
            }
        }
    }

    /// The pids among `candidates` that hold a socket connected to one of `server`'s sockets
    /// (when `listening` is given, only to those it accepted on one of these addresses: a server
    /// may hold other sockets, a pair it shares with its parent).
    public static func clients(
        of server: Int32, among candidates: [Int32], listening: Set<String>? = nil, root: String = "/proc"
    )
        throws(SystemError) -> [Int32]
    {
        let wanted = try connections(of: server, listening: listening, root: root)
        guard !wanted.isEmpty else { return [] }
        return candidates.filter { $0 != server && !socketInodes(pid: $0, root: root).isDisjoint(with: wanted) }
    }

    /// The connections to one of `server`'s sockets that `pid` holds, and every other process
    /// among `candidates` that holds one of them too (inherited across a fork, or passed over a
    /// socket): all of them draw through that connection. `holds` is false when `pid` holds none
    /// (it handed its connection over, or closed it when it ran another program).
    public static func sharers(
        of pid: Int32, server: Int32, among candidates: [Int32], listening: Set<String>? = nil, root: String = "/proc"
    ) throws(SystemError) -> (holds: Bool, sharers: [Int32]) {
        let held = socketInodes(pid: pid, root: root).intersection(
            try connections(of: server, listening: listening, root: root))
        guard !held.isEmpty else { return (false, []) }
        let others = candidates.filter {
            $0 != pid && $0 != server && !socketInodes(pid: $0, root: root).isDisjoint(with: held)
        }
        return (true, others)
    }

    /// The pids among `candidates` connected to a socket `relay` listens on (the other ends of
    /// the connections it accepted, from the dump `all`): a program that relays a display's
    /// connection for others draws what they send through it.
    public static func relayedClients(
        by relay: Int32, among candidates: [Int32], sockets all: [UInt32: Socket], root: String = "/proc"
    ) -> [Int32] {
        // An accepted connection carries its listener's address; a client's end has none.
        let ends = Set(
            socketInodes(pid: relay, root: root).compactMap { inode -> UInt32? in
                guard let socket = all[inode], socket.name != nil else { return nil }
                return socket.peer
            })
        guard !ends.isEmpty else { return [] }
        return candidates.filter { $0 != relay && !socketInodes(pid: $0, root: root).isDisjoint(with: ends) }
    }

    /// One look at the machine's Unix sockets and at some processes' descriptors, indexed: which
    /// of those processes hold the client end of a connection accepted at an address (a display's
    /// socket, by path or abstract name), whoever holds the accepted end: the process that made
    /// the listener may have ended, or given it away. Many addresses are asked of one look.
    public struct View: Sendable {
        /// The peers of accepted connections, by their listener's address and by its bound file.
        private var peersByName: [String: [UInt32]] = [:]
        private var peersByFile: [UInt32: [UInt32]] = [:]
        /// The processes holding each socket, among those looked at.
        private var holders: [UInt32: [Int32]] = [:]

        /// `all` is a sock_diag dump (`sockets()`), `pids` the processes to look among.
        public init(sockets all: [UInt32: Socket], pids: [Int32], root: String = "/proc") {
            for socket in all.values {
                guard let peer = socket.peer else { continue }
                if let name = socket.name { peersByName[name, default: []].append(peer) }
                if let file = socket.fileInode { peersByFile[file, default: []].append(peer) }
            }
            for pid in pids {
                for inode in UnixPeers.socketInodes(pid: pid, root: root) { holders[inode, default: []].append(pid) }
            }
        }

        /// The processes looked at holding the client end of a connection accepted at one of
        /// `addresses`.
        public func connected(to addresses: Set<String>) -> [Int32] {
            var ends = addresses.flatMap { peersByName[$0] ?? [] }
            for path in addresses where path.hasPrefix("/") {
                var status = stat()
                guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { continue }
                ends += peersByFile[UInt32(truncatingIfNeeded: status.st_ino)] ?? []
            }
            return Set(ends.flatMap { holders[$0] ?? [] }).sorted()
        }
    }

    /// Whether sock_diag pairs any of `server`'s sockets with a peer here (it cannot across
    /// network namespaces): when not, who its clients are cannot be told.
    public static func canPair(server: Int32, listening: Set<String>? = nil, root: String = "/proc") -> Bool {
        (try? connections(of: server, listening: listening, root: root))?.isEmpty == false
    }

    /// The client ends of `server`'s connections (those accepted on `listening`, when given).
    static func connections(
        of server: Int32, listening: Set<String>?, root: String
    ) throws(SystemError) -> Set<UInt32> {
        let serverSockets = socketInodes(pid: server, root: root)
        guard !serverSockets.isEmpty else { return [] }
        let all = try sockets()
        // A socket file renamed (or reached by another spelling of its path) keeps the name it
        // was bound by: its inode is what the path names now.
        let files = Set(
            (listening ?? []).compactMap { path -> UInt32? in
                var status = stat()
                guard path.hasPrefix("/"), stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else {
                    return nil
                }
                return UInt32(truncatingIfNeeded: status.st_ino)
            })
        return Set(
            serverSockets.compactMap { inode in
                guard let socket = all[inode] else { return nil }
                if let listening, !listening.contains(socket.name ?? ""),
                    !(socket.fileInode.map(files.contains) ?? false)
                {
                    return nil
                }
                return socket.peer
            })
    }

    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}
