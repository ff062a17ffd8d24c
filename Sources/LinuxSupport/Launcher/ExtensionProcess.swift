import CLinuxShim
import FoundationEssentials
import Glibc

/// One run of an extension through the launcher: its input written to its standard input, its
/// output and errors read (up to a limit; past it the program is stopped), and, if asked, a
/// channel on its descriptor 3 over which it opens connections to the agent — each datagram it
/// sends there is answered with one end of a new stream socket pair, whose other end the caller
/// serves. Nothing it sends is trusted; the caller judges the outcome.
public enum ExtensionProcess {
    public struct Outcome: Sendable {
        /// The exit status (128 + the signal that ended it); nil if its end was not seen.
        public var status: Int32?
        public var output: [UInt8]
        public var errors: [UInt8]
        /// It wrote more than the limit and was stopped.
        public var flooded: Bool
        /// It ran past its wall time and the launcher killed it.
        public var timedOut: Bool
        /// Connections it opened on its channel.
        public var connections: Int
        /// From the call to its end, and of that, until the launcher had started it.
        public var seconds: Double
        public var launchSeconds: Double
    }

    /// Connections one run may open on its channel.
    public static let maximumConnections = 32

    /// Runs `request` (its descriptors are set here: standard input, output, error, and 3 when
    /// `channel` is given) to its end. `connected` gets the agent's end of each connection opened
    /// on the channel, on this thread (start a thread to serve it). Throws only when it could
    /// not start.
    public static func run(
        _ request: LaunchRequest, launcher: LauncherClient, input: [UInt8], outputLimit: Int,
        channel connected: ((UnixSocket) -> Void)?
    ) throws(SystemError) -> Outcome {
        let started = ContinuousClock.now
        let pipes = try StandardPipes()
        var pair: [Int32] = [-1, -1]
        if connected != nil {
            do {
                try systemCall("socketpair") {
                    socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
                }
            } catch {
                pipes.closeChildEnds()
                pipes.closeParentEnds()
                throw error
            }
        }
        // The channel's agent end (the pipes' are the transfer's).
        let channel = pair[0]
        defer { if channel >= 0 { close(channel) } }
        var request = request
        var files = pipes.childEnds
        request.descriptors = [0, 1, 2]
        if pair[1] >= 0 {
            files.append(pair[1])
            request.descriptors.append(3)
        }
        let pid: Int32
        do {
            defer {
                pipes.closeChildEnds()
                if pair[1] >= 0 { close(pair[1]) }
            }
            pid = try launcher.launch(request, files: files)
        } catch {
            pipes.closeParentEnds()
            throw error
        }
        let launched = ContinuousClock.now
        if channel >= 0 { Pipe.setNonBlocking(channel) }
        var transfer = PipeTransfer(pipes, input: input, chunk: 16_384)
        var outcome = Outcome(
            status: nil, output: [], errors: [], flooded: false, timedOut: false, connections: 0, seconds: 0,
            launchSeconds: Self.seconds(launched - started))
        let wall = request.limits.wallSeconds ?? 10
        // The launcher kills it at its wall time, counted from its start (a launch slowed by a busy
        // machine takes none of it); past that and a margin it is asked again.
        let deadline = launched + .seconds(wall + 2)
        var stopped = false
        while outcome.status == nil {
            var fds = transfer.pollDescriptors + [pollfd(fd: channel, events: Int16(POLLIN), revents: 0)]
            guard retryingInterrupts({ poll(&fds, 4, transfer.outputsOpen ? 100 : 20) }) >= 0 else { break }
            transfer.transfer(fds, output: &outcome.output, errors: &outcome.errors)
            if outcome.output.count + outcome.errors.count > outputLimit, !stopped {
                outcome.flooded = true
                stopped = true
                launcher.stop(pid)
            }
            // What a flooding program still writes is not read: its pipes close with it.
            if outcome.flooded { transfer.closeOutputs() }
            if channel >= 0, fds[3].revents & Int16(POLLIN) != 0, let connected {
                answer(channel, &outcome, connected)
            }
            // Its outputs close when it and everything it started end (the kernel ends its pid
            // namespace with it); one that closed them early is waited for by its exit.
            if !transfer.outputsOpen {
                outcome.status = try? launcher.waitForExit(of: pid, timeout: .milliseconds(channel >= 0 ? 20 : 200))
            }
            if outcome.status == nil, ContinuousClock.now > deadline, !stopped {
                stopped = true
                launcher.stop(pid)
            }
            if outcome.status == nil, ContinuousClock.now > deadline + .seconds(5) { break }
        }
        outcome.seconds = Self.seconds(ContinuousClock.now - started)
        outcome.timedOut =
            !outcome.flooded && outcome.status == 128 + SIGKILL
            && outcome.seconds - outcome.launchSeconds >= Double(wall) - 0.5
        return outcome
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// A datagram on the channel asks for a connection: one end of a new pair goes back with the
    /// answer, the other to `connected`.
    private static func answer(_ channel: Int32, _ outcome: inout Outcome, _ connected: (UnixSocket) -> Void) {
        var request = [UInt8](repeating: 0, count: 64)
        let got = recv(channel, &request, request.count, Int32(MSG_DONTWAIT))
        guard got >= 0 else { return }
        guard outcome.connections < maximumConnections else {
            // No descriptor: the client sees the agent refuse.
            let refusal: [UInt8] = Array("no".utf8)
            _ = refusal.withUnsafeBytes { send(channel, $0.baseAddress, $0.count, screentime_msg_nosignal()) }
            return
        }
        var stream: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &stream) == 0 else {
            return
        }
        outcome.connections += 1
        let reply: [UInt8] = Array("ok".utf8)
        let sent = reply.withUnsafeBytes { bytes in
            [stream[1]].withUnsafeBufferPointer {
                screentime_send_with_descriptors(channel, bytes.baseAddress, UInt(bytes.count), $0.baseAddress, 1)
            }
        }
        close(stream[1])
        guard sent > 0 else {
            close(stream[0])
            return
        }
        connected(UnixSocket(adopting: stream[0], name: "an extension's connection"))
    }
}
