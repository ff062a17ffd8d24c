import FoundationEssentials
public import LinuxSupport
public import Logging
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// The control socket: a world-connectable Unix socket speaking ScreenTimeIPC.
///
/// Connections are few and short (a CLI call, a guardian app), so each gets a thread of its own.
/// Anyone may connect, so nobody may hold the agent: connections are counted per user (a user's
/// subordinate uids count as the user), a few slots are kept for guardians whatever others hold,
/// a frame must arrive whole within `frameDeadline` of its first byte (bytes trickled one at a
/// time do not reset it), a connection waits at most `idleTimeout` for its next frame, and a
/// reply that is not read in `frameDeadline` ends the connection. A caller turned away gets a
/// `busy` error. The caller's identity comes from `SO_PEERCRED` alone.
public final class ControlServer: Service {
    /// Connections at once, all callers together.
    public static let maximumConnections = 32
    /// Of those, kept for guardians: other callers together get the rest.
    public static let reservedForGuardians = 8
    /// Connections one non-guardian user (with its subordinate uids) may hold at once.
    public static let perUserLimit = 4
    public static let idleTimeout: Duration = .seconds(30)
    public static let frameDeadline: Duration = .seconds(10)
    /// Connections turned away are written down at most this often, with how many there were:
    /// anyone may connect, and a loop of connections would otherwise fill the disk with the same
    /// line (a child's flood wrote 4 MB in 5 s).
    public static let refusalLogInterval: Duration = .seconds(10)
    /// The heap's free pages go back to the kernel at most this often: giving them back takes
    /// every arena's lock for up to a millisecond (0.4–1.4 ms with 20,000 blocks live), so a
    /// loop of connections must not make the queue's readers wait on it.
    public static let trimInterval: Duration = .seconds(10)
    private let trimInterval: Duration

    /// Who a connecting process is, for counting: a guardian, or a user counted under a uid.
    public enum Admission: Sendable, Equatable {
        case guardian
        case user(principal: UInt32)
    }

    private let path: String
    private let router: ControlRouter
    private let admission: @Sendable (PeerCredentials) -> Admission
    private let logger: Logger
    /// Answers the frames of each connection, and of extensions' channels (the extension host).
    let serving: ConnectionServing
    private let counts = Mutex(Counts())
    /// How many times the heap's free pages were given back.
    let trims = Atomic<Int>(0)

    private struct Counts {
        var total = 0
        var others = 0
        var byUser: [UInt32: Int] = [:]
        var lastTrim: ContinuousClock.Instant?
    }

    public init(
        path: String, router: ControlRouter, admission: @escaping @Sendable (PeerCredentials) -> Admission,
        logger: Logger, trimInterval: Duration = ControlServer.trimInterval
    ) {
        self.trimInterval = trimInterval
        self.path = path
        self.router = router
        serving = ConnectionServing(router: router, logger: logger)
        self.admission = admission
        self.logger = logger
    }

    public func run() async throws {
        let listener: UnixSocket
        let stop: StopSignal
        do {
            let directory = String(
                path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/"))
            if !directory.isEmpty { try Files.makeDirectory(directory, mode: 0o755) }
            listener = try UnixSocket.listen(at: path)
            stop = try StopSignal()
        } catch {
            throw AgentError(.socket, "cannot listen on \(path): \(error.message)", cause: error)
        }
        logger.info("listening", metadata: ["socket": "\(path)"])
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Threads.start("screentime.control") { [self] in
                    acceptLoop(listener, stop: stop)
                    done.resume()
                }
            }
        } onGracefulShutdown: { [self] in
            serving.stopping.store(true, ordering: .relaxed)
            stop.raise()
        }
        // Nobody listens any more: a stale socket file would only make clients wait on a refusal.
        Files.remove(path)
        logger.info("stopped listening", metadata: ["socket": "\(path)"])
    }

    /// Accepts until the agent stops; no timer wakes it in between.
    private func acceptLoop(_ listener: UnixSocket, stop: StopSignal) {
        var refusals = RefusalLog()
        while !serving.stopping.load(ordering: .relaxed) {
            let connection: UnixSocket?
            do {
                connection = try listener.accept(unless: stop)
            } catch {
                logger.error("accept failed", metadata: ["error": "\(error)"])
                Threads.sleep(0.1)
                continue
            }
            guard let connection else { continue }
            let peer: PeerCredentials
            do {
                peer = try connection.peerCredentials()
            } catch {
                logger.warning("dropped a connection", metadata: ["error": "\(error)"])
                continue
            }
            let who = admission(peer)
            guard admit(who) else {
                refusals.note(peer.uid, logger: logger)
                let busy = ScreenTimeIPCError(
                    .busy,
                    who == .guardian
                        ? "the agent is busy with other connections; try again"
                        : "the agent is busy (you have \(Self.perUserLimit) connections open, or others fill it); try again"
                )
                try? connection.write(
                    Framing.frame(ReplyCoding.encode(busy)), until: .now + .milliseconds(100))
                continue
            }
            refusals.writeIfDue(logger: logger)
            let started = Threads.start("screentime.connection") { [self] in
                serving.serve(connection, peer: peer)
                release(who)
            }
            // No thread (the system's limit of them): the slot goes back, and the connection
            // closes with the caller's, unserved.
            if !started {
                release(who)
                logger.error("no thread could be started for a connection (the system's limit of threads)")
            }
        }
    }

    /// Takes a slot for a caller, if the limits allow.
    private func admit(_ who: Admission) -> Bool {
        counts.withLock { counts in
            guard counts.total < Self.maximumConnections else { return false }
            if case .user(let principal) = who {
                guard counts.others < Self.maximumConnections - Self.reservedForGuardians,
                    counts.byUser[principal, default: 0] < Self.perUserLimit
                else { return false }
                counts.others += 1
                counts.byUser[principal, default: 0] += 1
            }
            counts.total += 1
            return true
        }
    }

    /// Gives back a caller's slot. When it was the last connection open, the heap's free pages go
    /// back to the kernel (at most every `trimInterval`): a request (a report, a status)
    /// allocates far more than the agent keeps, and between requests the agent is idle for
    /// minutes.
    private func release(_ who: Admission) {
        let now = ContinuousClock.now
        let trim = counts.withLock { counts in
            counts.total -= 1
            if case .user(let principal) = who {
                counts.others -= 1
                counts.byUser[principal, default: 1] -= 1
                if counts.byUser[principal] == 0 { counts.byUser[principal] = nil }
            }
            guard counts.total == 0, counts.lastTrim.map({ now - $0 >= trimInterval }) ?? true else {
                return false
            }
            counts.lastTrim = now
            return true
        }
        if trim {
            Heap.returnFreePages()
            trims.add(1, ordering: .relaxed)
        }
    }
}

