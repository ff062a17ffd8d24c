import CLinuxShim
import Glibc

/// One question and its answer over UDP: the agent asks a child's resolver the child's own
/// question about a shielded name, to learn which addresses to refuse that child. A connected
/// socket, so only the server's datagrams are taken; a reply that does not come within the
/// deadline is an error.
public enum DatagramExchange {
    /// Sends `message` to `address` (4 or 16 bytes) and `port`, and returns the first datagram
    /// that comes back within `timeout` whose first two bytes equal the message's (a DNS ID).
    public static func ask(
        _ message: [UInt8], address: [UInt8], port: UInt16, timeout: Duration, maximumReply: Int = 4096
    ) throws(SystemError) -> [UInt8] {
        let family = address.count == 4 ? AF_INET : AF_INET6
        guard address.count == 4 || address.count == 16 else {
            throw SystemError(.systemCall, "an address of \(address.count) bytes")
        }
        let fd = try systemCall("socket(UDP)") {
            socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        defer { close(fd) }
        var storage = sockaddr_storage()
        let length: Int
        if address.count == 4 {
            var server = sockaddr_in()
            server.sin_family = sa_family_t(AF_INET)
            server.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &server.sin_addr) { $0.copyBytes(from: address) }
            length = place(server, in: &storage)
        } else {
            var server = sockaddr_in6()
            server.sin6_family = sa_family_t(AF_INET6)
            server.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &server.sin6_addr) { $0.copyBytes(from: address) }
            length = place(server, in: &storage)
        }
        try systemCall("connect(UDP)") {
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(length)) }
            }
        }
        _ = try systemCall("send(UDP)") { message.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) } }
        let deadline = ContinuousClock.now + timeout
        var reply = [UInt8](repeating: 0, count: maximumReply)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw SystemError(.timedOut, "no answer within \(timeout)") }
            let milliseconds = Int32(
                clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard try systemCall("poll(UDP)", { poll(&descriptor, 1, milliseconds) }) > 0 else { continue }
            let count = try systemCall("recv(UDP)") {
                reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            }
            if count >= 2, message.count >= 2, reply[0] == message[0], reply[1] == message[1] {
                return Array(reply[0..<count])
            }
        }
    }

    /// Copies a socket address into storage for any family; its length.
    private static func place<Address>(_ address: Address, in storage: inout sockaddr_storage) -> Int {
        withUnsafeMutableBytes(of: &storage) { target in
            withUnsafeBytes(of: address) { target.copyMemory(from: $0) }
        }
        return MemoryLayout<Address>.size
    }
}
