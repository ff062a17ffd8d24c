import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import Synchronization

/// The reads of one process's evidence that the real-time thread must not make: what comes from
/// the process's memory or its files, which the child shapes.
struct JudgeJob: Sendable {
    struct Needs: OptionSet, Sendable {
        let rawValue: Int
        /// The command line, and the script or program an interpreter or the loader runs.
        static let script = Needs(rawValue: 1)
        /// The executable's hash (not cached for its file version).
        static let executableHash = Needs(rawValue: 2)
        /// `GIO_LAUNCHED_DESKTOP_FILE` of its environment.
        static let environment = Needs(rawValue: 4)
        /// `.flatpak-info` in its root (a sandbox or a chroot).
        static let sandbox = Needs(rawValue: 8)
        /// Whether its program is one a guardian installed (`denyAppInstallation`).
        static let installed = Needs(rawValue: 16)
    }

    var pid: Int32
    var owner: UInt32
    var startTime: UInt64
    var execSerial: UInt64
    var needs: Needs
    var kernel: KernelEvidence
    var isLoader: Bool
    /// Whether the process was held for this judgement (else it runs meanwhile, held only if
    /// the judgement runs past its deadline).
    var holding: Bool
    var batch: UInt64 = 0
}

/// What the judges read for a job.
struct JudgeReads: Sendable {
    var commandLine: [String]?
    var scriptPath: String?
    var scriptHash: String?
    var executableHash: String?
    var launchedDesktopFile: String?
    /// Whether its environment loads code of its own into the program (`LD_PRELOAD`, …).
    var loadsOwnCode: Bool?
    var mountNamespace: String?
    var runsForeignCode: Bool?
    var flatpakID: String?
    /// Set when `installed` was needed: nil when installed, else why not.
    var installRefusal: String?
}

/// A few threads that make `JudgeJob`s' reads, off every lock, with deadlines.
///
/// Jobs wait in a queue per authorized user and are taken in turn across users, at most
/// `perOwner` of one user's at once: a child who makes its own judgements slow (huge files,
/// reads that never come back) slows only its own. A job not done by its deadline is reported
/// `overdue` (its process is then held); a thread stuck in a read is left behind and replaced,
/// up to `maximumThreads`. Nothing here waits on a timer while there is nothing to wait for.
final class ProcessJudges: Sendable {
    typealias Read = @Sendable (JudgeJob) -> JudgeReads
    typealias Done = @Sendable (JudgeJob, JudgeReads) -> Void
    typealias Overdue = @Sendable (JudgeJob, _ stuck: Bool) -> Void

    static let deadline: Duration = .milliseconds(100)
    static let stuckAfter: Duration = .seconds(2)

    private struct Pending {
        var job: JudgeJob
        var submitted: ContinuousClock.Instant
        var started: ContinuousClock.Instant?
        var reportedOverdue = false
        var reportedStuck = false
    }

    private struct State {
        var queues: [UInt32: [Int]] = [:]
        var order: [UInt32] = []
        var jobs: [Int: Pending] = [:]
        var running: [UInt32: Int] = [:]
        var nextID = 0
        var threads = 0
        var idle = 0
        var stuck = 0
        var stopping = false
        var batches: [UInt64: Int] = [:]
        var nextBatch: UInt64 = 1
    }

    private let read: Read
    private let done: Done
    private let overdue: Overdue
    private let workers: Int
    private let maximumThreads: Int
    private let perOwner: Int
    private let state = Mutex(State())
    private let condition = Condition()
    private let timerCondition = Condition()
    private let batchCondition = Condition()

    init(
        workers: Int = 2, maximumThreads: Int = 8, perOwner: Int = 2, read: @escaping Read, done: @escaping Done,
        overdue: @escaping Overdue
    ) {
        self.workers = workers
        self.maximumThreads = maximumThreads
        self.perOwner = perOwner
        self.read = read
        self.done = done
        self.overdue = overdue
    }

    /// Starts the worker threads and the deadline thread.
    func start() {
        for _ in 0..<workers { spawn() }
        Threads.start("screentime.judgetimer") { [self] in watchDeadlines() }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        wake(condition, all: true)
        wake(timerCondition, all: true)
    }

    /// Signals a condition with its lock held: a waiter checks its predicate under that lock, so
    /// a signal given between its check and its wait would otherwise be lost.
    private func wake(_ condition: Condition, all: Bool = false) {
        condition.lock()
        if all { condition.broadcast() } else { condition.signal() }
        condition.unlock()
    }

    /// A batch to submit jobs in and wait for (a policy change waits for its judgements).
    func makeBatch() -> UInt64 {
        state.withLock { state in
            defer { state.nextBatch += 1 }
            state.batches[state.nextBatch] = 0
            return state.nextBatch
        }
    }

