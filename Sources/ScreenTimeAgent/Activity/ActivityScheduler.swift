package import FoundationEssentials
import LinuxSupport
package import Logging
import ScreenTimeCore
import ServiceLifecycle
import Synchronization

/// Runs every client's monitors: wakes at their boundaries only — an interval's start or end, a
/// warning's moment, the earliest moment a threshold could be reached while the user has
/// something in front — and when the wall clock is set, the time zone changes, a monitor changes
/// or the user's usage starts; never on a period.
///
/// At each wake every monitor's progress is moved to now (`ActivityProgress`), and what that made
/// owed is written with the new progress in one transaction before anything runs it; the
/// extension host then runs each owed callback and deletes it. So kill -9 never makes a callback
/// owed twice, and one owed but not yet run is run after the restart. After the agent was down (or
/// the PC asleep) across a boundary, the first wake catches up: an interval that ended gets its
/// end, one in progress its start.
package final class ActivityScheduler: Service, PolicyConsumer, Sendable {
    struct Entry: Sendable {
        var monitor: Monitor
        var progress: ActivityProgress
    }

    struct State: Sendable {
        var entries: [Monitor.Key: Entry] = [:]
        var nextWake: Date?
        /// Wakes since start, and why the last one happened (for the benchmark and `status`).
        var wakes = 0
        var lastReason = "start"
        /// Bumped by every change; `stepped` is the latest one a step saw.
        var generation = 0
        var stepped = -1
        var problem: String?
        var unreadable: [String] = []
        /// When the first grant of more time in force ends: the policy is published again then.
        var grantsEnd: Date?
        /// Whether the loop runs (`run()`): a change made while it does not (before the agent's
        /// services start, after they stop, an agent in a test that serves nothing) is stepped
        /// by the one who made it, not waited on.
        var looping = false
    }

    private let database: StateDatabase
    private let logger: Logger
    private let state = Mutex(State())
    /// Held by a step and by a change of the monitors: a step never writes progress computed
    /// from a monitor that was replaced meanwhile.
    private let serial = Mutex(())
    private let stepDone = Condition()
    private let timer: WallClockTimer?
    private let stop: StopSignal?
    /// The users' foreground time, and whether they have something in front (the usage tracker;
    /// none in tests: no time counted, something always in front).
    let usage: (any UsageQueries)?
    /// Users who came to have something in front (the usage tracker tells): a threshold can come
    /// only while something is.
    private let usersInFrontGained: AsyncStream<Set<UInt32>>?
    /// The agent's own reactions to its built-in monitors (none in tests: their callbacks are
    /// only recorded).
    private let reactions: (any BuiltInReactions)?
    /// Where the callbacks owed to extension programs go (the extension host runs them).
    private let programCallbacks: (any ProgramCallbackSink)?
    /// Publishes the policy again when a grant of more time ends (none in tests).
    private let publisher: PolicyPublisher?
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - usage: the users' foreground time (none: no time counted, something always in front).
    ///   - usersInFrontGained: users who came to have something in front (the usage tracker's).
    ///   - publisher: published again when a grant of more time ends.
    ///   - reactions: the built-in monitors' reactions, run in the step that made them owed.
    ///   - programCallbacks: where callbacks owed to extension programs are handed over.
    package init(
        database: StateDatabase, usage: (any UsageQueries)?, usersInFrontGained: AsyncStream<Set<UInt32>>?,
        publisher: PolicyPublisher?, reactions: (any BuiltInReactions)?,
        programCallbacks: (any ProgramCallbackSink)?, logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.database = database
        self.reactions = reactions
        self.programCallbacks = programCallbacks
        self.usage = usage
        self.usersInFrontGained = usersInFrontGained
        self.publisher = publisher
        self.logger = logger
        self.now = now
        do {
            timer = try WallClockTimer()
        } catch {
            logger.error(
                "no wall-clock timer: schedules are checked only when something changes",
                metadata: ["error": "\(error.message)"])
            timer = nil
        }
        stop = try? StopSignal()
        reload()
    }

    /// The system's calendar, in the system's time zone as it is now.
    static func systemCalendar() -> ZonedCalendar { .current() }

    // MARK: running

    package func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            if let usersInFrontGained {
                group.addTask { [self] in
                    for await users in usersInFrontGained { usageStarted(users) }
                }
            }
            group.addTask { [self] in await runLoop() }
            // The loop ends when the agent stops; so does the rest.
            await group.next()
            group.cancelAll()
        }
    }

    private func runLoop() async {
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Threads.start("screentime.time") { [self] in
                    loop()
                    done.resume()
                }
            }
        } onGracefulShutdown: { [self] in
            stop?.raise()
            timer?.wake()
        }
    }

    private func loop() {
        state.withLock { $0.looping = true }
        defer { state.withLock { $0.looping = false } }
        // Callbacks owed when the agent stopped are run first.
        if let owed = try? database.owedCallbacks(), !owed.isEmpty {
            logger.info("running callbacks owed since before the restart", metadata: ["count": "\(owed.count)"])
            hand(owed)
        }
        while stop?.isRaised != true {
            step()
            guard let timer else {
                stop?.wait(for: .seconds(3600))
                continue
            }
            let deadline = state.withLock { $0.nextWake }
            let wake: WallClockTimer.Wake
            do {
                wake = try timer.wait(until: deadline, unless: stop)
            } catch {
                logger.error("the scheduler's timer failed", metadata: ["error": "\(error.message)"])
                stop?.wait(for: .seconds(1))
                continue
            }
            if wake == .zoneChanged {
                // (The calendar reads the zone at each use: nothing to reset.)
                logger.notice("the time zone changed", metadata: ["zone": "\(ZoneInfo.current().identifier)"])
            }
            if wake == .clockChanged { logger.notice("the wall clock was set", metadata: ["now": "\(now())"]) }
            state.withLock { state in
                state.wakes += 1
                state.lastReason = "\(wake)"
            }
        }
    }

    /// Moves every monitor to now: writes what became owed, hands it over, and sets the next wake.
    /// The agent's own reactions are applied before the step counts as done (`change` waits for
    /// that), extension programs after.
    func step() {
        let (owed, generation) = serial.withLock { _ in advanceAll() }
        if !owed.isEmpty { hand(owed) }
        let grantEnded = state.withLock { state in state.grantsEnd.map { $0 <= now() } ?? false }
        if grantEnded {
            state.withLock { $0.grantsEnd = nil }
            logger.info("granted time ended: the shields it lifted are back")
            publisher?.publish()
        }
        stepDone.lock()
        state.withLock { $0.stepped = max($0.stepped, generation) }
        stepDone.broadcast()
        stepDone.unlock()
    }

    private func advanceAll() -> (owed: [OwedCallback], generation: Int) {
        let (entries, generation) = state.withLock { (Array($0.entries.values), $0.generation) }
        let now = now()
        let calendar = Self.systemCalendar()
        var changes: [(key: Monitor.Key, progress: ActivityProgress, owed: [ActivityCallback])] = []
        var nextWake: Date?
        for entry in entries {
            let activity = Self.counted(entry.monitor, among: entries)
            var ledger: UsageLedger?
            if !activity.events.isEmpty, let interval = activity.currentOrNextInterval(at: now, calendar: calendar),
                interval.start <= now
            {
                ledger = usage?.ledger(uid: entry.monitor.uid, during: interval) ?? UsageLedger()
            }
            var progress = entry.progress
            let due = progress.advance(activity, now: now, calendar: calendar, ledger: ledger)
            if !due.isEmpty || progress != entry.progress {
                changes.append((entry.monitor.key, progress, due))
            }
            let busy = usage?.isInFront(uid: entry.monitor.uid) ?? true
            if let wake = progress.nextWake(activity, now: now, calendar: calendar, ledger: ledger, inUse: busy) {
                nextWake = min(nextWake ?? wake, wake)
            }
        }
        var owed: [OwedCallback] = []
        do {
            owed = try database.advance(changes)
            state.withLock { state in
                for change in changes { state.entries[change.key]?.progress = change.progress }
                state.problem = nil
            }
        } catch {
            // Nothing is owed until it is written: tried again shortly.
            logger.error("cannot write the monitors' progress", metadata: ["error": "\(error)"])
            state.withLock { $0.problem = "cannot write the monitors' progress: \(error)" }
            nextWake = now.addingTimeInterval(5)
        }
        for callback in owed {
            logger.info(
                "\(callback.callback.callback.rawValue)",
                metadata: [
                    "monitor": "\(callback.key)", "event": "\(callback.callback.event?.rawValue ?? "")",
                    "interval": "\(callback.callback.interval.start)–\(callback.callback.interval.end)",
                ])
        }
        state.withLock { state in
            if let end = state.grantsEnd { nextWake = min(nextWake ?? end, end) }
            state.nextWake = nextWake
        }
        return (owed, generation)
    }

    // MARK: changes

    /// Changes the monitors (`body` writes them), reads them again, and waits up to `wait` for
    /// the scheduler to have moved them to now: when `monitor start` answers, a callback already
    /// due is owed.
    func change<T>(wait: Duration = .seconds(5), _ body: () throws -> T) throws -> T {
        let result = try serial.withLock { _ in
            let result = try body()
            reload()
            return result
        }
        changed(wait: wait)
        return result
    }

    private func changed(wait: Duration) {
        let (generation, looping) = state.withLock { state in
            state.generation += 1
            return (state.generation, state.looping)
        }
        timer?.wake()
        guard timer != nil, looping else {
            step()
            return
        }
        let deadline = ContinuousClock.now + wait
        stepDone.lock()
        defer { stepDone.unlock() }
        while state.withLock({ $0.stepped < generation }) {
            guard stepDone.wait(until: deadline) else { return }
        }
    }

    /// The user's usage started: a threshold may come sooner than the scheduler planned.
    func usageStarted(_ users: Set<UInt32>) {
        let watched = state.withLock { state in
            state.entries.values.contains { users.contains($0.monitor.uid) && !$0.monitor.activity.events.isEmpty }
        }
        if watched { timer?.wake() }
    }

    package func apply(_ snapshot: PolicySnapshot) {
        let grantsEnd = snapshot.users.values.compactMap(\.grantsEnd).min()
        let earlier = state.withLock { state in
            defer { state.grantsEnd = grantsEnd }
            return grantsEnd != state.grantsEnd
        }
        if earlier { timer?.wake() }
        // A revocation deleted the user's monitors: read what is left.
        let users = Set(snapshot.users.keys)
        let stale = state.withLock { state in state.entries.keys.contains { !users.contains($0.uid) } }
        if stale {
            serial.withLock { _ in reload() }
            timer?.wake()
        }
    }

    private func reload() {
        do {
            let (monitors, unreadable) = try database.monitors()
            if !unreadable.isEmpty {
                logger.error("monitors that cannot be read are left alone", metadata: ["monitors": "\(unreadable)"])
            }
            state.withLock { state in
                state.entries = Dictionary(
                    monitors.map { ($0.0.key, Entry(monitor: $0.0, progress: $0.1)) }, uniquingKeysWith: { $1 })
                state.unreadable = unreadable
            }
        } catch {
            logger.error("cannot read the monitors", metadata: ["error": "\(error)"])
            state.withLock { $0.problem = "cannot read the monitors: \(error)" }
        }
    }

    // MARK: reading

    /// The monitors of a user (all clients), with their progress.
    func entries(uid: UInt32) -> [Entry] {
        state.withLock { state in
            state.entries.values.filter { $0.monitor.uid == uid }.sorted { $0.monitor.key < $1.monitor.key }
        }
    }

    func entry(_ key: Monitor.Key) -> Entry? { state.withLock { $0.entries[key] } }

    /// How often it woke, why last, and when next: what the benchmark and `status` show.
    var wakeReport: (wakes: Int, lastReason: String, nextWake: Date?, problem: String?) {
        state.withLock { ($0.wakes, $0.lastReason, $0.nextWake, $0.problem) }
    }

    // MARK: handing over what is owed

    /// Callbacks owed (already written): the agent's own reactions run now, on this thread (a
    /// change that made them owed returns once they are in force); programs go to the extension
    /// host; a callback whose monitor was stopped is owed no more.
    private func hand(_ owed: [OwedCallback]) {
        var programs: [OwedCallback] = []
        for callback in owed {
            guard let monitor = entry(callback.key)?.monitor else {
                record(callback, nil)
                continue
            }
            if let reactions, monitor.builtIn != nil {
                let run: ExtensionRun
                do {
                    try reactions.react(monitor, callback.callback)
                    run = ExtensionRun(
                        key: callback.key, callback: callback.callback, at: now(), outcome: .ok, problem: nil)
                } catch {
                    logger.error(
                        "a built-in reaction failed",
                        metadata: [
                            "monitor": "\(callback.key)", "callback": "\(callback.callback.callback)",
                            "error": "\(error)",
                        ])
                    run = ExtensionRun(
                        key: callback.key, callback: callback.callback, at: now(), outcome: .failed, problem: "\(error)"
                    )
                }
                record(callback, run)
            } else if programCallbacks != nil, monitor.program != nil {
                programs.append(callback)
            } else {
                record(callback, nil)
            }
        }
        if !programs.isEmpty { programCallbacks?.take(programs) }
    }

    /// Writes a callback as run (`run` nil: as done, with nothing to tell).
    private func record(_ owed: OwedCallback, _ run: ExtensionRun?) {
        do {
            try database.ran(
                owed, run ?? ExtensionRun(key: owed.key, callback: owed.callback, at: now(), outcome: .ok, problem: nil)
            )
        } catch {
            logger.error("cannot record a callback as run", metadata: ["error": "\(error)"])
        }
    }
}

/// Where the scheduler hands the callbacks owed to extension programs: the extension host's stream.
package protocol ProgramCallbackSink: Sendable {
    func take(_ owed: [OwedCallback])
}

extension AsyncStream.Continuation: ProgramCallbackSink where Element == [OwedCallback] {
    package func take(_ owed: [OwedCallback]) { yield(owed) }
}
