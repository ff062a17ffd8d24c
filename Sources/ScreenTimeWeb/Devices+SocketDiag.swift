import Glibc

extension Devices {
    /// The uid owning the client's end of a TCP connection, asked of the kernel by the connection's
    /// four numbers (sock_diag, `SOCK_DIAG_BY_FAMILY` for one socket, not a dump): one lookup
    /// whatever the number of sockets on the PC, so a child with thousands open cannot make each
    /// new connection slow. Nil when no socket on this PC (in this network namespace) is that end,
    /// and `.failed` when the kernel could not be asked.
    enum Lookup: Equatable {
        case owner(UInt32)
        case none
        case failed
    }

    static func ask(client: [UInt8], clientPort: Int, server: [UInt8], serverPort: Int) -> Lookup {
        guard client.count == server.count, client.count == 4 || client.count == 16 else { return .failed }
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4)  // NETLINK_SOCK_DIAG
        guard fd >= 0 else { return .failed }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // nlmsghdr (16) + inet_diag_req_v2 (56): family, protocol, ext, pad, states, then the
        // socket's id: ports (network order), source and destination (16 bytes each), interface,
        // cookie (none: ~0, ~0).
        var message = [UInt8](repeating: 0, count: 72)
        func put32(_ value: UInt32, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { message.replaceSubrange(offset..<offset + 4, with: $0) }
        }
        func put16(_ value: UInt16, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { message.replaceSubrange(offset..<offset + 2, with: $0) }
        }
        put32(72, at: 0)
        put16(20, at: 4)  // SOCK_DIAG_BY_FAMILY
        put16(1, at: 6)  // NLM_F_REQUEST
        put32(1, at: 8)
        message[16] = UInt8(client.count == 4 ? AF_INET : AF_INET6)
        message[17] = UInt8(IPPROTO_TCP)
        put32(0xFFFF_FFFF, at: 20)  // every state
        message[24] = UInt8(clientPort >> 8)
        message[25] = UInt8(clientPort & 0xFF)
        message[26] = UInt8(serverPort >> 8)
        message[27] = UInt8(serverPort & 0xFF)
        message.replaceSubrange(28..<28 + client.count, with: client)
        message.replaceSubrange(44..<44 + server.count, with: server)
        put32(0xFFFF_FFFF, at: 64)
        put32(0xFFFF_FFFF, at: 68)
        // An unconnected netlink socket sends to the kernel.
        let sent = send(fd, message, message.count, 0)
        guard sent == message.count else { return .failed }
        var answer = [UInt8](repeating: 0, count: 8192)
        let count = recv(fd, &answer, answer.count, 0)
        guard count >= 16 else { return .failed }
        func get32(_ offset: Int) -> UInt32 {
            answer[offset..<offset + 4].enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) }
        }
        let type = UInt16(answer[4]) | UInt16(answer[5]) << 8
        if type == 2 {  // NLMSG_ERROR
            // The kernel's error: ENOENT is "no such socket here".
            guard count >= 20 else { return .failed }
            return Int32(bitPattern: get32(16)) == -ENOENT ? .none : .failed
        }
        // inet_diag_msg after the header: family, state, timer, retrans, id (48), expires,
        // rqueue, wqueue, uid, inode.
        guard type == 20, count >= 16 + 72 else { return .failed }
        return .owner(get32(16 + 4 + 48 + 12))
    }
}
