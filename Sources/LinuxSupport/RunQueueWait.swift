import Glibc

/// What the scheduler tells of some threads: how long each has run, how long it was ready to run
/// and waited for a processor (`/proc/PID/task/TID/schedstat`, in nanoseconds), and whether it
/// is ready to run now (`R` in its `stat`).
///
/// A server that answers late because the machine is busy was ready and waited for its turn; one
/// that served another client alone (a grab) slept meanwhile, or worked for that client. A late
/// answer is taken as a grab only for the part of its lateness these waits do not explain.
public struct RunQueueWait: Sendable {
    /// The threads (a process's id and the thread's).
    public var threads: [(pid: Int32, tid: Int32)]
    let root: String

    public init(threads: [(pid: Int32, tid: Int32)], root: String = "/proc") {
        self.threads = threads
        self.root = root
    }

    public struct Thread: Sendable, Equatable {
        public var ran: Duration
        public var waited: Duration
        /// Ready to run (or running) when read.
        public var ready: Bool
    }

    /// One reading per thread, in order (a thread that cannot be read: all zero, not ready);
    /// whether each is ready is read only when `states`.
    public func sample(states: Bool = true) -> [Thread] {
        threads.map { thread in
            guard thread.tid > 0 else { return Thread(ran: .zero, waited: .zero, ready: false) }
            let base = "\(root)/\(thread.pid)/task/\(thread.tid)/"
            let figures = Self.contents(base + "schedstat").flatMap(Self.parseSchedstat)
            let state = states ? Self.contents(base + "stat").flatMap(Self.parseState) : nil
            return Thread(
                ran: .nanoseconds(figures?.ran ?? 0), waited: .nanoseconds(figures?.waited ?? 0),
                ready: state == UInt8(ascii: "R"))
        }
    }

    /// How long, between two samples, the threads together waited for a processor (as far as
    /// the kernel has counted: a wait still going on is counted once the thread runs).
    public static func waited(from before: [Thread], to after: [Thread]) -> Duration {
        zip(before, after).reduce(.zero) { sum, pair in sum + max(.zero, pair.1.waited - pair.0.waited) }
    }

    /// Whether a thread is ready to run now and ran for less than a quarter of `over` since
    /// `before`: it is kept waiting (or works so little that what it is asked waits for the
    /// processor, not for it).
    public static func starving(from before: [Thread], to after: [Thread], over: Duration) -> Bool {
        zip(before, after).contains { was, now in now.ready && now.ran - was.ran < over / 4 }
    }

    static func contents(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Array(buffer[..<count])
    }

    /// `on-cpu waiting timeslices\n`; nil for anything else.
    static func parseSchedstat(_ bytes: [UInt8]) -> (ran: Int64, waited: Int64)? {
        let fields = bytes.split(whereSeparator: { $0 == 0x20 || $0 == 0x0A })
        guard fields.count == 3, let ran = number(fields[0]), let waited = number(fields[1]), number(fields[2]) != nil
        else { return nil }
        return (ran, waited)
    }

    /// The state letter of a `stat` line: the field after the name, which ends at the last `)`
    /// (the name is the thread's to choose, parentheses and spaces too).
    static func parseState(_ bytes: [UInt8]) -> UInt8? {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")), close + 2 < bytes.count,
            bytes[close + 1] == 0x20
        else { return nil }
        return bytes[close + 2]
    }

    static func number(_ digits: some Collection<UInt8>) -> Int64? {
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            let (times, over1) = value.multipliedReportingOverflow(by: 10)
            let (sum, over2) = times.addingReportingOverflow(Int64(digit - 0x30))
            if over1 || over2 { return nil }
            value = sum
        }
        return value
    }
}
