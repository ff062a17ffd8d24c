import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// Foreground time: which application of an authorized user is in front, in each of their
/// graphical sessions, counted on the monotonic clock while there is input.
///
/// Sessions are found from the users' own processes: each program they run (the process
/// shield tells) has its environment read for `DISPLAY` and `XAUTHORITY`, which are hints — a
/// display is believed once the agent itself has connected to its server. Each session is read
/// by a thread of its own (`X11FocusWatch`), so a server that stops answering holds up only its
/// own session; the agent connects as root with the session's cookie, which the child cannot
/// take away, and asks the server (not the client) whose process a window is.
///
/// Spans are kept in memory while they grow and written every `checkpoint` while any is open
/// (nothing is written, and nothing wakes, while no one is in front), and before any report is
/// answered: kill -9 loses at most the last seconds of the spans still open.
public final class UsageTracker: Service, PolicyConsumer, Sendable {
    let configuration: AgentConfiguration
    let database: StateDatabase
    let processes: ProcessShield
    let minter: TokenMinter
    let logger: Logger
    let users: any Accounts
    let inspector = ProcessInspector()
    let state = Mutex(State())
    /// The users counted: authorized ones (their sessions are read, no one else's).
    let owners = Mutex<Set<UInt32>>([])
    /// Programs just started, whose environments may name displays (the process shield tells).
    let hints: SessionHints
    /// The Wayland sessions counted the conservative way, per user: told when the user starts a
    /// program, so its connection is looked for soon.
    let nudges = Mutex<[UInt32: [String: DispatchSemaphore]]>([:])
    /// The applications connected to each session's X server, as last found for a late answer:
    /// reused for a second (late answers come every 50 ms while the server is asked closely, and
    /// finding them reads every socket of the machine's and the user's descriptors).
    /// One look at the sockets per user, shared by their displays that cannot be read.
    let socketViews = Mutex<[UInt32: (at: ContinuousClock.Instant, age: Duration, view: UnixPeers.View)]>([:])
    let connectedApplications = Mutex<[String: (at: ContinuousClock.Instant, applications: [ForegroundApplication])]>(
        [:])
    /// What compositors' extensions told of their focus, by compositor pid (UsageTracker+Shell).
    let shellReports = Mutex<[Int32: ShellReport]>([:])
    /// Told when users come to have something in front, with those users (the activity
    /// scheduler: a threshold can come only while something is).
    let usersInFrontGained: AsyncStream<Set<UInt32>>.Continuation?
    /// Told when a window of a shielded (held) app comes to the front in a session: the shield
    /// window shows again.
    let shieldEvents: ShieldEvents
    /// Starts and stops the focus relay of a KWin session (nil: none is started).
    let relays: ShieldProgram?
    private let usersInFront = Mutex<Set<UInt32>>([])
    let flushSignal: AsyncStream<Void>
    let flushContinuation: AsyncStream<Void>.Continuation
    /// Two stretches of one application in one session at most this far apart share a row (the
    /// moment between two windows some window managers take).
    static let mergeGap: TimeInterval = 1
    /// A session that starts more rows than this in a minute (a child switching windows by
    /// script) has its stretches of one application up to `floodGap` apart share a row: the
    /// table cannot grow fast, and the time between counts against the child, never for it.
    static let rowsPerMinute = 30
    static let floodGap: TimeInterval = 60
    static let checkpoint: Duration = .seconds(10)
    /// The least time between two writes of what changed.
    static let flushSpacing: Duration = .milliseconds(250)
    /// How long a display that went away is tried again before its session is dropped.
    static let reconnectFor: Duration = .seconds(120)
    /// A compositor's connection that lasted this long ends a streak of failures (its next try is
    /// soon again); a shorter one is one more failure of it.
    static let healthyConnection: Duration = .seconds(60)
    /// Sessions read at once, per user and in all (a thread each).
    static let sessionsPerUser = 128
    static let sessions = 512
    /// Raised when the tracker stops (the logind thread waits on it).
    let stopping: StopSignal?

