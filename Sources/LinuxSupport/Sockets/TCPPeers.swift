import Glibc

/// Which processes are connected over TCP to a server (an X server a child runs with
/// `-listen tcp`, whose clients over TCP it cannot name): the kernel's table of the server's
/// network namespace (`/proc/PID/net/tcp`, `tcp6`), each connection of the server's matched with
/// its other end by address, and that end's socket with a candidate's descriptors by inode.
public enum TCPPeers {
    /// One established connection's end: its own address, its peer's, its socket's inode.
    struct End: Hashable {
        var local: String
        var remote: String
        var inode: UInt32
    }

    /// The process of this machine listening on TCP `port` (on loopback or any address, in the
    /// agent's network namespace; `ipv6`: in that family's table), and its owner: the kernel's
    /// table names the listening socket and its owner, and the process is one of that owner's
    /// holding it. Asked by the listener, not by the connection: a server that closes a
    /// connection at once is still known.
    public static func listener(port: Int, ipv6: Bool, root: String = "/proc") -> (pid: Int32, uid: UInt32)? {
        guard let bytes = KernelRecord.read("\(root)/self/net/\(ipv6 ? "tcp6" : "tcp")", limit: 8 << 20) else {
            return nil
        }
        let suffix = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4)
        for line in bytes.split(separator: UInt8(ascii: "\n")).dropFirst() {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count > 9, fields[3].elementsEqual("0A".utf8) else { continue }
            let local = String(decoding: fields[1], as: UTF8.self)
            guard local.hasSuffix(suffix), let inode = UInt32(String(decoding: fields[9], as: UTF8.self)),
                let uid = UInt32(String(decoding: fields[7], as: UTF8.self))
            else { continue }
            if let pid = holder(of: inode, uid: uid, root: root) { return (pid, uid) }
        }
        return nil
    }

    /// A process of `uid`'s holding socket `inode`.
    static func holder(of inode: UInt32, uid: UInt32, root: String) -> Int32? {
        guard let directory = opendir(root) else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard let pid = Int32(name) else { continue }
            var status = stat()
            guard stat("\(root)/\(pid)", &status) == 0, status.st_uid == uid else { continue }
            if UnixPeers.socketInodes(pid: pid, root: root).contains(inode) { return pid }
        }
        return nil
    }

    /// The processes among `pids` holding the other end of a TCP connection one of `server`'s
    /// sockets holds (on loopback, or anywhere in the server's network namespace).
    public static func clients(of server: Int32, among pids: [Int32], root: String = "/proc") -> [Int32] {
        let ends = established(in: server, root: root)
        guard !ends.isEmpty else { return [] }
        let held = UnixPeers.socketInodes(pid: server, root: root)
        let wanted = Set(ends.filter { held.contains($0.inode) }.map { [$0.remote, $0.local] })
        guard !wanted.isEmpty else { return [] }
        let others = Set(ends.filter { wanted.contains([$0.local, $0.remote]) }.map(\.inode))
        guard !others.isEmpty else { return [] }
        return pids.filter { $0 != server && !UnixPeers.socketInodes(pid: $0, root: root).isDisjoint(with: others) }
    }

    /// The established TCP connections of `pid`'s network namespace (IPv4 and IPv6); none when
    /// the tables cannot be read (a gone process) or are past 8 MB (a namespace full of them).
    static func established(in pid: Int32, root: String = "/proc") -> [End] {
        var ends: [End] = []
        for table in ["tcp", "tcp6"] {
            guard let bytes = KernelRecord.read("\(root)/\(pid)/net/\(table)", limit: 8 << 20) else { continue }
            ends += parse(bytes)
        }
        return ends
    }

    /// The lines of a `/proc/net/tcp` table (a header, then `sl local remote st ... inode ...`
    /// separated by spaces): those in state 01 (established).
    static func parse(_ bytes: [UInt8]) -> [End] {
        var ends: [End] = []
        for line in bytes.split(separator: UInt8(ascii: "\n")).dropFirst() {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count > 9, fields[3].elementsEqual("01".utf8),
                let inode = UInt32(String(decoding: fields[9], as: UTF8.self)), inode != 0
            else { continue }
            ends.append(
                End(
                    local: String(decoding: fields[1], as: UTF8.self),
                    remote: String(decoding: fields[2], as: UTF8.self),
                    inode: inode))
        }
        return ends
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
