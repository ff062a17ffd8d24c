import Glibc
import ScreenTimeCore

/// What the scheduler tells of some threads: how long each has run, how long it was ready to run
/// and waited for a processor (`/proc/PID/task/TID/schedstat`, in nanoseconds), and whether it
/// is ready to run now (`R` in its `stat`).
///
/// A server that answers late because the machine is busy was ready and waited for its turn; one
/// that served another client alone (a grab) slept meanwhile, or worked for that client. A late
/// answer is taken as a grab only for the part of its lateness these waits do not explain.
public struct RunQueueWait: Sendable {
    /// The threads (a process's id and the thread's); `others`: another user's (a server the
    /// child runs), whose wait is believed only while it is scheduled as its system started it.
    public var threads: [(pid: Int32, tid: Int32, others: Bool)]
    let root: String
    let cgroupRoot: String
    let online: Int

    public init(
        threads: [(pid: Int32, tid: Int32, others: Bool)], root: String = "/proc",
        cgroupRoot: String = FreezerCgroup.systemHierarchy(.v2) ?? "/sys/fs/cgroup",
        online: Int = RunQueueWait.ownProcessors()
    ) {
        self.threads = threads
        self.root = root
        self.cgroupRoot = cgroupRoot
        self.online = online
    }

    /// How many processors the calling thread may run on (the machine's, unless the agent itself
    /// was confined: a container's cpuset confines the server alike).
    public static func ownProcessors() -> Int {
        allowedProcessors(contents("/proc/thread-self/status", limit: 4096)) ?? 1
    }

    /// The count of `Cpus_allowed_list` in a `status` file.
    static func allowedProcessors(_ status: [UInt8]?) -> Int? {
        guard let status else { return nil }
        let key = "Cpus_allowed_list:"
        return String(decoding: status, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(key) }
            .flatMap { countCPUs(String($0.dropFirst(key.count))) }
    }

    public struct Thread: Sendable, Equatable {
        public var ran: Duration
        public var waited: Duration
        /// Ready to run (or running) when read.
        public var ready: Bool
        /// Its owner made it wait on purpose (see `slowedOnPurpose`): its wait explains nothing.
        public var slowed = false
    }

    /// One reading per thread, in order (a thread that cannot be read: all zero, not ready);
    /// whether each is ready is read only when `states`, and whether another user's thread was
    /// slowed on purpose only when `settings` (a late answer is judged: not for every request).
    public func sample(states: Bool = true, settings: Bool = false) -> [Thread] {
        threads.map { thread in
            guard thread.tid > 0 else { return Thread(ran: .zero, waited: .zero, ready: false) }
            let base = "\(root)/\(thread.pid)/task/\(thread.tid)/"
            let figures = Self.contents(base + "schedstat").flatMap(Self.parseSchedstat)
            let state = states ? Self.contents(base + "stat").flatMap(Self.parseState) : nil
            return Thread(
                ran: .nanoseconds(figures?.ran ?? 0), waited: .nanoseconds(figures?.waited ?? 0),
                ready: state == UInt8(ascii: "R"),
                slowed: settings && thread.others && slowedOnPurpose(pid: thread.pid, tid: thread.tid))
        }
    }

    /// How long, between two samples, the threads together waited for a processor (as far as
    /// the kernel has counted: a wait still going on is counted once the thread runs); a thread
    /// slowed on purpose adds nothing.
    public static func waited(from before: [Thread], to after: [Thread]) -> Duration {
        zip(before, after).reduce(.zero) { sum, pair in
            pair.1.slowed ? sum : sum + max(.zero, pair.1.waited - pair.0.waited)
        }
    }

    /// Whether a thread is ready to run now and ran for less than a quarter of `over` since
    /// `before`: it is kept waiting (or works so little that what it is asked waits for the
    /// processor, not for it). Not a thread slowed on purpose.
    public static func starving(from before: [Thread], to after: [Thread], over: Duration) -> Bool {
        zip(before, after).contains { was, now in !now.slowed && now.ready && now.ran - was.ran < over / 4 }
    }

