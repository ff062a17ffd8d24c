import CLinuxShim
import Glibc
public import ScreenTimeIPC

/// The typed client of the agent's control socket, for the CLI, guardian apps, the shield window
/// and extensions: `send(_:)` a request, get its reply (or the agent's error, thrown).
///
/// One connection per request; the caller is known to the agent by what the kernel says of the
/// connecting process (`SO_PEERCRED`), never by what it claims. Files a request names (a program
/// to mint a token for) are opened here, by the caller, and passed as descriptors (`SCM_RIGHTS`):
/// the agent reads nothing a caller could not read itself. This module links nothing of the
/// agent's (no PAM, netfilter or libcap).
public struct ScreenTimeClient: Sendable {
    /// The agent's default socket.
    public static let defaultSocket = "/run/screentime/screentimed.sock"

    public let socket: String
    /// How long a reply may take (a password check or a policy change takes up to a few seconds).
    public var timeout: Int32 = 60
    /// Inside an extension the agent started: the channel (its descriptor, `$SCREENTIME_CHANNEL_FD`)
    /// through which connections are opened with the authority the agent gave the extension —
    /// no secret travels, the descriptor is the authority.
    public let channel: Int32?
    /// The dashboard's: the signed-in guardian's session every request is made in (the token
    /// `WebSignInRequest` returned). The agent honours it only from the dashboard's account.
    public var session: String?

    /// A client of the socket at `socket`, else of the channel an extension was given
    /// (`$SCREENTIME_CHANNEL_FD`), else of `$SCREENTIME_SOCKET`, else of the default socket.
    public init(socket: String? = nil) {
        channel = socket == nil ? Self.inheritedChannel() : nil
        if let socket {
            self.socket = socket
        } else if channel != nil {
            self.socket = "the extension's channel"
        } else if let variable = getenv("SCREENTIME_SOCKET"), variable.pointee != 0 {
            self.socket = String(cString: variable)
        } else {
            self.socket = Self.defaultSocket
        }
    }

    /// The channel named by `$SCREENTIME_CHANNEL_FD`, if it is an open socket.
    private static func inheritedChannel() -> Int32? {
        guard let variable = getenv("SCREENTIME_CHANNEL_FD"), let fd = Int32(String(cString: variable)), fd >= 3
        else { return nil }
        var kind: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &kind, &length) == 0, kind == Int32(SOCK_SEQPACKET.rawValue) else {
            return nil
        }
        return fd
    }

    /// Sends a request, with open files it names (`FileArgument.descriptor` indexes `files`), and
    /// returns the reply. The descriptors stay the caller's to close.
    public func send<R: ControlRequest>(_ request: R, files: [Int32] = []) throws(ScreenTimeIPCError) -> R.Reply {
        let bytes: [UInt8]
        do {
            bytes = try RequestEnvelope.encode(request, session: session)
        } catch {
            throw ScreenTimeIPCError(.invalidArgument, "the request cannot be encoded: \(error)")
        }
        let connection: ClientConnection
        if let channel {
            connection = try ClientConnection(channel: channel, timeout: timeout)
        } else {
            connection = try ClientConnection(path: socket, timeout: timeout)
        }
        do {
            try connection.send(Framing.frame(bytes), files: files)
        } catch {
            // An agent that turns the connection away (busy) replies and closes before reading:
            // its reply is still there to be read.
            if let reply = try? connection.readFrame() { return try ReplyCoding.decode(R.Reply.self, from: reply) }
            throw error
        }
        let reply = try connection.readFrame()
        return try ReplyCoding.decode(R.Reply.self, from: reply)
    }

    /// Opens a program (or any file) for reading as the caller, to pass with a request: no
    /// waiting on a FIFO, no controlling terminal. Throws what went wrong, naming the path.
    public static func openFile(_ path: String) throws(ScreenTimeIPCError) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            throw ScreenTimeIPCError(.invalidArgument, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }
}

/// One connection to the agent: connect, one frame out (with descriptors), one frame back.
private final class ClientConnection {
    private let fd: Int32
    private let path: String

    /// A connection opened through an extension's channel: a datagram asks, the agent answers
    /// with one end of a new connection.
    init(channel: Int32, timeout: Int32) throws(ScreenTimeIPCError) {
        path = "the extension's channel"
        let ask: [UInt8] = Array("connect".utf8)
        let sent = ask.withUnsafeBytes { Glibc.send(channel, $0.baseAddress, $0.count, screentime_msg_nosignal()) }
        guard sent == ask.count else {
            throw Self.unreachable(path, "send: \(String(cString: strerror(errno)))")
        }
        var answer = [UInt8](repeating: 0, count: 16)
        var descriptors: [Int32] = [-1]
        var count: Int32 = 0
        var received: Int = -1
        repeat {
            received = answer.withUnsafeMutableBytes { bytes in
                descriptors.withUnsafeMutableBufferPointer {
                    screentime_receive_with_descriptors(
                        channel, bytes.baseAddress, UInt(bytes.count), $0.baseAddress, 1, &count, 0)
                }
            }
        } while received < 0 && errno == EINTR
        guard received > 0, count == 1, descriptors[0] >= 0 else {
            throw ScreenTimeIPCError(
                .agentUnreachable, "the agent gave this extension no connection (it ended, or it opened too many)")
        }
        fd = descriptors[0]
        var value = timeval(tv_sec: Int(timeout), tv_usec: 0)
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    init(path: String, timeout: Int32) throws(ScreenTimeIPCError) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Self.unreachable(path, "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ScreenTimeIPCError(.invalidArgument, "'\(path)' is not a socket path")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw Self.unreachable(path, String(cString: strerror(error)))
        }
        var value = timeval(tv_sec: Int(timeout), tv_usec: 0)
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    deinit { close(fd) }

    static func unreachable(_ path: String, _ why: String) -> ScreenTimeIPCError {
        ScreenTimeIPCError(
            .agentUnreachable,
            "cannot reach the agent at \(path) (\(why)); is screentimed running? (sudo make install starts it)")
    }

    /// The whole frame; the descriptors ride with its first bytes.
    func send(_ frame: [UInt8], files: [Int32]) throws(ScreenTimeIPCError) {
        var sent = 0
        while sent < frame.count {
            let attached = sent == 0 ? files : []
            let count = frame[sent...].withUnsafeBytes { bytes in
                attached.withUnsafeBufferPointer {
                    screentime_send_with_descriptors(
                        fd, bytes.baseAddress, UInt(bytes.count), $0.baseAddress, Int32($0.count))
                }
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.unreachable(path, "send: \(String(cString: strerror(errno)))")
            }
            sent += count
        }
    }

    func readFrame() throws(ScreenTimeIPCError) -> [UInt8] {
        guard let header = try read(exactly: 4) else {
            throw ScreenTimeIPCError(.agentUnreachable, "the agent at \(path) closed the connection")
        }
        let length = try Framing.payloadLength(header: header)
        guard let payload = try read(exactly: length) else {
            throw ScreenTimeIPCError(.agentUnreachable, "the agent at \(path) closed the connection")
        }
        return payload
    }

    private func read(exactly count: Int) throws(ScreenTimeIPCError) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, count - filled) }
            if got < 0 {
                if errno == EINTR { continue }
                let why = errno == EAGAIN ? "no reply in time" : String(cString: strerror(errno))
                throw Self.unreachable(path, why)
            }
            if got == 0 {
                if filled == 0 { return nil }
                throw ScreenTimeIPCError(.agentUnreachable, "the agent at \(path) closed the connection mid-reply")
            }
            filled += got
        }
        return buffer
    }
}
