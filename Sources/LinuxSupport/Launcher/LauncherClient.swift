import CLauncher
import CLinuxShim
import FoundationEssentials
import Glibc
import Synchronization

/// The agent's end of the launcher: starts it (before the capability drop) and asks it to start
/// programs. A thread of its own reads what the launcher says: answers go to the request they
/// answer (by id), and `exited` reports to whoever waits for that program — so a caller waiting
/// for one program to end holds up no other launch.
public final class LauncherClient: Sendable {
    /// The launcher's pid.
    public let pid: Int32
    /// The extension account's uid, as the launcher was told.
    public let extensionUID: UInt32?
    /// The dashboard account's uid, as the launcher was told.
    public let dashboardUID: UInt32?
    private let socket: Int32
    private let ended = Mutex(false)
    private let inbox = Inbox()
    private let readerStarted = Mutex(false)

    /// What the reader thread received, under one condition.
    private final class Inbox: @unchecked Sendable {
        let condition = Condition()
        // Guarded by `condition`.
        var answers: [UInt64: (pid: Int32?, refused: String?)] = [:]
        var exits: [Int32: Int32] = [:]
        var gone = false
        var nextID: UInt64 = 1
    }

    /// Starts `executable` with `arguments` and the launcher's end of a new socket pair as fd 3
    /// (`screentimed --launcher 3 [--extension-uid UID]`), its standard error the caller's.
    public static func start(
        executable: String, arguments: [String], extensionUID: UInt32?, dashboardUID: UInt32? = nil
    ) throws(SystemError) -> LauncherClient {
        var pair: [Int32] = [-1, -1]
        try systemCall("socketpair") {
            socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        }
        defer { close(pair[1]) }
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let pid: Int32
        do throws(SystemError) {
            pid = try ChildProcess.spawn(
                executable, arguments, environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], stdio: (null, null, 2),
                descriptors: [(pair[1], 3)])
        } catch {
            close(pair[0])
            throw SystemError(.launch, "cannot start the launcher: \(error.message)")
        }
        // Ready once it kept only its capabilities; one that cannot says so on standard error and ends.
        do throws(SystemError) {
            guard try Self.receive(pair[0], until: .now + .seconds(10)).ready == pid else {
                throw SystemError(.launch, "the launcher did not say it was ready")
            }
        } catch {
            close(pair[0])
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw error
        }
        // Its reader thread starts at the first request: the agent starts the launcher while it
        // has one thread, before it drops its capabilities (which belong to threads).
        return LauncherClient(pid: pid, socket: pair[0], extensionUID: extensionUID, dashboardUID: dashboardUID)
    }

    /// Starts the reader thread once.
    private func startReading() {
        let first = readerStarted.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        Threads.start("screentime.launcher") { [inbox, socket] in Self.read(socket, into: inbox) }
    }

    private init(pid: Int32, socket: Int32, extensionUID: UInt32?, dashboardUID: UInt32?) {
        self.pid = pid
        self.socket = socket
        self.extensionUID = extensionUID
        self.dashboardUID = dashboardUID
    }

    deinit {
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }

    /// Whether the launcher has ended (it is reaped here, once: it is the caller's child).
    public var hasEnded: Bool {
        ended.withLock { ended in
            if !ended {
                var status: Int32 = 0
                ended = waitpid(pid, &status, WNOHANG) == pid
            }
            return ended
        }
    }

    /// Closes the agent's end: the launcher ends, and what it started dies with it.
    public func shutDown() { _ = Glibc.shutdown(socket, Int32(SHUT_RDWR)) }

    /// Asks the launcher to start a program, handing it `files` as `request.descriptors` say (they
    /// stay the caller's to close); returns its pid, or throws the launcher's refusal (or that it
    /// did not answer in time).
    public func launch(
        _ request: LaunchRequest, files: [Int32] = [], timeout: Duration = .seconds(10)
    ) throws(SystemError) -> Int32 {
        try request.validate(extensionUID: extensionUID, dashboardUID: dashboardUID)
        guard files.count == request.descriptors.count else {
            throw SystemError(.launch, "\(request.descriptors.count) descriptors named, \(files.count) given")
        }
        inbox.condition.lock()
        let id = inbox.nextID
        inbox.nextID += 1
        inbox.condition.unlock()
        let bytes = LauncherMessage(launch: request, id: id).encoded()
        guard bytes.count <= LauncherMessage.maximumSize else {
            throw SystemError(.launch, "the request is larger than \(LauncherMessage.maximumSize) bytes")
        }
        let answer = try exchange(bytes, id: id, files: files, timeout: timeout)
        if let started = answer.pid { return started }
        throw SystemError(.launch, answer.refused ?? "the launcher gave no answer")
    }

    /// Asks the launcher to kill a program it started (one that floods its output, say); a
    /// program that already ended is left alone. Its end is reported as usual.
    public func stop(_ pid: Int32) {
        let bytes = LauncherMessage(stop: pid).encoded()
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, screentime_msg_nosignal()) }
    }

    /// Sends raw bytes as one message and returns the launcher's answer to it (tests send what the
    /// agent never would; such an answer carries no id).
    public func sendRaw(
        _ bytes: [UInt8], timeout: Duration = .seconds(10)
    ) throws(SystemError) -> (pid: Int32?, refused: String?) {
        try exchange(bytes, id: 0, files: [], timeout: timeout)
    }

    /// Waits up to `timeout` for the program `pid` to end; its status (128 + signal when a
    /// signal ended it), or nil if it still runs.
    public func waitForExit(of pid: Int32, timeout: Duration) throws(SystemError) -> Int32? {
        startReading()
        let deadline = ContinuousClock.now + timeout
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        while true {
            if let status = inbox.exits.removeValue(forKey: pid) { return status }
            if inbox.gone { throw SystemError(.launch, "the launcher is gone") }
            guard inbox.condition.wait(until: deadline) else { return inbox.exits.removeValue(forKey: pid) }
        }
    }

    private func exchange(
        _ bytes: [UInt8], id: UInt64, files: [Int32], timeout: Duration
    ) throws(SystemError) -> (pid: Int32?, refused: String?) {
        startReading()
        let sent = bytes.withUnsafeBytes { raw in
            files.withUnsafeBufferPointer {
                screentime_send_with_descriptors(
                    socket, raw.baseAddress, UInt(raw.count), $0.baseAddress, Int32($0.count))
            }
        }
        guard sent == bytes.count else { throw SystemError.call("send(launcher)", errno) }
        let deadline = ContinuousClock.now + timeout
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        while true {
            if let answer = inbox.answers.removeValue(forKey: id) { return answer }
            if inbox.gone { throw SystemError(.launch, "the launcher is gone") }
            guard inbox.condition.wait(until: deadline) else {
                throw SystemError(.timedOut, "the launcher did not answer in time")
            }
        }
    }

    /// The reader thread: until the launcher is gone.
    private static func read(_ socket: Int32, into inbox: Inbox) {
        while true {
            let message: LauncherMessage
            do throws(SystemError) {
                message = try receive(socket, until: nil)
            } catch {
                if error.code == .launch, error.message.hasPrefix("the launcher is gone") { break }
                continue  // a message it could not read: not one this agent sent for
            }
            inbox.condition.lock()
            if let exited = message.exited {
                // Ends nobody waits for (a session program's) are not kept without bound.
                if inbox.exits.count >= 4_096, let any = inbox.exits.keys.first { inbox.exits[any] = nil }
                inbox.exits[exited.pid] = exited.status
            }
            if message.started != nil || message.refused != nil {
                inbox.answers[message.id ?? 0] = (message.started, message.refused)
            }
            inbox.condition.broadcast()
            inbox.condition.unlock()
        }
        inbox.condition.lock()
        inbox.gone = true
        inbox.condition.broadcast()
        inbox.condition.unlock()
    }

    private static func receive(
        _ socket: Int32, until deadline: ContinuousClock.Instant?
    ) throws(SystemError)
        -> LauncherMessage
    {
        var buffer = [UInt8](repeating: 0, count: LauncherMessage.maximumSize)
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
                milliseconds = max(0, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
            }
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            let ready = try systemCall("poll(launcher)") { poll(&fds, 1, milliseconds) }
            guard ready > 0 else { throw SystemError(.timedOut, "the launcher did not answer in time") }
            let got = retryingInterrupts { buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) } }
            guard got > 0 else { throw SystemError(.launch, "the launcher is gone") }
            return try LauncherMessage.decode(Array(buffer[..<got]))
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
