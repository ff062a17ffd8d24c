import FoundationEssentials

/// Who listens on a TCP port on this machine (in this network namespace): the kernel's socket
/// tables (`/proc/net/tcp`, `/proc/net/tcp6`), each listener with its owner's uid and its inode
/// (to find the processes holding it with `UnixPeers.socketInodes`).
public enum TCPListeners {
    public struct Listener: Sendable, Hashable {
        public var uid: UInt32
        public var inode: UInt32
    }

    /// The sockets listening on `port`, on any address.
    public static func on(port: Int, tables: [String] = ["/proc/net/tcp", "/proc/net/tcp6"]) -> [Listener] {
        let hex = String(port, radix: 16, uppercase: true)
        let wanted = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        var found: [Listener] = []
        for table in tables {
            guard let data = try? Files.read(table, limit: 64 << 20) else { continue }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // `sl local rem st …`: state 0A is LISTEN; uid is the 8th field, inode the 10th.
                guard fields.count > 9, fields[3] == "0A", fields[1].hasSuffix(":" + wanted),
                    let uid = UInt32(fields[7]), let inode = UInt32(fields[9])
                else { continue }
                found.append(Listener(uid: uid, inode: inode))
            }
        }
        return found
    }
}
