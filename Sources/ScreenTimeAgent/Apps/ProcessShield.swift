import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// The process shield: every process an authorized user starts is known to the agent the moment
/// it starts (the kernel's proc connector), taken for the applications it can be (its systemd unit,
/// Flatpak sandbox, launching desktop file, executable or script by path and by content, its
/// parent's), and, when the user's policy shields one of them, held in a root-owned frozen cgroup
/// the user cannot thaw; a blocked application, or (with `denyAppInstallation`) a program no
/// guardian installed, is refused at exec or killed.
///
/// Three threads act, none waiting on another's slow work:
/// - the *watcher* (real-time) reads process events and decides from what the kernel answers at
///   once (`KernelEvidence`, cached hashes). What needs more — a script, a file not hashed yet, a
///   sandbox's files, whether a program is installed — goes to the *judges* (`ProcessJudges`),
///   and the process is held until they are done when the answer could shield it.
/// - the *judges* make the reads a child can shape (its memory, its files), off every lock,
///   with deadlines: a judgement late or stuck holds its process, never anyone else's.
/// - the *gate* (`ExecGate`) answers the kernel before known shielded and blocked programs run:
///   blocked ones are refused, shielded ones are held in the frozen group inside `execve`,
///   before their first instruction, and the child's other opens of them are refused.
///
/// Every signal, freeze and kill goes through a pidfd (`ProcessHandle`) opened after checking the
/// process's start time and that its uid is an authorized user's; a process of anyone else is
/// never touched, whatever the table says.
public final class ProcessShield: Service, PolicyConsumer, Sendable {
    let configuration: AgentConfiguration
    let database: StateDatabase
    let minter: TokenMinter
    let logger: Logger
    let inspector: ProcessInspector
    let hashes = ExecutableHashes()
    let systemDataDirectories: [String]
    let journal: ShieldJournal

    // Lock order, where locks nest: `applying` (a whole policy change) → `table` (the processes)
    // → `policy` (swapped inside the table's lock, so that a process is judged by the rules its
    // table entry was made under). The other locks below are taken alone or innermost.

    /// The rules in force (swapped whole on each policy snapshot).
    let policy = Mutex(AppPolicy.empty)
    let table = Mutex(Table())
    /// Held through a whole policy change, so that two never interleave.
    let applying = Mutex(())
    let holder = Mutex(ProcessHolder(freezer: nil))
    let loaders = Mutex(Loaders())
    let connector: Mutex<ProcConnector?> = Mutex(nil)
    let gate: Mutex<ExecGate?> = Mutex(nil)
    let gateState = Mutex(GateState())
    /// Refusals of programs no guardian installed, written down per user within a budget.
    let refusalBudget = Mutex(RefusalBudget())
    let epoch = ContinuousClock.now
    /// Executables killed or frozen as themselves (known by content), marked for the gate too:
    /// by path, their content's hash and the file they were (changed under the table's lock).
    let learned = Mutex<[String: LearnedProgram]>([:])
    /// The last index read for each user: a catalogue that could not be read in time keeps it.
    /// With the serial of the read that made it: a late read never replaces a later one.
    /// With what of the user's own was read (a read running out of the user's time keeps it).
    let indexes = Mutex<[UInt32: KeptIndex]>([:])

    struct KeptIndex {
        var serial: UInt64
        var index: ApplicationIndex
        var entries: [ApplicationCatalogue.Entry]
        var programs: ApplicationCatalogue.UserPrograms
    }
    let indexReads = Atomic<UInt64>(0)
    let status = Mutex(StatusState())
    let restopSignal: AsyncStream<Void>
    let restopContinuation: AsyncStream<Void>.Continuation
    let judgesBox = Mutex<ProcessJudges?>(nil)
    /// Told of each program an authorized user's process runs (pid, owner), on the watcher's
    /// thread: the usage tracker looks for sessions there.
    let sessionHints: SessionHints
    /// Told of each process of an authorized user's frozen, refused or killed for a shield, on
    /// whatever thread did it (the shield window shows it).
    let shieldEvents: ShieldEvents
    /// Signalled when the gate's thread ends.
    let gateThreadDone = Mutex<DispatchSemaphore?>(nil)
    /// The agent's launcher, and the agent's own executable: a process of the launcher's still
    /// running that executable (between the fork and the exec of a program it starts as a user)
    /// is the agent's, not the user's; its exec is what is judged.
    let launcher: (pid: Int32, executable: FileIdentity?)?

