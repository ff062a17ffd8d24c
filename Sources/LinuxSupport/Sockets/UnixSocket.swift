import CLinuxShim
import Glibc

/// The credentials of the process at the other end of a Unix socket, from the kernel.
public struct PeerCredentials: Hashable, Sendable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// This process's own.
    public static var ofThisProcess: PeerCredentials { PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()) }
}

/// Descriptors received (over a socket) or handed on, as plain numbers.
public enum FileDescriptors {
    /// Closes each.
    public static func close(_ descriptors: [Int32]) {
        for fd in descriptors { Glibc.close(fd) }
    }
}

/// A stream Unix socket: listening, accepted or connected. Blocking; every call retries EINTR and
/// throws an error naming the call. Closed when the last reference goes.
public final class UnixSocket: Sendable {
    public let descriptor: Int32
    private let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Takes over a connected stream socket made elsewhere (one end of a socket pair); `name`
    /// says what it is in errors.
    public convenience init(adopting descriptor: Int32, name: String) {
        self.init(descriptor: descriptor, path: name)
    }

    /// Ends the connection both ways now (a reader blocked on it sees its end).
    public func shutDown() { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }

    /// Listens at `path`, replacing a stale socket file; the file gets `mode` (0666: anyone may
    /// connect, the agent checks who they are).
    public static func listen(
        at path: String, mode: UInt32 = 0o666, backlog: Int32 = 64
    ) throws(SystemError)
        -> UnixSocket
    {
        let fd = try systemCall("socket(AF_UNIX)") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        let listener = UnixSocket(descriptor: fd, path: path)
        var address = try socketAddress(path)
        unlink(path)
        try systemCall("bind(\(path))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        try systemCall("chmod(\(path))") { chmod(path, mode) }
        try systemCall("listen(\(path))") { Glibc.listen(fd, backlog) }
        return listener
    }

    /// Connects to a listening socket.
    public static func connect(to path: String) throws(SystemError) -> UnixSocket {
        let fd = try systemCall("socket(AF_UNIX)") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        let connection = UnixSocket(descriptor: fd, path: path)
        var address = try socketAddress(path)
        try systemCall("connect(\(path))") {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return connection
    }

    /// Waits for a connection, with no timer, until one comes (returned) or `stop` is raised (nil).
    public func accept(unless stop: StopSignal) throws(SystemError) -> UnixSocket? {
        var pollers = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.fd, events: Int16(POLLIN), revents: 0),
        ]
        _ = try systemCall("poll(\(path))") { poll(&pollers, 2, -1) }
        guard pollers[1].revents == 0, pollers[0].revents != 0 else { return nil }
        let fd = try systemCall("accept(\(path))") { screentime_accept(descriptor) }
        return UnixSocket(descriptor: fd, path: path)
    }

    /// Who is at the other end, as the kernel saw them connect.
    public func peerCredentials() throws(SystemError) -> PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        try systemCall("getsockopt(SO_PEERCRED)") { screentime_peer_credentials(descriptor, &pid, &uid, &gid) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }

    /// Reads up to `count` bytes, and any descriptors sent with them (`SCM_RIGHTS`, close on exec,
    /// at most 16), waiting no later than `deadline`. Returns no bytes at the end of the stream;
    /// throws `timedOut` when the deadline passes first.
    public func receive(
        upTo count: Int, until deadline: ContinuousClock.Instant
    ) throws(SystemError) -> (bytes: [UInt8], files: [Int32]) {
        var buffer = [UInt8](repeating: 0, count: count)
        var files = [Int32](repeating: -1, count: Int(SCREENTIME_MAX_DESCRIPTORS))
        while true {
            try wait(for: Int16(POLLIN), until: deadline)
            var received: Int32 = 0
            let got = retryingInterrupts {
                buffer.withUnsafeMutableBytes { bytes in
                    files.withUnsafeMutableBufferPointer {
                        screentime_receive_with_descriptors(
                            descriptor, bytes.baseAddress, UInt(bytes.count), $0.baseAddress, Int32($0.count),
                            &received, screentime_msg_dontwait())
                    }
                }
            }
            if got < 0 {
                if errno == EAGAIN { continue }
                throw SystemError.call("recvmsg(\(path))", errno)
            }
            return (Array(buffer.prefix(got)), Array(files.prefix(Int(received))))
        }
    }