    struct State {
        var sessions: [String: Session] = [:]
        var rows: [Int: Row] = [:]
        var nextRow = 0
        /// Names looked up, not yet written (from the DNS filter).
        var lookups: [LookupKey: StateDatabase.DomainLookups] = [:]
        /// logind's sessions of authorized users, by id, with the user they count for.
        var logind: [String: LogindRecord] = [:]
        /// Why logind is not read, when it is not.
        var logindProblem: String?
        /// Web domains in use now (from the DNS filter and connection openings), by user and
        /// registrable domain; and windows that ended and are still to be written.
        var web: [WebKey: WebWindow] = [:]
        var webClosed: [StateDatabase.WebActivity] = []
    }

    struct WebKey: Hashable {
        var uid: UInt32
        var domain: String
    }

    struct WebWindow: Sendable {
        var stored: StateDatabase.WebActivity
        var dirty = true
    }

    /// How long after a lookup or a connection naming it a web domain counts as in use (in the
    /// browser in front): a page's names are looked up as it loads, and again as it goes on.
    static let webWindow: TimeInterval = 300

    struct LogindRecord: Sendable {
        var owner: UInt32
        var session: LogindWatch.Session
    }

    struct LookupKey: Hashable {
        var uid: UInt32
        var day: String
        var domain: String
    }

    struct Session: Sendable {
        var kind: SessionKind
        var display: String
        /// The authorized user it was found through.
        var owner: UInt32
        var source = "connecting"
        var problem: String?
        var idle = false
        /// Why its time counts nothing now whatever the input (logind: locked, or not the
        /// seat's active session, or idle as the desktop told logind).
        var hold: String?
        /// What the last focus reading found in front (kept while idle): every application its
        /// process can be taken for.
        var focused: [ForegroundApplication] = []
        /// What was last in front with no notice among it: what the time in front of a notice
        /// counts to (see `NoticeWindows`).
        var beforeNotice: [ForegroundApplication] = []
        var front: Front?
        var stop: StopSignal
        var interrupt: (@Sendable () -> Void)?
        /// Xauthority files named by the hints (tried in order).
        var authorityFiles: [String]
        /// Whether its watch is connected now.
        var connected = false
        /// Its server (pid and start time), once connected: a second name for the same server's
        /// socket is not a second session.
        var server: (pid: Int32, startTime: UInt64?)?
        /// Who runs its server, once connected: a session on root's server (a display manager's),
        /// once read, is never given up to make room for another.
        var serverUID: UInt32?
        /// The server tells pids of a pid namespace of its own: windows are counted, under an
        /// unidentified program, for the session's user.
        var foreignPIDs = false
        /// Every mapped window counts: no window is active, or the window manager does not tell.
        var conservative = false
        /// The processes of the windows in front, as last told (looked at again when the user
        /// starts a program: it may have been given a connection of theirs).
        var frontPIDs: [Int32?] = []
        /// A Wayland session's socket (sway's, beside its IPC socket): where programs of the
        /// session connect.
        var waylandSocket: String?
        /// The session's D-Bus address, as a program of the user's had it (a hint, passed only to
        /// programs the agent starts as that user there).
        var sessionBus: String?
        /// Rows started in the current minute.
        var rowsStarted = 0
        var minuteStart = SuspendingClock.now
    }

    struct Front: Sendable {
        var applications: [ForegroundApplication]
        var startWall: Date
        var startClock: SuspendingClock.Instant
        /// One row per application.
        var rows: [Int]
        /// Each row's end when the span began (a row grown again keeps what it had).
        var rowEnds: [Date]

        /// The wall-clock time `instant` is, counted from the span's start on the monotonic
        /// clock: setting the wall clock meanwhile changes nothing, and a suspend counts nothing.
        func wall(at instant: SuspendingClock.Instant) -> Date {
            let elapsed = instant - startClock
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return startWall.addingTimeInterval(max(0, seconds))
        }
    }

