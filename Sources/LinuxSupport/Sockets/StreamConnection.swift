import CLinuxShim
import Glibc

/// Stream connections the agent opens to servers a user may run (an X server, a compositor, its
/// IPC): each given up after a time, so a server that never accepts cannot hold the agent.
enum StreamConnection {
    /// A Unix stream connection to a socket `path` (a display's, a compositor's), or, where no server listens there,
    /// to the same name in the abstract namespace (`@/tmp/.X11-unix/X67`, where `Xvfb -nolisten
    /// unix` and `startx -- -nolisten unix` listen, as libxcb's clients look first). Who answers
    /// is asked of the kernel (SO_PEERCRED) by the callers either way. Given up after `timeout`
    /// (a listener whose backlog is full makes `connect` wait: SO_SNDTIMEO bounds that wait).
    static func unix(_ path: String, timeout: Duration) throws(SystemError) -> Int32 {
        do {
            return try connect(path, abstract: false, timeout: timeout)
        } catch let error where error.errno == ENOENT || error.errno == ECONNREFUSED {
            do {
                return try connect(path, abstract: true, timeout: timeout)
            } catch let abstractError {
                throw SystemError(
                    .systemCall, "\(error.message); \(abstractError.message)", errno: abstractError.errno)
            }
        }
    }

    /// A TCP connection to `port` on loopback (IPv4, else IPv6), given up after `timeout`.
    static func loopbackTCP(port: Int, timeout: Duration) throws(SystemError) -> Int32 {
        guard (1...65535).contains(port) else { throw SystemError(.badFile, "no TCP port \(port)") }
        var failure = SystemError(.systemCall, "connect(localhost:\(port)) was not tried")
        for family in [AF_INET, AF_INET6] {
            let fd = try systemCall("socket(TCP)") {
                socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            }
            var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            let result: Int32
            if family == AF_INET {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
                result = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            } else {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = in_port_t(UInt16(port).bigEndian)
                var loopback = in6_addr()
                withUnsafeMutableBytes(of: &loopback) { $0[15] = 1 }
                address.sin6_addr = loopback
                result = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    }
                }
            }
            if result == 0 {
                var none = timeval(tv_sec: 0, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
                return fd
            }
            failure = SystemError.call("connect(\(family == AF_INET ? "127.0.0.1" : "[::1]"):\(port))", errno)
            close(fd)
        }
        throw failure
    }

    private static func connect(_ path: String, abstract: Bool, timeout: Duration) throws(SystemError) -> Int32 {
        let fd = try systemCall("socket(AF_UNIX)") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract name is a NUL, then the path's bytes, its length the address's own.
        let bytes = (abstract ? [0] : []) + Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw SystemError(.badFile, "\(path) is too long for a socket path")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length =
            abstract
            ? socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2) + socklen_t(bytes.count)
            : socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, length)
            }
        }
        guard result == 0 else {
            let error = errno
            close(fd)
            throw SystemError.call("connect(\(abstract ? "@" : "")\(path))", error)
        }
        var none = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }
}
