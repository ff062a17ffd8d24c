import LinuxSupport
import Logging
import ScreenTimeIPC
import Synchronization

/// Answers a connection's frames through the router, one at a time, until its peer closes, stalls
/// past a deadline, or the agent stops: for the control socket's connections and for the channels
/// the agent hands the extensions it starts.
final class ConnectionServing: Sendable {
    let router: ControlRouter
    let logger: Logger
    /// Raised when the agent stops: every connection ends after its frame.
    let stopping = Atomic<Bool>(false)

    init(router: ControlRouter, logger: Logger) {
        self.router = router
        self.logger = logger
    }

    /// Serves a connection the agent handed an extension it started: every request on it is
    /// judged by `authority` alone (not counted against anyone's slots: the extension runs a few
    /// seconds, and its channel opens at most `ExtensionProcess.maximumConnections`).
    func serve(extension connection: UnixSocket, authority: ExtensionAuthority) {
        let agent = PeerCredentials.ofThisProcess
        serve(connection, peer: agent, authority: authority)
    }

    /// Answers frames until the peer closes, stalls, or the agent stops.
    func serve(_ connection: UnixSocket, peer: PeerCredentials, authority: ExtensionAuthority? = nil) {
        var reader = FrameReader(connection: connection)
        defer { reader.closeFiles() }
        while !stopping.load(ordering: .relaxed) {
            let reply: [UInt8]
            do {
                guard let frame = try reader.next(idle: ControlServer.idleTimeout, whole: ControlServer.frameDeadline)
                else { return }
                switch frame {
                case .message(let payload, let files):
                    defer { FileDescriptors.close(files) }
                    reply = router.reply(
                        to: payload, context: RequestContext(peer: peer, files: files, authority: authority))
                case .refused(let error):
                    reply = ReplyCoding.encode(error)
                }
            } catch {
                // The peer went away, or stalled past a deadline: nothing to answer.
                if error.code == .timedOut {
                    logger.debug("dropped a stalled connection", metadata: ["uid": "\(peer.uid)"])
                }
                return
            }
            do {
                try connection.write(Framing.frame(reply), until: .now + ControlServer.frameDeadline)
            } catch {
                return
            }
        }
    }
}