    struct Row: Sendable {
        var stored: StateDatabase.UsageRow
        var open = false
        var dirty = true
    }

    /// - Parameters:
    ///   - hints: programs just started (the process shield tells them).
    ///   - shieldEvents: told when a shielded app's window comes to the front.
    ///   - relays: what starts KWin sessions' focus relays.
    ///   - usersInFrontGained: told when users come to have something in front.
    init(
        configuration: AgentConfiguration, database: StateDatabase, processes: ProcessShield, minter: TokenMinter,
        hints: SessionHints, shieldEvents: ShieldEvents, relays: ShieldProgram?,
        usersInFrontGained: AsyncStream<Set<UInt32>>.Continuation?, logger: Logger,
        users: any Accounts = UserDirectory()
    ) {
        self.hints = hints
        self.shieldEvents = shieldEvents
        self.relays = relays
        self.usersInFrontGained = usersInFrontGained
        self.configuration = configuration
        self.database = database
        self.processes = processes
        self.minter = minter
        self.logger = logger
        self.users = users
        (flushSignal, flushContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        stopping = try? StopSignal()
    }

    // MARK: running

    public func run() async throws {
        for (pid, owner) in processes.trackedProcesses() { hint(pid: pid, owner: owner) }
        Threads.start("screentime.sessions") { [self] in findSessions() }
        if !configuration.logindBus.isEmpty, let stopping {
            startThread("screentime.logind") { [self] in watchLogind(stopping) }
        }
        if let stopping {
            startThread("screentime.displays") { [self] in watchDisplaySockets(stopping) }
        }
        if !configuration.focusSocket.isEmpty, let stopping {
            let path = configuration.focusSocket
            startThread("screentime.shells") { [self] in serveShellReports(path, stopping) }
        }
        // Stopping ends the loop even while a window is in front (it would flush every
        // `checkpoint` for ever); what is open is ended and written below.
        await cancelWhenGracefulShutdown { [self] in await flushLoop() }
        stopping?.raise()
        hints.finish()
        let sessions = state.withLock { state in
            let now = SuspendingClock.now
            for key in state.sessions.keys { Self.endFront(&state, key, at: now) }
            return Array(state.sessions.values)
        }
        for session in sessions {
            session.stop.raise()
            session.interrupt?()
        }
        flush()
        logger.info("stopped counting usage")
    }

    /// Writes what changed whenever something did, and every `checkpoint` while any span is open.
    func flushLoop() async {
        for await _ in flushSignal {
            while true {
                flush()
                guard state.withLock({ $0.sessions.values.contains { $0.front != nil } }) else { break }
                try? await Task.sleep(for: Self.checkpoint)
                if Task.isCancelled { return }
            }
            // A child's lookups come by the thousand a second in a flood: what they change is
            // written a few times a second at most (each write a transaction the disk waits for),
            // not once per lookup.
            try? await Task.sleep(for: Self.flushSpacing)
        }
    }

    /// Writes the rows that changed (open ones up to now) and the lookups counted.
    func flush() {
        let web = state.withLock { state -> [StateDatabase.WebActivity] in
            defer { state.webClosed = [] }
            return state.webClosed + state.web.values.filter(\.dirty).map(\.stored)
        }
        let (rows, lookups, inFront) = state.withLock {
            state -> ([(Int, StateDatabase.UsageRow)], [StateDatabase.DomainLookups], Set<UInt32>) in
            let now = SuspendingClock.now
            let inFront = Set(state.sessions.values.flatMap { $0.front?.applications.map(\.owner) ?? [] })
            for session in state.sessions.values {
                guard let front = session.front else { continue }
                for serial in front.rows {
                    guard var row = state.rows[serial] else { continue }
                    row.stored.end = max(row.stored.end, front.wall(at: now))
                    row.dirty = true
                    state.rows[serial] = row
                }
            }
            let rows = state.rows.filter(\.value.dirty).map { ($0.key, $0.value.stored) }
            let lookups = Array(state.lookups.values)
            state.lookups = [:]
            return (rows, lookups, inFront)
        }
        let gained = usersInFront.withLock { users in
            defer { users = inFront }
            return inFront.subtracting(users)
        }
        if !gained.isEmpty { usersInFrontGained?.yield(gained) }
        if !web.isEmpty { flushWeb(web) }
        guard !rows.isEmpty || !lookups.isEmpty else { return }
        do {
            let saved = try database.saveUsage(rows.map(\.1), lookups: lookups)
            state.withLock { state in
                for ((serial, written), after) in zip(rows, saved) {
                    guard var row = state.rows[serial] else { continue }
                    row.stored.id = after.id
                    if row.stored.end == written.end { row.dirty = false }
                    state.rows[serial] = row
                }
                // Rows that can no longer grow are forgotten once written.
                let before = Date().addingTimeInterval(-Self.floodGap)
                state.rows = state.rows.filter {
                    !$0.value.open && !$0.value.dirty && $0.value.stored.end < before ? false : true
                }
            }
        } catch {
            // Kept for the next flush: counted lookups go back too.
            state.withLock { state in
                for lookup in lookups {
                    let key = LookupKey(uid: lookup.uid, day: lookup.day, domain: lookup.domain)
                    state.lookups[key] = Self.merged(state.lookups[key], lookup)
                }
            }
            logger.error("cannot write usage", metadata: ["error": "\(error)"])
        }
    }

    func flushWeb(_ windows: [StateDatabase.WebActivity]) {
        do {
            let saved = try database.saveWebActivity(windows)
            state.withLock { state in
                for window in saved {
                    let key = WebKey(uid: window.uid, domain: window.domain)
                    guard var kept = state.web[key], kept.stored.start == window.start else { continue }
                    kept.stored.id = window.id
                    if kept.stored.end == window.end { kept.dirty = false }
                    state.web[key] = kept
                }
                // Windows long over are forgotten once written.
                let before = Date().addingTimeInterval(-60)
                state.web = state.web.filter { $0.value.dirty || $0.value.stored.end >= before }
            }
        } catch {
            state.withLock { state in
                for window in windows where window.id == nil {
                    let key = WebKey(uid: window.uid, domain: window.domain)
                    if state.web[key]?.stored.start != window.start { state.webClosed.append(window) }
                }
            }
            logger.error("cannot write web activity", metadata: ["error": "\(error)"])
        }
    }

    // MARK: policy

    /// A user no longer authorized: their sessions are no longer read. A user newly authorized:
    /// their running programs are looked at for sessions now (not only those they start later).
    package func apply(_ snapshot: PolicySnapshot) {
        let now = Set(snapshot.users.keys)
        let added = owners.withLock { owners in
            defer { owners = now }
            return now.subtracting(owners)
        }
        let gone = state.withLock { state -> [Session] in
            let clock = SuspendingClock.now
            let keys = state.sessions.filter { !now.contains($0.value.owner) }.map(\.key)
            return keys.compactMap { key in
                Self.endFront(&state, key, at: clock)
                return state.sessions.removeValue(forKey: key)
            }
        }
        for session in gone {
            session.stop.raise()
            session.interrupt?()
            logger.info(
                "stopped reading a session: its user is no longer authorized",
                metadata: ["session": "\(session.display)"])
        }
        if !gone.isEmpty { flushContinuation.yield() }
        if !added.isEmpty {
            for (pid, owner) in processes.trackedProcesses() where added.contains(owner) {
                hint(pid: pid, owner: owner)
            }
            let told = state.withLock { state in
                for (id, record) in state.logind {
                    state.logind[id]?.owner = snapshot.owner(ofKernelUID: record.session.uid) ?? record.session.uid
                }
                return state.logind.values.filter { added.contains($0.owner) }
            }
            for record in told { logindHints(record.session, owner: record.owner) }
            updateHolds()
        }
    }
}
