import Foundation

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
        let wanted = String(format: "%04X", port)
        var found: [Listener] = []
        for table in tables {
            guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.readToEnd() else {
                continue
            }
            try? handle.close()
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
