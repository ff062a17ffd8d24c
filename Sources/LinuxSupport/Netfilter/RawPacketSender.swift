import CLinuxShim
import Glibc

/// Sends whole IP packets, headers written by the caller, through raw sockets (IPPROTO_RAW: the
/// kernel routes each by its destination and sends it as it is). The agent's way to answer a
/// connection it refuses on the server's behalf (a block page for a plain-HTTP request): the
/// packet goes back to the sender along the route any packet to it takes, loopback for a local
/// process, whatever the server's route is.
///
/// Made when the agent starts (it needs CAP_NET_RAW), in the network namespace of the queue it
/// answers for. Sending never blocks: the sockets are non-blocking, and a packet the kernel has no
/// room for is dropped (the sender then sees a reset, as without the page).
public final class RawPacketSender: Sendable {
    private let socket4: Int32
    private let socket6: Int32

    public init() throws(SystemError) {
        socket4 = try systemCall("socket(AF_INET, SOCK_RAW, IPPROTO_RAW)") {
            socket(
                AF_INET, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                Int32(IPPROTO_RAW))
        }
        do {
            // IPPROTO_RAW over IPv6 includes the header (IPV6_HDRINCL) on Linux.
            socket6 = try systemCall("socket(AF_INET6, SOCK_RAW, IPPROTO_RAW)") {
                socket(
                    AF_INET6, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                    Int32(IPPROTO_RAW))
            }
        } catch {
            close(socket4)
            throw error
        }
    }

    deinit {
        close(socket4)
        close(socket6)
    }

    /// Whether `address` (4 or 16 bytes) is one of this network namespace's own addresses: a
    /// datagram socket may be bound to it (without IP_FREEBIND, which lets a program bind any
    /// address). Three system calls; a link-local address (which needs its interface) is not.
    public static func isLocal(_ address: some Collection<UInt8>) -> Bool {
        let bytes = Array(address)
        guard bytes.count == 4 || bytes.count == 16 else { return false }
        let probe = socket(
            bytes.count == 4 ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        return withSocketAddress(bytes) { bind(probe, $0, $1) } == 0
    }

    /// Sends `packet`, an IPv4 or IPv6 packet with its headers and checksums written, to the
    /// destination its header names.
    public func send(_ packet: [UInt8]) throws(SystemError) {
        guard let version = packet.first.map({ $0 >> 4 }),
            version == 4 ? packet.count >= 20 : version == 6 && packet.count >= 40
        else { throw SystemError(.badFile, "not an IPv4 or IPv6 packet (\(packet.count) bytes)") }
        let destination = Array(version == 4 ? packet[16..<20] : packet[24..<40])
        let sent = packet.withUnsafeBytes { bytes in
            Self.withSocketAddress(destination) { address, length in
                Glibc.sendto(version == 4 ? socket4 : socket6, bytes.baseAddress, bytes.count, 0, address, length)
            }
        }
        if sent < 0 { throw SystemError.call("sendto(raw IPv\(version))", errno) }
    }

    /// `body` given the socket address of `bytes` (4 bytes: IPv4; 16: IPv6), port 0.
    private static func withSocketAddress<T>(
        _ bytes: [UInt8], _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
    ) -> T {
        func call<Address>(_ address: inout Address) -> T {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<Address>.size))
                }
            }
        }
        if bytes.count == 4 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
            return call(&address)
        }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes.prefix(16)) }
        return call(&address)
    }
}