    struct Table {
        var processes: [Int32: Tracked] = [:]
        /// Processes held by SIGSTOP alone, checked again while any exist.
        var stoppedBySignal: Set<Int32> = []
        /// Processes whose leader thread ended while others go on (`pthread_exit` in main),
        /// tracked until their last thread ends: checked again every half second while any exist.
        var leaderless: Set<Int32> = []
        var execsJudged = 0
    }

    struct StatusState {
        var watching = false
        var problems: [String] = []
        var gateRunning = false
        var refusingUninstalled = false
    }

    struct GateState {
        /// Processes the gate held inside `execve`: the watcher takes them over at the exec event.
        var held: [Int32: GateHold] = [:]
        /// The exec each thread was just let through: the open of the same file that follows.
        var execOpens: [Int32: FileIdentity] = [:]
        /// Whether a look at late holds (`takeOverGateHolds`) is due: one at a time, however many
        /// execs a storm brings.
        var takeoverDue = false
    }

    struct GateHold {
        var token: ApplicationToken
        /// Nil when the process was in the frozen group already (held for judging).
        var origin: String?
        /// Only stopped inside the exec (the v1 freezer): moved into the frozen group once the
        /// exec is done.
        var moveLater = false
        /// The file being executed: only the exec event of that program takes the hold over (an
        /// event of the program before it, read late, does not).
        var file: FileIdentity
        var handle: ProcessHandle
        var since: Date
    }