    /// Whether the thread's owner made it wait for a processor on purpose, as a child does to
    /// pass a grab of her server off as a busy machine: a nice above 0 (the thread's, or its
    /// session's autogroup's), the batch or idle policy, fewer processors allowed than the
    /// machine has online (an affinity or a cpuset), or a control group of a user's above it (a
    /// delegated one, whose share and limits its owner sets). Unreadable counts as slowed. The
    /// processors allowed are compared with the agent's own (`online`).
    public func slowedOnPurpose(pid: Int32, tid: Int32) -> Bool {
        let base = "\(root)/\(pid)/task/\(tid)/"
        guard let schedule = Self.contents(base + "stat").flatMap(Self.parseSchedule), schedule.nice <= 0,
            schedule.policy != 3, schedule.policy != 5,
            let allowed = Self.allowedProcessors(Self.contents(base + "status", limit: 4096)), allowed >= online
        else { return true }
        if let group = Self.contents("\(root)/\(pid)/autogroup").map({ String(decoding: $0, as: UTF8.self) }),
            let nice = group.split(separator: " ").last.flatMap({
                Int($0.trimmingWhitespace())
            }),
            nice > 0
        {
            return true
        }
        if let cgroups = Self.contents(base + "cgroup", limit: 4096).map({ String(decoding: $0, as: UTF8.self) }),
            let line = cgroups.split(separator: "\n").first(where: { $0.hasPrefix("0::/") })
        {
            var path = ""
            for part in line.dropFirst(3).split(separator: "/") {
                guard part != "..", part != "." else { return true }
                path += "/" + part
                var status = stat()
                guard stat(cgroupRoot + path, &status) == 0 else { return true }
                if status.st_uid != 0 { return true }
            }
        }
        return false
    }

    static func contents(_ path: String, limit: Int = 1024) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: limit)
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

    /// How long the machine's processors have sat idle in all (idle and iowait of the first line
    /// of `/proc/stat`); nil when it cannot be read.
    public func idleTime() -> Duration? {
        guard let line = Self.contents("\(root)/stat", limit: 512)?.split(separator: 0x0A).first else { return nil }
        let fields = line.split(separator: 0x20)
        guard fields.count > 5, fields[0].elementsEqual("cpu".utf8), let idle = Self.number(fields[4]),
            let iowait = Self.number(fields[5])
        else { return nil }
        let ticks = max(1, sysconf(Int32(_SC_CLK_TCK)))
        return .milliseconds((idle + iowait) * 1000 / Int64(ticks))
    }

    /// What was seen of a wait while it lasted: whether another user's thread was slowed on
    /// purpose at any look, and how long the processors sat idle from the first look on.
    public struct Probe: Sendable, Equatable {
        public var slowed = false
        public var idleFrom: (at: ContinuousClock.Instant, idle: Duration)?

        public init() {}

        public static func == (a: Probe, b: Probe) -> Bool {
            a.slowed == b.slowed && a.idleFrom?.at == b.idleFrom?.at && a.idleFrom?.idle == b.idleFrom?.idle
        }

        /// Whether the threads' waits for a processor may explain the wait: nothing was slowed on
        /// purpose, and no processor sat idle for a quarter of the time since the first look (a
        /// thread waits while a processor is idle only when it may not run there: pinned, or its
        /// share cut; the scheduler moves waiting work to an idle processor within milliseconds).
        public func excuses(idleNow: Duration?, at now: ContinuousClock.Instant = .now) -> Bool {
            guard !slowed else { return false }
            guard let from = idleFrom, let idleNow, now - from.at >= .milliseconds(50) else { return true }
            return (idleNow - from.idle) < (now - from.at) / 4
        }
    }

    /// The nice value (field 19) and the scheduling policy (field 41) of a `stat` line, counted
    /// after the name's last `)`.
    static func parseSchedule(_ bytes: [UInt8]) -> (nice: Int64, policy: Int64)? {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)...].split(whereSeparator: { $0 == 0x20 || $0 == 0x0A })
        // fields[0] is field 3 (the state).
        guard fields.count > 38, let policy = number(fields[38]) else { return nil }
        let field = fields[16]
        let nice = field.first == UInt8(ascii: "-") ? number(field.dropFirst()).map { -$0 } : number(field)
        return nice.map { ($0, policy) }
    }

    /// How many processors a list names (`0-3,6,8-9`); nil for anything else.
    static func countCPUs(_ list: String) -> Int? {
        var count = 0
        for range in list.trimmingWhitespace().split(separator: ",") {
            let ends = range.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(ends.count), let low = number(ends[0].utf8), let high = number(ends.last!.utf8),
                low <= high, high < 1 << 16
            else { return nil }
            count += Int(high - low + 1)
        }
        return count > 0 ? count : nil
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
