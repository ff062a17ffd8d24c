import CLinuxShim
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// A program the launcher started (the shield window, a focus relay) with its standard input,
/// output and error on pipes of the agent's.
///
/// What it is told goes in as lines written without waiting: a program that stopped reading (the
/// child stopped it) cannot hold the agent, a full pipe drops the line. What it says is read a line
/// at a time by one thread, the reader; what it says on standard error is collected (4 KiB at
/// most) on a thread of its own and handed to `errorOutput` when it closes. The reader ends it with
/// `close()`; a line told after that goes nowhere, and never to a descriptor reused since.
public final class SessionProgram: Sendable {
    /// What `readLine` found.
    public enum Reading: Sendable, Equatable {
        case line([UInt8])
        /// Nothing within the time given.
        case quiet
        /// Its output ended (it did), failed, or went on past the line limit without a newline.
        case ended
    }

    public let pid: Int32
    private let input: Mutex<Int32>
    private let output: Int32
    private let pending = Mutex<[UInt8]>([])
    private let closed = Atomic<Bool>(false)
    /// Held while the output is closed, and while another thread looks at it (`hasEnded`): the
    /// descriptor is never looked at after it was closed and its number reused.
    private let closing = Mutex(())

    private init(pid: Int32, input: Int32, output: Int32) {
        self.pid = pid
        self.input = Mutex(input)
        self.output = output
    }

    /// Starts `request` through the launcher, its descriptors 0, 1 and 2 on new pipes.
    /// `errorOutput` gets what it said on standard error once that closes (not called when empty).
    public static func start(
        _ request: LaunchRequest, through launcher: LauncherClient,
        errorOutput: @escaping @Sendable ([UInt8]) -> Void
    ) throws(SystemError) -> SessionProgram {
        guard request.descriptors == [0, 1, 2] else {
            throw SystemError(.launch, "a session program is given descriptors 0, 1 and 2")
        }
        let pipes = try StandardPipes()
        let pid: Int32
        do {
            // The program's ends are its alone: when it ends, writing to it fails at once and
            // reading from it ends.
            defer { pipes.closeChildEnds() }
            pid = try launcher.launch(request, files: pipes.childEnds)
        } catch {
            pipes.closeParentEnds()
            throw error
        }
        let (input, output, errors) = (pipes.input, pipes.output, pipes.errors)
        let reading = errors.reading
        Threads.start("screentime.err") {
            var said: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 2048)
            while true {
                let got = retryingInterrupts { Glibc.read(reading, &chunk, chunk.count) }
                if got <= 0 { break }
                if said.count < 4096 { said += chunk[..<got] }
            }
            Glibc.close(reading)
            if !said.isEmpty { errorOutput(said) }
        }
        // Lines are written without waiting.
        Pipe.setNonBlocking(input.writing)
        return SessionProgram(pid: pid, input: input.writing, output: output.reading)
    }

    /// Writes `line` and a newline without waiting; whether all of it went in.
    @discardableResult
    public func tell(_ line: [UInt8]) -> Bool {
        var bytes = line
        bytes.append(10)
        return input.withLock { fd in
            guard fd >= 0 else { return false }
            let written = retryingInterrupts { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
            return written == bytes.count
        }
    }

    /// The next line it says (without its newline), waiting up to `timeout` (nil: until one comes or
    /// its output ends). A line over `limit` bytes ends the reading. For the reader only.
    public func readLine(limit: Int = 65_536, timeout: Duration? = nil) -> Reading {
        var buffer = pending.withLock { pending in
            defer { pending = [] }
            return pending
        }
        defer { pending.withLock { $0 = buffer } }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return .line(line)
            }
            if buffer.count > limit || closed.load(ordering: .acquiring) { return .ended }
            if let timeout {
                var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
                let ready = retryingInterrupts { poll(&poller, 1, Int32(clamping: timeout.milliseconds)) }
                if ready < 0 { return .ended }
                if ready == 0 { return .quiet }
            }
            let got = retryingInterrupts { Glibc.read(output, &chunk, chunk.count) }
            guard got > 0 else { return .ended }
            buffer += chunk[..<got]
        }
    }

    /// Reads and drops what it says until its output ends. For the reader only.
    public func drain() {
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            if retryingInterrupts({ Glibc.read(output, &chunk, chunk.count) }) <= 0 { return }
        }
    }

    /// Closes its input (it reads the end of it), from any thread.
    public func endInput() {
        input.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }

    /// Closes the agent's ends (once). For the reader, when it is done.
    public func close() {
        closing.withLock { _ in
            guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            endInput()
            Glibc.close(output)
        }
    }

    /// Whether its output has ended (it died, or closed it), seen from any thread without
    /// reading or waiting: before its reader got to the end, a program killed a moment ago has.
    public var hasEnded: Bool {
        closing.withLock { _ in
            if closed.load(ordering: .acquiring) { return true }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            return retryingInterrupts { poll(&poller, 1, 0) } == 1 && poller.revents & Int16(POLLHUP) != 0
        }
    }
}