    /// - Parameters:
    ///   - launcher: the agent's launcher's pid and the agent's own executable (nil: no launcher).
    ///   - sessionHints: told of each program an authorized user runs.
    ///   - shieldEvents: told of each process held or refused for a shield.
    init(
        configuration: AgentConfiguration, database: StateDatabase, minter: TokenMinter,
        launcher: (pid: Int32, executable: FileIdentity?)?, sessionHints: SessionHints, shieldEvents: ShieldEvents,
        logger: Logger, proc: String = "/proc"
    ) {
        self.launcher = launcher
        self.sessionHints = sessionHints
        self.shieldEvents = shieldEvents
        self.configuration = configuration
        self.database = database
        self.minter = minter
        self.logger = logger
        self.inspector = ProcessInspector(root: proc)
        self.systemDataDirectories = ApplicationCatalogue.systemDataDirectories(
            environment: ProcessInfo.processInfo.environment["XDG_DATA_DIRS"])
        self.journal = ShieldJournal(database: database, logger: logger)
        (restopSignal, restopContinuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var judges: ProcessJudges {
        judgesBox.withLock { box in
            if let judges = box { return judges }
            let made = ProcessJudges(
                read: { [unowned self] job in readEvidence(job) },
                done: { [unowned self] job, reads in judged(job, reads) },
                overdue: { [unowned self] job, stuck in overdue(job, stuck: stuck) })
            box = made
            return made
        }
    }

    func currentPolicy() -> AppPolicy { policy.withLock { $0 } }

    // MARK: running

    public func run() async throws {
        let stopWatchingEntries = try StopSignal()
        async let entries: Void = watchApplicationFolders(until: stopWatchingEntries)
        await watchProcesses()
        stopWatchingEntries.raise()
        await entries
    }

    /// The system's application folders: an app a guardian installs (its desktop entry written
    /// by the package manager) is known at once, so a category already shielded covers it, and
    /// its time is counted under its name; not only at the next change of policy. A burst of
    /// changes (a package's files) is read once.
    private func watchApplicationFolders(until stop: StopSignal) async {
        // And dpkg's record of each package installed, written once its files are all in place: an
        // entry unpacked before its program was read without it.
        let folders =
            ApplicationCatalogue.systemDirectories(systemDataDirectories).map { $0 + "/applications" }
            + ["/var/lib/dpkg/info"]
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Threads.start("screentime.entries") { [self] in
                defer { done.resume() }
                var delay = Duration.seconds(1)
                while !stop.isRaised {
                    do {
                        let watch = try FileWatch(directories: folders)
                        try watch.run(until: stop) { [self] in
                            guard !currentPolicy().users.isEmpty else { return }
                            logger.info("the system's applications changed: they are read again")
                            apply(nil, reconciling: false)
                        }
                        return
                    } catch {
                        logger.notice(
                            "cannot watch the system's applications; they are read at each change of policy",
                            metadata: ["error": "\(error)"])
                        _ = stop.wait(for: delay)
                        delay = min(delay * 2, .seconds(60))
                    }
                }
            }
        }
    }

    private func watchProcesses() async {
        guard let connector = connector.withLock({ $0 }) else {
            // Without process events the gate still answers, and changes are still put in force.
            async let gating: Void = gateLoop()
            async let writing: Void = journal.run { [self] in currentPolicy().users[$0] != nil }
            try? await gracefulShutdown()
            gate.withLock { $0 }?.stop()
            journal.finish()
            _ = await (gating, writing)
            return
        }
        status.withLock { $0.watching = true }
        async let writing: Void = journal.run { [self] in currentPolicy().users[$0] != nil }
        async let restopping: Void = restopLoop()
        async let gating: Void = gateLoop()
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Threads.start("screentime.proc") { [self] in
                    do {
                        // Stopping a program before its main() needs this thread to run the
                        // moment the exec event arrives.
                        try ProcConnector.raiseCallingThreadToRealtime()
                    } catch {
                        logger.warning(
                            "the process watcher runs at normal priority; programs may run a little before they are stopped",
                            metadata: ["error": "\(error)"])
                    }
                    do {
                        try connector.run { [self] event in handle(event) }
                    } catch {
                        status.withLock {
                            $0.problems.append("watching processes failed: \(error)")
                            $0.watching = false
                        }
                        logger.error("watching processes failed", metadata: ["error": "\(error)"])
                    }
                    done.resume()
                }
            }
        } onGracefulShutdown: {
            connector.stop()
        }
        status.withLock { $0.watching = false }
        journal.finish()
        restopContinuation.finish()
        gate.withLock { $0 }?.stop()
        judges.stop()
        _ = await (writing, restopping, gating)
        flush()
        logger.info(
            "stopped watching processes; what is frozen stays frozen until the agent is back",
            metadata: ["execsJudged": "\(table.withLock { $0.execsJudged })"])
    }

    /// Where no freezer holds them, stopped processes are stopped again if someone continued
    /// them: checked every 20 ms while there are such processes, not at all otherwise. And
    /// processes whose leader thread ended before the others: looked at every half second while
    /// there are any, forgotten when their last thread ends.
    private func restopLoop() async {
        for await _ in restopSignal {
            var round = 0
            while true {
                let (handles, leaderless) = table.withLock { table in
                    if round % 25 == 0, !table.leaderless.isEmpty { lookAtLeaderless(&table) }
                    return (
                        table.stoppedBySignal.compactMap { table.processes[$0]?.hold?.handle },
                        !table.leaderless.isEmpty
                    )
                }
                round += 1
                if handles.isEmpty, !leaderless { break }
                for handle in handles where inspector.state(pid: handle.pid).map({ $0 != "T" && $0 != "t" }) ?? false {
                    handle.stop()
                }
                try? await Task.sleep(for: .milliseconds(20))
                if Task.isCancelled { return }
            }
        }
    }
}
