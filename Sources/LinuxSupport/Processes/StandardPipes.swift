import CLinuxShim
import Glibc

/// A pipe whose ends close on exec.
struct Pipe {
    let reading: Int32
    let writing: Int32

    init() throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        _ = try systemCall("pipe2") { screentime_pipe(&ends) }
        reading = ends[0]
        writing = ends[1]
    }

    func closeBoth() {
        Glibc.close(reading)
        Glibc.close(writing)
    }

    /// Makes reads and writes on `fd` return at once rather than wait (EAGAIN).
    static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
}

/// The pipes of a child's standard input, output and error, made together (none, if one cannot
/// be): the child's ends go to it, the parent keeps the others.
struct StandardPipes {
    let input: Pipe
    let output: Pipe
    let errors: Pipe

    init() throws(SystemError) {
        var made: [Pipe] = []
        do {
            for _ in 0..<3 { made.append(try Pipe()) }
        } catch {
            for pipe in made { pipe.closeBoth() }
            throw error
        }
        (input, output, errors) = (made[0], made[1], made[2])
    }

    /// The child's standard input, output and error, in that order.
    var childEnds: [Int32] { [input.reading, output.writing, errors.writing] }

    /// Once the child has its ends: the parent's copies go, so that writing to the child fails
    /// when it ends and reading from it ends.
    func closeChildEnds() { for fd in childEnds { Glibc.close(fd) } }

    /// The parent's ends: where it writes the child's input, and reads its output and errors.
    var parentEnds: [Int32] { [input.writing, output.reading, errors.reading] }

    /// The parent's ends, when the child could not be started.
    func closeParentEnds() { for fd in parentEnds { Glibc.close(fd) } }
}

/// A running child's input written and its output and errors read, each as it is ready, so that
/// no pipe fills up while another is waited on: the caller polls `pollDescriptors` (with any of
/// its own after them) and hands the result to `transfer`. Each end is closed when done with
/// (the input once written, an output at its end); a closed end is -1 and polls as nothing.
struct PipeTransfer: ~Copyable {
    /// The parent's ends: the child's input, output, errors.
    private var ends: [Int32]
    private let input: [UInt8]
    private var written = 0
    private let chunk: Int

    /// Takes over the parent's ends of `pipes` (the child's must be closed by then); reads are
    /// up to `chunk` bytes.
    init(_ pipes: StandardPipes, input: [UInt8], chunk: Int = 4096) {
        ends = pipes.parentEnds
        self.input = input
        self.chunk = chunk
        // A write never waits: the child may not read until its output is read.
        Pipe.setNonBlocking(ends[0])
        if input.isEmpty { close(0) }
    }

    deinit { for fd in ends where fd >= 0 { Glibc.close(fd) } }

    /// What to poll: the input for writing, the output and errors for reading.
    var pollDescriptors: [pollfd] {
        [
            pollfd(fd: ends[0], events: Int16(POLLOUT), revents: 0),
            pollfd(fd: ends[1], events: Int16(POLLIN), revents: 0),
            pollfd(fd: ends[2], events: Int16(POLLIN), revents: 0),
        ]
    }

    /// Whether anything is left to write or read.
    var isOpen: Bool { ends.contains { $0 >= 0 } }

    /// Whether the child's output or errors are still open.
    var outputsOpen: Bool { ends[1] >= 0 || ends[2] >= 0 }

    /// Writes and reads what a poll of `pollDescriptors` found ready (its first three entries);
    /// what was read is added to `output` and `errors`.
    mutating func transfer(_ ready: [pollfd], output: inout [UInt8], errors: inout [UInt8]) {
        if ends[0] >= 0, ready[0].revents != 0 {
            let count = retryingInterrupts {
                input[written...].withUnsafeBytes { Glibc.write(ends[0], $0.baseAddress, $0.count) }
            }
            if count > 0 { written += count }
            if count < 0 && errno != EAGAIN || written == input.count { close(0) }
        }
        for index in 1...2 where ends[index] >= 0 && ready[index].revents != 0 {
            var buffer = [UInt8](repeating: 0, count: chunk)
            let count = retryingInterrupts { read(ends[index], &buffer, buffer.count) }
            if count > 0 {
                if index == 1 { output += buffer[..<count] } else { errors += buffer[..<count] }
            } else if count == 0 || errno != EAGAIN {
                close(index)
            }
        }
    }

    /// Stops reading the output and errors (what the child still writes is lost).
    mutating func closeOutputs() {
        close(1)
        close(2)
    }

    private mutating func close(_ index: Int) {
        if ends[index] >= 0 { Glibc.close(ends[index]) }
        ends[index] = -1
    }
}