/// Reads frames from a connection: a 4-byte length and the message, whole within a deadline that
/// starts at its first byte, with any descriptors passed beside it.
struct FrameReader {
    enum Frame {
        case message([UInt8], files: [Int32])
        /// A frame that was read and dropped (oversized, empty): answered with this error.
        case refused(ScreenTimeIPCError)
    }

    let connection: UnixSocket
    private var buffered: [UInt8] = []
    private var files: [Int32] = []

    init(connection: UnixSocket) { self.connection = connection }

    /// The next frame; nil when the peer closed between frames. Throws `timedOut` when no frame
    /// starts within `idle`, or a started one is not whole within `whole`.
    mutating func next(idle: Duration, whole: Duration) throws(SystemError) -> Frame? {
        if buffered.isEmpty {
            guard try fill(until: .now + idle) else { return nil }
        }
        let deadline = ContinuousClock.now + whole
        while buffered.count < 4 {
            guard try fill(until: deadline) else { throw closedMidFrame }
        }
        let header = Array(buffered.prefix(4))
        let length: Int
        do {
            length = try Framing.payloadLength(header: header)
        } catch {
            // Drained, not kept: an oversized frame costs the agent no memory.
            let announced = header.reduce(0) { $0 << 8 | Int($1) }
            try discard(4 + announced, until: deadline)
            return .refused(error)
        }
        while buffered.count < 4 + length {
            guard try fill(until: deadline) else { throw closedMidFrame }
        }
        let payload = Array(buffered[4..<(4 + length)])
        buffered.removeFirst(4 + length)
        defer { files = [] }
        return .message(payload, files: files)
    }

    /// Closes descriptors received and not handed out.
    func closeFiles() { FileDescriptors.close(files) }

    private var closedMidFrame: SystemError {
        SystemError(.systemCall, "the peer closed in the middle of a frame")
    }

    /// Reads what is there; false at the end of the stream.
    private mutating func fill(until deadline: ContinuousClock.Instant) throws(SystemError) -> Bool {
        let (bytes, received) = try connection.receive(upTo: 65_536, until: deadline)
        // At most 16 descriptors belong to one frame; more are closed at once.
        for fd in received {
            if files.count < 16 { files.append(fd) } else { FileDescriptors.close([fd]) }
        }
        if bytes.isEmpty { return false }
        buffered += bytes
        return true
    }

    private mutating func discard(_ count: Int, until deadline: ContinuousClock.Instant) throws(SystemError) {
        var remaining = count
        while remaining > 0 {
            if buffered.isEmpty {
                guard try fill(until: deadline) else { throw closedMidFrame }
            }
            let dropped = min(remaining, buffered.count)
            buffered.removeFirst(dropped)
            remaining -= dropped
        }
        FileDescriptors.close(files)
        files = []
    }
}

/// The accept loop's record of connections turned away: the first is written down at once, then
/// at most one line every `ControlServer.refusalLogInterval`, saying how many were turned away
/// since the last line and whose they were. Those still unwritten when a flood ends are written
/// with the next connection, turned away or not, once the interval has passed (the loop has no
/// timer of its own). A line names at most `namedUIDs` uids: a child may connect as each of her
/// 65,536 subordinate uids.
struct RefusalLog {
    static let namedUIDs = 8
    private var lastWritten: ContinuousClock.Instant?
    private var unwritten = 0
    private var uids: Set<UInt32> = []
    private var othersUnnamed = false

    mutating func note(_ uid: UInt32, logger: Logger, now: ContinuousClock.Instant = .now) {
        unwritten += 1
        if uids.count < Self.namedUIDs { uids.insert(uid) } else if !uids.contains(uid) { othersUnnamed = true }
        writeIfDue(logger: logger, now: now)
    }

    mutating func writeIfDue(logger: Logger, now: ContinuousClock.Instant = .now) {
        guard unwritten > 0 else { return }
        if let lastWritten, now - lastWritten < ControlServer.refusalLogInterval { return }
        let named = uids.sorted().map(String.init).joined(separator: ",") + (othersUnnamed ? ",and others" : "")
        logger.notice("turned connections away: busy", metadata: ["count": "\(unwritten)", "uids": "\(named)"])
        lastWritten = now
        unwritten = 0
        uids = []
        othersUnnamed = false
    }
}