    /// Queues a job.
    func submit(_ job: JudgeJob) {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.jobs[id] = Pending(job: job, submitted: .now)
            if state.queues[job.owner] == nil { state.order.append(job.owner) }
            state.queues[job.owner, default: []].append(id)
            if job.batch != 0 { state.batches[job.batch, default: 0] += 1 }
        }
        wake(condition)
        wake(timerCondition)
    }

    /// Waits until every job of a batch is done, or the deadline passes; returns whether they were.
    func wait(for batch: UInt64, until deadline: ContinuousClock.Instant) -> Bool {
        batchCondition.lock()
        defer { batchCondition.unlock() }
        while true {
            let left = state.withLock { state in
                let count = state.batches[batch] ?? 0
                if count == 0 { state.batches[batch] = nil }
                return count
            }
            if left == 0 { return true }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                state.withLock { _ = $0.batches.removeValue(forKey: batch) }
                return false
            }
            batchCondition.wait(until: deadline)
        }
    }

    /// How many worker threads are stuck in reads that did not come back.
    var stuckThreads: Int { state.withLock { $0.stuck } }

    private func spawn() {
        state.withLock { $0.threads += 1 }
        Threads.start("screentime.judge") { [self] in work() }
    }

    /// The next job a worker may take: users in turn, none over its share.
    private func take(_ state: inout State) -> Int? {
        for _ in 0..<state.order.count {
            let owner = state.order.removeFirst()
            state.order.append(owner)
            guard state.running[owner, default: 0] < perOwner, var queue = state.queues[owner], !queue.isEmpty
            else { continue }
            let id = queue.removeFirst()
            state.queues[owner] = queue.isEmpty ? nil : queue
            if queue.isEmpty { state.order.removeAll { $0 == owner } }
            state.running[owner, default: 0] += 1
            state.jobs[id]?.started = .now
            return id
        }
        return nil
    }

    private func work() {
        while true {
            condition.lock()
            var taken: (Int, JudgeJob)?
            while taken == nil {
                let (stop, next) = state.withLock { state -> (Bool, (Int, JudgeJob)?) in
                    if state.stopping || state.threads - state.stuck > max(workers, 1) { return (true, nil) }
                    return (false, take(&state).flatMap { id in state.jobs[id].map { (id, $0.job) } })
                }
                if stop {
                    state.withLock { $0.threads -= 1 }
                    condition.unlock()
                    return
                }
                if let next {
                    taken = next
                } else {
                    condition.wait()
                }
            }
            condition.unlock()
            guard let (id, job) = taken else { continue }
            let reads = read(job)
            done(job, reads)
            let (wasStuck, batchDone) = state.withLock { state -> (Bool, Bool) in
                let pending = state.jobs.removeValue(forKey: id)
                state.running[job.owner, default: 1] -= 1
                if state.running[job.owner] == 0 { state.running[job.owner] = nil }
                if pending?.reportedStuck == true { state.stuck -= 1 }
                var batchDone = false
                if job.batch != 0, let count = state.batches[job.batch] {
                    state.batches[job.batch] = count - 1
                    batchDone = count - 1 == 0
                }
                return (pending?.reportedStuck ?? false, batchDone)
            }
            _ = wasStuck
            if batchDone { wake(batchCondition, all: true) }
        }
    }

    /// Sleeps until the earliest deadline of a job not done; reports it overdue (and a worker
    /// stuck past `stuckAfter`, replaced by a new one). Sleeps without a timeout when idle.
    private func watchDeadlines() {
        timerCondition.lock()
        defer { timerCondition.unlock() }
        while true {
            let now = ContinuousClock.now
            var fire: [(JudgeJob, Bool)] = []
            var replace = 0
            let (stopping, next) = state.withLock { state -> (Bool, ContinuousClock.Instant?) in
                if state.stopping { return (true, nil) }
                var earliest: ContinuousClock.Instant?
                for (id, pending) in state.jobs {
                    if !pending.reportedOverdue {
                        let due = pending.submitted + Self.deadline
                        if due <= now {
                            state.jobs[id]?.reportedOverdue = true
                            fire.append((pending.job, false))
                        } else {
                            earliest = min(earliest ?? due, due)
                        }
                    }
                    if let started = pending.started, !pending.reportedStuck {
                        let due = started + Self.stuckAfter
                        if due <= now {
                            state.jobs[id]?.reportedStuck = true
                            state.stuck += 1
                            fire.append((pending.job, true))
                            if state.threads < maximumThreads { replace += 1 }
                        } else {
                            earliest = min(earliest ?? due, due)
                        }
                    }
                }
                return (false, earliest)
            }
            if stopping { return }
            for _ in 0..<replace { spawn() }
            if !fire.isEmpty {
                // Told with the timer's lock let go: `overdue` takes the process shield's table,
                // whose holder may be submitting a job (which takes this lock): held across the
                // call, the two waited on each other for good (a child's exec storm did it).
                timerCondition.unlock()
                for (job, stuck) in fire { overdue(job, stuck) }
                timerCondition.lock()
                continue
            }
            if let next {
                timerCondition.wait(until: next)
            } else {
                timerCondition.wait()
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, for Foundation's APIs.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
