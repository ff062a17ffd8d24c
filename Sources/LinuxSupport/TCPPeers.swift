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
