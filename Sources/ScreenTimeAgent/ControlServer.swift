import Foundation
import Glibc
import LinuxSupport
public import Logging
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// The control socket: a world-connectable Unix socket speaking ScreenTimeIPC.
///
/// Connections are few and short (a CLI call, a guardian app), so each gets a thread with blocking
/// reads, at most `maximumConnections` at once and `idleTimeout` seconds between requests. A bad
/// frame gets an error reply and the connection goes on: an oversized one is read and dropped
/// rather than buffered. The caller's identity comes from SO_PEERCRED alone.
public final class ControlServer: Service {
    public static let maximumConnections = 32
    public static let idleTimeout = 30

    private let path: String
    private let policy: PolicyService
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)

    public init(path: String, policy: PolicyService, logger: Logger) {
        self.path = path
        self.policy = policy
        self.logger = logger
    }

    public func run() async throws {
        let listener: UnixSocket
        let stop: StopSignal
        do {
            try Files.makeDirectory(
                String(path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")),
                mode: 0o755)
            listener = try UnixSocket.listen(at: path)
            stop = try StopSignal()
        } catch {
            throw AgentError(.socket, "cannot listen on \(path): \(error.message)")
        }
        logger.info("listening", metadata: ["socket": "\(path)"])
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    acceptLoop(listener, stop: stop)
                    done.resume()
                }
                thread.name = "screentime.control"
                thread.start()
            }
        } onGracefulShutdown: { [self] in
            stopping.store(true, ordering: .relaxed)
            stop.raise()
        }
        // Nobody listens any more: a stale socket file would only make clients wait on a refusal.
        unlink(path)
        logger.info("stopped listening", metadata: ["socket": "\(path)"])
    }

    /// Accepts until the agent stops; no timer wakes it in between.
    private func acceptLoop(_ listener: UnixSocket, stop: StopSignal) {
        while !stopping.load(ordering: .relaxed) {
            let connection: UnixSocket?
            do {
                connection = try listener.accept(unless: stop)
            } catch {
                logger.error("accept failed", metadata: ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 0.1)
                continue
            }
            guard let connection else { continue }
            if connections.wrappingAdd(1, ordering: .relaxed).newValue > Self.maximumConnections {
                connections.wrappingSubtract(1, ordering: .relaxed)
                try? connection.write(
                    Framing.frame(
                        ReplyCoding.encode(
                            ScreenTimeIPCError(.unavailable, "the agent is busy with other connections; try again"))))
                continue
            }
            let thread = Thread { [self] in
                serve(connection)
                connections.wrappingSubtract(1, ordering: .relaxed)
            }
            thread.name = "screentime.connection"
            thread.start()
        }
    }

    private func serve(_ connection: UnixSocket) {
        let peer: PeerCredentials
        do {
            peer = try connection.peerCredentials()
            try connection.setTimeout(seconds: Self.idleTimeout)
        } catch {
            logger.warning("dropped a connection", metadata: ["error": "\(error)"])
            return
        }
        while !stopping.load(ordering: .relaxed) {
            do {
                guard let header = try connection.read(exactly: 4) else { return }
                let length: Int
                do {
                    length = try Framing.payloadLength(header: header)
                } catch {
                    let announced = header.reduce(0) { $0 << 8 | Int($1) }
                    try discard(announced, from: connection)
                    try connection.write(Framing.frame(ReplyCoding.encode(error)))
                    continue
                }
                guard let payload = try connection.read(exactly: length) else { return }
                try connection.write(Framing.frame(policy.reply(to: payload, from: peer)))
            } catch {
                // The peer went away or stalled past the timeout: nothing to answer.
                return
            }
        }
    }

    /// Reads and drops an oversized message, so the next frame starts where it should.
    private func discard(_ count: Int, from connection: UnixSocket) throws(SystemError) {
        var remaining = count
        while remaining > 0 {
            let chunk = min(remaining, 1 << 16)
            guard try connection.read(exactly: chunk) != nil else { return }
            remaining -= chunk
        }
    }
}