    /// Waits until the socket is ready for `events`, or throws `timedOut` at the deadline.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(SystemError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw SystemError(.timedOut, "\(path): no data in time") }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var poller = pollfd(fd: descriptor, events: events, revents: 0)
            // Interrupted (by a signal of the agent's own: no one else may send it one), it waits
            // that long again, and the deadline is looked at when it ends.
            let ready = retryingInterrupts { poll(&poller, 1, milliseconds) }
            if ready < 0 { throw SystemError.call("poll(\(path))", errno) }
            if ready > 0 { return }
        }
    }

    /// Writes all the bytes, waiting no later than `deadline` (a peer that reads nothing cannot
    /// hold the writer).
    public func write(_ bytes: [UInt8], until deadline: ContinuousClock.Instant) throws(SystemError) {
        var sent = 0
        while sent < bytes.count {
            try wait(for: Int16(POLLOUT), until: deadline)
            let wrote = retryingInterrupts {
                bytes.withUnsafeBytes {
                    send(
                        descriptor, $0.baseAddress! + sent, bytes.count - sent,
                        screentime_msg_nosignal() | screentime_msg_dontwait())
                }
            }
            if wrote < 0 {
                if errno == EAGAIN { continue }
                throw SystemError.call("send(\(path))", errno)
            }
            sent += wrote
        }
    }

    /// Makes blocking reads and writes give up after `seconds`.
    public func setTimeout(seconds: Int) throws(SystemError) {
        var value = timeval(tv_sec: seconds, tv_usec: 0)
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            try systemCall("setsockopt(SO_RCVTIMEO)") {
                setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
            }
        }
    }

    /// Reads exactly `count` bytes; nil if the peer closed before the first byte.
    public func read(exactly count: Int) throws(SystemError) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = try systemCall("read(\(path))") {
                buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + filled, count - filled) }
            }
            if got == 0 {
                if filled == 0 { return nil }
                throw SystemError(.systemCall, "read(\(path)): the peer closed after \(filled) of \(count) bytes")
            }
            filled += got
        }
        return buffer
    }

    /// Writes all the bytes.
    public func write(_ bytes: [UInt8]) throws(SystemError) {
        var sent = 0
        while sent < bytes.count {
            let wrote = try systemCall("write(\(path))") {
                bytes.withUnsafeBytes {
                    send(descriptor, $0.baseAddress! + sent, bytes.count - sent, screentime_msg_nosignal())
                }
            }
            sent += wrote
        }
    }

    private static func socketAddress(_ path: String) throws(SystemError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw SystemError(.systemCall, "socket path '\(path)' must be 1 to \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        return address
    }
}

/// Appends what a compositor or display server sent on `fd` (a stream it may trickle or stall) to
/// `buffer`, waiting no later than `deadline`; false when `stop` was raised first. Throws at the
/// end of the stream and past the deadline, naming `what`.
func receiveMore(
    _ fd: Int32, into buffer: inout [UInt8], chunk: Int, stop: StopSignal, deadline: ContinuousClock.Instant?,
    what: String
) throws(SystemError) -> Bool {
    while true {
        var timeout: Int32 = -1
        if let deadline {
            let left = deadline - .now
            guard left > .zero else { throw SystemError(.timedOut, "\(what): no answer in time") }
            timeout = Int32(clamping: max(1, left.milliseconds))
        }
        var pollers = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.fd, events: Int16(POLLIN), revents: 0),
        ]
        _ = try systemCall("poll(\(what))") { poll(&pollers, 2, timeout) }
        if stop.isRaised { return false }
        guard pollers[0].revents != 0 else { continue }
        var bytes = [UInt8](repeating: 0, count: chunk)
        let got = try systemCall("recv(\(what))") { recv(fd, &bytes, bytes.count, Int32(MSG_DONTWAIT)) }
        if got == 0 { throw SystemError(.command, "\(what): the compositor closed the connection") }
        buffer += bytes[0..<got]
        return true
    }
}
