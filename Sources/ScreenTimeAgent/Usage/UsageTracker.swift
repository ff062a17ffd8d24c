import Foundation
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
    /// How long a display that went away is tried again before its session is dropped.
    static let reconnectFor: Duration = .seconds(120)
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
        let finder = Thread { [self] in findSessions() }
        finder.name = "screentime.sessions"
        finder.start()
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
    private func flushLoop() async {
        for await _ in flushSignal {
            while true {
                flush()
                guard state.withLock({ $0.sessions.values.contains { $0.front != nil } }) else { break }
                try? await Task.sleep(for: Self.checkpoint)
                if Task.isCancelled { return }
            }
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

    private func flushWeb(_ windows: [StateDatabase.WebActivity]) {
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

    // MARK: lookups

    /// A registrable domain a user's programs used (looked up, or named by a connection): it
    /// counts as in use for `webWindow` from now.
    func webUsed(_ domain: String, uid: UInt32, at time: Date = Date()) {
        let changed = state.withLock { state -> Bool in
            let key = WebKey(uid: uid, domain: domain)
            let end = time.addingTimeInterval(Self.webWindow)
            if var window = state.web[key], time <= window.stored.end {
                // Written at most every few seconds per domain: a page loading fetches many names.
                guard end.timeIntervalSince(window.stored.end) >= 5 else { return false }
                window.stored.end = end
                window.dirty = true
                state.web[key] = window
                return true
            }
            // Bounded: a child inventing names cannot grow the agent's memory without limit.
            guard state.web[key] != nil || state.web.count < 50_000 else { return false }
            if let old = state.web[key], old.dirty { state.webClosed.append(old.stored) }
            state.web[key] = WebWindow(
                stored: StateDatabase.WebActivity(id: nil, uid: uid, domain: domain, start: time, end: end))
            return true
        }
        if changed { flushContinuation.yield() }
    }

    /// A name a user's program looked up (the DNS filter tells, for each question it judged).
    func lookedUp(_ domain: String, uid: UInt32, at time: Date = Date()) {
        let day = Self.day(time)
        state.withLock { state in
            let key = LookupKey(uid: uid, day: day, domain: domain)
            // Bounded: a child inventing names cannot grow the agent's memory without limit.
            guard state.lookups[key] != nil || state.lookups.count < 50_000 else { return }
            state.lookups[key] = Self.merged(
                state.lookups[key],
                StateDatabase.DomainLookups(uid: uid, day: day, domain: domain, count: 1, first: time, last: time))
        }
        flushContinuation.yield()
    }

    static func merged(
        _ old: StateDatabase.DomainLookups?, _ new: StateDatabase.DomainLookups
    ) -> StateDatabase.DomainLookups {
        guard var old else { return new }
        old.count += new.count
        old.first = min(old.first, new.first)
        old.last = max(old.last, new.last)
        return old
    }

    static func day(_ time: Date) -> String {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: time)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    // MARK: finding sessions

    /// A program an authorized user's process runs: its environment may name a session.
    func hint(pid: Int32, owner: UInt32) {
        hints.add(pid: pid, owner: owner)
    }

    /// Wakes the user's Wayland sessions counted the conservative way: a program of theirs started,
    /// and its connection is looked for soon.
    private func nudge(owner: UInt32) {
        for nudge in nudges.withLock({ $0[owner].map { Array($0.values) } ?? [] }) { nudge.signal() }
    }

    /// The finder's thread: reads the environments of new programs (off the process watcher's
    /// thread: a child's memory is slow to read when the child makes it so) and starts a watch
    /// for each display not watched yet.
    private func findSessions() {
        while let pids = hints.take() {
            for owner in Set(pids.values) {
                nudge(owner: owner)
                refocus(owner: owner)
            }
            for (pid, owner) in pids {
                let environment = inspector.sessionEnvironment(pid: pid)
                if let value = environment["DISPLAY"], let display = X11Display(value) {
                    noteX11(display, owner: owner, authority: environment["XAUTHORITY"])
                    noteBus(environment, key: "x11 :\(display.number) \(owner)")
                }
                if environment["SWAYSOCK"] == nil, let path = Self.waylandSocket(environment) {
                    // A compositor whose focus the agent cannot read (GNOME's, KDE's, any but
                    // sway's): its clients count, all of them.
                    let key = "wayland \(path) \(owner)"
                    if let mine = noteSession(
                        key, kind: .wayland, display: path, owner: owner, authority: nil, fallback: nil)
                    {
                        startThread("screentime.wayland") { [self] in watchWayland(key, path, mine) }
                    }
                }
                if let path = environment["SWAYSOCK"], path.hasPrefix("/"), path.utf8.count < 108,
                    FileStatus.of(path: path).map({ $0.mode & S_IFMT == S_IFSOCK }) == true
                {
                    let key = "sway \(path) \(owner)"
                    // The compositor's Wayland socket, for idle: beside it in the environment.
                    var wayland = environment["WAYLAND_DISPLAY"] ?? "wayland-0"
                    if !wayland.hasPrefix("/"), let runtime = environment["XDG_RUNTIME_DIR"] {
                        wayland = runtime + "/" + wayland
                    }
                    let socket = wayland.hasPrefix("/") && wayland.utf8.count < 108 ? wayland : nil
                    if let mine = noteSession(
                        key, kind: .sway, display: path, owner: owner, authority: nil, fallback: nil)
                    {
                        state.withLock { $0.sessions[key]?.waylandSocket = socket }
                        noteBus(environment, key: key)
                        startThread("screentime.sway") { [self] in watchSway(key, path, mine, wayland: socket) }
                    }
                }
            }
        }
    }

    /// The session's D-Bus address, from the first program of the session's that named one.
    private func noteBus(_ environment: [String: String], key: String) {
        guard let bus = environment["DBUS_SESSION_BUS_ADDRESS"], bus.utf8.count < 1024 else { return }
        state.withLock { state in
            if state.sessions[key]?.sessionBus == nil { state.sessions[key]?.sessionBus = bus }
        }
    }

    /// An X11 display a hint names (a program's environment, logind): read from now on, unless
    /// it already is.
    /// Each screen of a display is a session of its own (its root window, windows and window
    /// manager are its own): the first screen's always, the one named too; the first's watch
    /// finds the others.
    func noteX11(_ display: X11Display, owner: UInt32, authority: String?) {
        let home = try? users.user(uid: owner).home
        for screen in Set([0, display.screen]).sorted() {
            let shown = display.screen(screen)
            let key = "x11 \(shown) \(owner)"
            let isNew = noteSession(
                key, kind: .x11, display: "\(shown)", owner: owner, authority: authority,
                fallback: home.map { $0 + "/.Xauthority" })
            if let mine = isNew { startThread("screentime.x11") { [self] in watchX11(key, shown, mine) } }
        }
    }

    /// Records a session a hint names; returns its stop signal when it is new (then its watch
    /// is started, and runs while the session under its key is this one).
    private func noteSession(
        _ key: String, kind: SessionKind, display: String, owner: UInt32, authority: String?, fallback: String?
    ) -> StopSignal? {
        var evicted: String?
        let isNew = state.withLock { state -> StopSignal? in
            if var session = state.sessions[key] {
                if let authority, !session.authorityFiles.contains(authority), session.authorityFiles.count < 8 {
                    session.authorityFiles.append(authority)
                    state.sessions[key] = session
                }
                return nil
            }
            // Bounded: hints naming ever new sockets cannot grow the agent's threads without
            // limit. At a user's limit, a session of theirs that cannot be read now (a socket
            // that does not answer) makes room: fakes cannot keep the real session out.
            let theirs = state.sessions.filter { $0.value.owner == owner }
            if theirs.count >= Self.sessionsPerUser || state.sessions.count >= Self.sessions {
                // Never one read on root's server (the child cannot make another such server, and
                // a brief failure of the real one must not let fakes take its place); first one
                // never read, then one failing now, then one on a server of the user's own.
                // Nor a text login's (the PAM hook's): fake displays cannot end its count.
                let candidates = theirs.filter {
                    $0.value.serverUID != 0 && !LoginSessions.textKinds.contains($0.value.kind.rawValue)
                }
                guard
                    let failing = candidates.first(where: { $0.value.server == nil && !$0.value.connected })
                        ?? candidates.first(where: { $0.value.problem != nil || !$0.value.connected })
                        ?? candidates.first
                else {
                    return nil
                }
                state.sessions[failing.key] = nil
                failing.value.stop.raise()
                failing.value.interrupt?()
                evicted = failing.key
            }
            guard let stop = try? StopSignal() else { return nil }
            var session = Session(
                kind: kind, display: display, owner: owner, stop: stop,
                authorityFiles: [authority, fallback].compactMap { $0 })
            session.hold = Self.hold(for: session, told: Self.logindSessions(state, matching: session))
            state.sessions[key] = session
            return stop
        }
        if let evicted {
            logger.notice("gave up a session to make room for another", metadata: ["session": "\(evicted)"])
        }
        if isNew != nil {
            logger.info("found a graphical session", metadata: ["session": "\(key)", "uid": "\(owner)"])
        }
        return isNew
    }

    func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.start()
    }

    /// After a watch failed: the session shows why; true when it has failed for so long that it
    /// is dropped (a later hint finds it again).
    func failed(
        _ key: String, _ error: SystemError, since failingSince: inout ContinuousClock.Instant?
    ) -> Bool {
        state.withLock { state in
            Self.endFront(&state, key, at: .now)
            state.sessions[key]?.focused = []
            state.sessions[key]?.connected = false
            state.sessions[key]?.problem = error.message
            state.sessions[key]?.interrupt = nil
        }
        flushContinuation.yield()
        let now = ContinuousClock.now
        if failingSince == nil {
            failingSince = now
            logger.notice("cannot read a session", metadata: ["session": "\(key)", "error": "\(error.message)"])
        }
        if let since = failingSince, now - since > Self.reconnectFor {
            state.withLock { $0.sessions[key] = nil }
            logger.notice("dropped a session that is gone", metadata: ["session": "\(key)"])
            return true
        }
        return false
    }

    // MARK: one sway session

    private func watchSway(_ key: String, _ path: String, _ mine: StopSignal, wayland: String?) {
        var idleStarted = false
        var delay: Duration = .milliseconds(500)
        var failingSince: ContinuousClock.Instant?
        // While the session under the key is this thread's (one made again later has its own).
        while let session = state.withLock({ $0.sessions[key] }), session.stop === mine, !session.stop.isRaised {
            do throws(SystemError) {
                let watch = try SwayFocusWatch(path: path)
                // The compositor is the session's user's (a socket of anyone else's is not
                // this child's session, and is not read).
                guard processes.currentPolicy().owner(ofKernelUID: watch.server.uid) == session.owner else {
                    throw SystemError(.command, "\(path) is not served by the session's user (uid \(watch.server.uid))")
                }
                let box = SwayBox(watch)
                let foreign = Files.readLink("/proc/\(watch.server.pid)/ns/pid") != Files.readLink("/proc/self/ns/pid")
                let compositorStart = inspector.startTime(pid: watch.server.pid)
                state.withLock { state in
                    state.sessions[key]?.foreignPIDs = foreign
                    state.sessions[key]?.server = (watch.server.pid, compositorStart)
                    state.sessions[key]?.interrupt = { box.interrupt() }
                    state.sessions[key]?.problem = nil
                    state.sessions[key]?.connected = true
                    state.sessions[key]?.source =
                        "sway IPC window events (pid from the compositor)"
                        + (wayland == nil ? "; idle is not told (no Wayland socket named)" : "")
                }
                if let wayland, !idleStarted {
                    idleStarted = true
                    let compositor = watch.server.pid
                    startThread("screentime.idle") { [self] in
                        watchWaylandIdle(key, wayland, mine, compositor: compositor)
                    }
                }
                failingSince = nil
                delay = .milliseconds(500)
                logger.info("reading focus", metadata: ["session": "\(key)", "server": "pid \(watch.server.pid)"])
                try watch.run(stop: session.stop) { change in
                    switch change {
                    case .focus(let window): focused(key, pids: window.map { [$0.pid] } ?? [])
                    }
                }
                return
            } catch {
                if failed(key, error, since: &failingSince) { return }
                session.stop.wait(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    // MARK: one X11 session

    /// Connects, reports focus until the server goes, then tries again for a while before the
    /// session is dropped (a later hint finds it again). The server is looked at before anything
    /// is sent: root's (a display manager's) or the session user's, else this is not their
    /// display and no cookie of theirs goes to it. A connection cut (any client of the display
    /// may kill another's) is made again at once, the time in front going on meanwhile.
    private func watchX11(_ key: String, _ display: X11Display, _ mine: StopSignal) {
        var delay: Duration = .milliseconds(500)
        var failingSince: ContinuousClock.Instant?
        var lostAt: SuspendingClock.Instant?
        // The server found and taken as the session's, on this try (its pid and start time): one
        // that then cannot be read is counted the conservative way.
        var reached: (pid: Int32, startTime: UInt64?)?
        // While the session under the key is this thread's (one made again later has its own).
        while let session = state.withLock({ $0.sessions[key] }), session.stop === mine, !session.stop.isRaised {
            reached = nil
            do throws(SystemError) {
                let server = try X11FocusWatch.server(of: display)
                let policy = processes.currentPolicy()
                guard server.uid == 0 || policy.owner(ofKernelUID: server.uid) == session.owner else {
                    throw SystemError(
                        .command, "display :\(display.number) is served by another user (uid \(server.uid))")
                }
                // Root's server (a display manager's) is read for this user only while a program
                // of theirs is its client: a name in the environment is not enough, or a child
                // could have a bystander's windows counted as theirs.
                let addresses = display.unixAddresses
                if server.uid == 0, UnixPeers.canPair(server: server.pid, listening: addresses) {
                    let mine = processes.trackedProcesses().filter { $0.owner == session.owner }.map(\.pid)
                    if (try? UnixPeers.clients(of: server.pid, among: mine, listening: addresses))?.isEmpty != false {
                        throw SystemError(
                            .command, "display :\(display.number) is root's and no program of the user's is its client")
                    }
                }
                let serverStart = inspector.startTime(pid: server.pid)
                reached = (server.pid, serverStart)
                // Another session of the user reads this very server (a second name for its socket).
                let duplicate = state.withLock { state in
                    state.sessions.contains { other in
                        other.key != key && other.value.owner == session.owner && other.value.connected
                            && X11Display(other.value.display)?.screen == display.screen
                            && other.value.server?.pid == server.pid && other.value.server?.startTime == serverStart
                    }
                }
                if duplicate {
                    state.withLock { $0.sessions[key] = nil }
                    logger.info("a second name for a display already read", metadata: ["session": "\(key)"])
                    return
                }
                var watch: X11FocusWatch?
                var refusal: SystemError?
                for cookie in cookies(for: display, server: server, files: session.authorityFiles, owner: session.owner)
                {
                    do throws(SystemError) {
                        watch = try X11FocusWatch(
                            display: display, cookie: cookie, idleTimeout: .seconds(configuration.idleTimeout),
                            expecting: server)
                        break
                    } catch {
                        refusal = error
                    }
                }
                guard let watch else {
                    throw refusal ?? SystemError(.command, "X11 display :\(display.number): no way in")
                }
                // A server in a pid namespace of its own tells its own pids: they name nothing here.
                let foreign = Files.readLink("/proc/\(server.pid)/ns/pid") != Files.readLink("/proc/self/ns/pid")
                let box = WatchBox(watch)
                state.withLock { state in
                    state.sessions[key]?.interrupt = { box.interrupt() }
                    state.sessions[key]?.problem = nil
                    state.sessions[key]?.connected = true
                    state.sessions[key]?.foreignPIDs = foreign
                    state.sessions[key]?.server = (server.pid, serverStart)
                    state.sessions[key]?.serverUID = server.uid
                    state.sessions[key]?.source = Self.source(readsFocus: watch.readsFocus, readsIdle: watch.readsIdle)
                }
                failingSince = nil
                lostAt = nil
                delay = .milliseconds(500)
                logger.info("reading focus", metadata: ["display": "\(key)", "server": "uid \(server.uid)"])
                // The display's other screens: each read as a session of its own.
                if display.screen == 0, watch.screens > 1 {
                    for screen in 1..<watch.screens {
                        let other = display.screen(screen)
                        noteX11(other, owner: session.owner, authority: session.authorityFiles.first)
                    }
                }
                try watch.run(
                    stop: session.stop,
                    stalled: { [self] answered in
                        serverStalled(key, server: server.pid, addresses: addresses, answered: answered)
                    }
                ) { change in changed(key, change) }
                return
            } catch {
                // The first loss after reading: tried again at once, what was in front still counting.
                let wasReading = state.withLock { $0.sessions[key]?.connected == true }
                if wasReading, lostAt == nil {
                    lostAt = .now
                    state.withLock { state in
                        state.sessions[key]?.connected = false
                        state.sessions[key]?.problem = error.message
                        state.sessions[key]?.interrupt = nil
                    }
                    continue
                }
                if lostAt != nil, unreachable(key, error) {
                    // The server that was read still runs: its display is in use, and what was
                    // in front goes on counting (a child who fills the display's client slots,
                    // or cuts the agent's connection again and again, gains nothing).
                    session.stop.wait(for: delay)
                    delay = min(delay * 2, .seconds(5))
                    continue
                }
                if let lost = lostAt {
                    state.withLock { Self.endFront(&$0, key, at: lost) }
                    lostAt = nil
                }
                if !wasReading, let server = reached,
                    unreadable(key, error, server: server, addresses: display.unixAddresses)
                {
                    // Looked at again soon: a program she starts there counts from then.
                    failingSince = nil
                    session.stop.wait(for: min(delay, Self.unreadableLook))
                    delay = min(delay * 2, Self.unreadableLook)
                    continue
                }
                if failed(key, error, since: &failingSince) { return }
                session.stop.wait(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// A display that was read and cannot be now, its server still running and its user still
    /// logged in (a program of theirs runs): counted as in use — what was in front goes on, or
    /// is taken to be an unidentified program when nothing was, idle or not (its idle cannot be
    /// told). True while that holds; false once the server or the user is gone.
    func unreachable(_ key: String, _ error: SystemError) -> Bool {
        guard let session = state.withLock({ $0.sessions[key] }), let server = session.server,
            inspector.startTime(pid: server.pid) == server.startTime, server.startTime != nil,
            processes.trackedProcesses().contains(where: { $0.owner == session.owner })
        else { return false }
        let unknown = unidentifiedApplication(owner: session.owner)
        state.withLock { state in
            guard var current = state.sessions[key] else { return }
            let message = String(error.message.prefix(160)) + "; counting the display as in use meanwhile"
            if current.problem != message {
                current.problem = message
                current.idle = false
                if current.focused.isEmpty, let unknown { current.focused = [unknown] }
                state.sessions[key] = current
                if current.front == nil { Self.beginFront(&state, key, current.focused) }
            }
        }
        flushContinuation.yield()
        return true
    }

    /// How often a display that cannot be read is looked at again (for her programs connected to
    /// it, and whether it can be read now).
    static let unreadableLook: Duration = .seconds(3)

    /// What `status` says of a display that cannot be read, after why.
    static let unreadableProblem =
        "the display cannot be read; every program of the user's connected to it counts meanwhile"

    /// A display whose server is the session's (the user's own, or root's with a program of the
    /// user's its client) but which the agent cannot read: it refuses or closes the agent's
    /// connection (a relay of hers that passes on only her programs'), no cookie lets the agent in,
    /// or it answers out of bounds. Counted the conservative way, never as nothing: every program
    /// of the user's connected to it is in use (its idle cannot be told), until it can be read or
    /// its server is gone. True while that holds.
    /// The server answered on the display's socket this very try: its pid may name a process
    /// that ended (the listener's maker, its socket passed on) or one that holds no connection;
    /// the connections accepted at the display's address are what count.
    func unreadable(
        _ key: String, _ error: SystemError, server: (pid: Int32, startTime: UInt64?), addresses: Set<String>
    ) -> Bool {
        guard let owner = state.withLock({ $0.sessions[key]?.owner }) else { return false }
        let mine = processes.trackedProcesses().filter { $0.owner == owner }.map(\.pid)
        var clients: [Int32] = []
        if !addresses.isEmpty, let view = socketView(owner: owner, pids: mine) {
            clients = view.connected(to: addresses)
        }
        // Over TCP, when the server that answered still runs (a server of hers listening there
        // too cannot name those clients).
        if server.startTime != nil, inspector.startTime(pid: server.pid) == server.startTime {
            for pid in TCPPeers.clients(of: server.pid, among: mine) where !clients.contains(pid) {
                clients.append(pid)
            }
        }
        let message = String(error.message.prefix(240)) + "; " + Self.unreadableProblem
        let first = state.withLock { state -> Bool in
            guard var session = state.sessions[key] else { return false }
            defer { state.sessions[key] = session }
            session.idle = false
            session.source = "none (the display cannot be read): every program of the user's connected to it counts"
            // Written down once, when it first cannot be read (not each look).
            defer { session.problem = message }
            return session.problem?.hasSuffix(Self.unreadableProblem) != true
        }
        if first {
            logger.notice(
                "cannot read a display: every program of the user's connected to it counts",
                metadata: ["session": "\(key)", "error": "\(error.message)", "clients": "\(clients.count)"])
        }
        focused(key, pids: clients.map { $0 })
        return true
    }

    /// The machine's Unix sockets and a user's processes' socket inodes, as looked at last
    /// (within `socketViewAge`): the displays of hers that cannot be read share one look, however
    /// many there are and however many sockets her processes hold. One look at a time: the
    /// displays' threads that ask meanwhile wait for it (none of them enforces anything).
    func socketView(owner: UInt32, pids: [Int32]) -> UnixPeers.View? {
        socketViews.withLock { views -> UnixPeers.View? in
            let now = ContinuousClock.now
            if let known = views[owner], now - known.at < known.age { return known.view }
            guard let sockets = try? UnixPeers.sockets() else { return nil }
            let view = UnixPeers.View(sockets: sockets, pids: pids)
            // A look made slow by her sockets is made less often: at most a twentieth of the time.
            let age = max(Self.socketViewAge, (ContinuousClock.now - now) * 20)
            views = views.filter { now - $0.value.at < $0.value.age }
            views[owner] = (ContinuousClock.now, age, view)
            return view
        }
    }

    static let socketViewAge: Duration = .milliseconds(2500)

    /// What `status` says of a display whose server stopped answering.
    static let stalledProblem =
        "the display's server does not answer (a client of it may have grabbed it); every program of the user's connected to it counts meanwhile"

    /// The display's server does not answer the agent (a client of the child's grabbed it: the
    /// server then serves that client alone, and the child plays there): every program of the
    /// user's connected to the server counts, as in use, until it answers again (the watch then
    /// tells what is in front, and idle).
    /// `answered`: whether the server has answered since (then what the watch tells stands).
    func serverStalled(
        _ key: String, server: Int32, addresses: Set<String>, answered: @escaping @Sendable () -> Bool
    ) {
        guard let owner = state.withLock({ $0.sessions[key]?.owner }) else { return }
        let clients = displayClients(server: server, owner: owner, listening: addresses)
        logger.notice(
            "the display's server does not answer: every program connected to it counts",
            metadata: ["session": "\(key)", "clients": "\(clients.count)"])
        let wasIdle = state.withLock { state in
            defer { state.sessions[key]?.idle = false }
            return state.sessions[key]?.idle == true
        }
        // None found (a server in a network namespace of its own): an unidentified program.
        let applied = focused(key, pids: clients.isEmpty ? [nil] : clients.map { $0 }, unless: answered)
        state.withLock { state in
            if applied {
                state.sessions[key]?.problem = Self.stalledProblem
            } else if wasIdle, state.sessions[key]?.front == nil {
                // Answered meanwhile: idle as it was (the watch tells if that changed).
                state.sessions[key]?.idle = true
            }
        }
    }

    /// The programs of `owner`'s connected to an X server: over its display socket (the kernel's
    /// pairing of Unix sockets) and over TCP (a server listening there cannot name those clients).
    func displayClients(server: Int32, owner: UInt32, listening addresses: Set<String>) -> [Int32] {
        let mine = processes.trackedProcesses().filter { $0.owner == owner }.map(\.pid)
        let local = (try? UnixPeers.clients(of: server, among: mine, listening: addresses)) ?? []
        let remote = TCPPeers.clients(of: server, among: mine)
        return local + remote.filter { !local.contains($0) }
    }

    /// The display's server answered the agent late (it served another client alone meanwhile:
    /// a grab of the child's, however short, made again and again while her game takes the
    /// keyboard inside each): every program of the user's connected to the server counts for
    /// that while, beside what was in front (the report's union counts an application once).
    func servedAnother(_ key: String, from: ContinuousClock.Instant, to: ContinuousClock.Instant) {
        guard
            let (owner, server, display) = state.withLock({ state -> (UInt32, Int32, String)? in
                guard let session = state.sessions[key], session.hold == nil, !session.idle,
                    let server = session.server?.pid
                else { return nil }
                return (session.owner, server, session.display)
            })
        else { return }
        let now = ContinuousClock.now
        var applications: [ForegroundApplication]
        if let known = connectedApplications.withLock({ $0[key] }), now - known.at < .seconds(1) {
            applications = known.applications
        } else {
            let clients = displayClients(
                server: server, owner: owner, listening: X11Display(display)?.unixAddresses ?? [])
            applications = self.applications(key, pids: clients.isEmpty ? [nil] : clients.map { $0 })
            connectedApplications.withLock { known in
                known = known.filter { now - $0.value.at < .seconds(10) }
                known[key] = (now, applications)
            }
        }
        let wall = Date()
        func seconds(_ duration: Duration) -> TimeInterval {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        let start = wall.addingTimeInterval(-seconds(now - from))
        let end = wall.addingTimeInterval(-seconds(now - to))
        logger.debug(
            "the display's server answered late: every program connected to it counts for the wait",
            metadata: [
                "session": "\(key)", "waited": "\(to - from)",
                "applications": "\(applications.map(\.reportID))",
            ])
        state.withLock { state in Self.addSpan(&state, key, applications, from: start, to: end) }
        flushContinuation.yield()
    }

    /// A span already over, for `applications`: each one's row of the session that ended within
    /// the merge gap before it grows to its end, or a row of its own is made.
    static func addSpan(
        _ state: inout State, _ key: String, _ applications: [ForegroundApplication], from start: Date, to end: Date
    ) {
        guard end > start, var session = state.sessions[key] else { return }
        let gap = Self.gap(&session)
        for application in applications {
            let token = application.token.base64
            let near = state.rows.first { _, row in
                row.stored.session == key && row.stored.token == token && row.stored.uid == application.owner
                    && row.stored.start <= start && row.stored.end >= start.addingTimeInterval(-gap)
            }?.key
            if let near {
                // An open row grows by itself; a closed one to the span's end.
                guard state.rows[near]?.open == false else { continue }
                if let before = state.rows[near]?.stored.end, before < end {
                    state.rows[near]?.stored.end = end
                    state.rows[near]?.dirty = true
                }
            } else {
                _ = Self.newRow(&state, &session, key, application, from: start, to: end, open: false)
            }
        }
        state.sessions[key] = session
    }

    /// How soon after a row of the same application's ended one may grow again (longer once a
    /// session started many rows within a minute).
    static func gap(_ session: inout Session) -> TimeInterval {
        if SuspendingClock.now - session.minuteStart > .seconds(60) {
            session.minuteStart = .now
            session.rowsStarted = 0
        }
        return session.rowsStarted >= rowsPerMinute ? floodGap : mergeGap
    }

    /// A new row of a session's for `application`; its serial.
    static func newRow(
        _ state: inout State, _ session: inout Session, _ key: String, _ application: ForegroundApplication,
        from start: Date, to end: Date, open: Bool
    ) -> Int {
        let serial = state.nextRow
        state.nextRow += 1
        state.rows[serial] = Row(
            stored: StateDatabase.UsageRow(
                id: nil, uid: application.owner, session: key, token: application.token.base64,
                identity: application.reportID, displayName: application.name,
                categories: application.categories, start: start, end: end),
            open: open)
        session.rowsStarted += 1
        return serial
    }

    /// Idle and back from a sway session's compositor (its Wayland socket, served by the same
    /// process as its IPC socket), tried again while the session lasts.
    func watchWaylandIdle(_ key: String, _ path: String, _ mine: StopSignal, compositor: Int32) {
        var delay: Duration = .seconds(1)
        while let session = state.withLock({ $0.sessions[key] }), session.stop === mine, !session.stop.isRaised {
            do throws(SystemError) {
                let watch = try WaylandIdleWatch(path: path)
                guard watch.server.pid == compositor else {
                    throw SystemError(.command, "\(path) is not served by the compositor (pid \(watch.server.pid))")
                }
                let box = IdleBox(watch)
                state.withLock { state in
                    let previous = state.sessions[key]?.interrupt
                    state.sessions[key]?.interrupt = {
                        previous?()
                        box.interrupt()
                    }
                    if let source = state.sessions[key]?.source, !source.contains("idle from") {
                        state.sessions[key]?.source = source + "; idle from the compositor"
                    }
                }
                let timeout = Duration.seconds(configuration.idleTimeout)
                try watch.run(stop: mine, idleAfter: timeout) { change in
                    changed(key, change == .idle ? .idle(idleFor: timeout) : .active)
                }
                return
            } catch {
                logger.notice("cannot read idle", metadata: ["session": "\(key)", "error": "\(error.message)"])
                state.withLock { state in
                    // A compositor's extension that tells idle says so itself.
                    if let source = state.sessions[key]?.source, !source.contains("idle is not told"),
                        !source.contains("screentime-focus")
                    {
                        state.sessions[key]?.source =
                            source.replacingOccurrences(of: "; idle from the compositor", with: "")
                            + "; idle is not told (\(error.message.prefix(80)))"
                    }
                }
                mine.wait(for: delay)
                delay = min(delay * 2, .seconds(60))
            }
        }
    }

    /// The cookies to try, in order: those of the server's own `-auth` file (read as root when
    /// the server is root's; when it is the user's, only a file of theirs), then those of the
    /// Xauthority files the hints name that are the session user's (a file of anyone else's is
    /// never read, so no other user's cookie goes to a server of the child's making), then none.
    private func cookies(
        for display: X11Display, server: PeerCredentials, files: [String], owner: UInt32
    ) -> [[UInt8]?] {
        let policy = processes.currentPolicy()
        var found: [[UInt8]?] = []
        func add(_ path: String, anyOwner: Bool) {
            guard let (bytes, status) = try? UntrustedFile.readWithStatus(path, limit: 65_536),
                anyOwner || policy.owner(ofKernelUID: status.owner) == owner
            else { return }
            for cookie in XAuthority.cookies(in: bytes, display: display.number)
            where !found.contains(where: { $0 == cookie }) {
                found.append(cookie)
            }
        }
        let arguments = inspector.commandLine(pid: server.pid)
        if let index = arguments.firstIndex(of: "-auth"), index + 1 < arguments.count,
            arguments[index + 1].hasPrefix("/")
        {
            add(arguments[index + 1], anyOwner: server.uid == 0)
        }
        for path in files { add(path, anyOwner: false) }
        return Array(found.prefix(16)) + [nil]
    }

    static func source(readsFocus: Bool, readsIdle: Bool) -> String {
        var source =
            readsFocus
            ? "X11 _NET_ACTIVE_WINDOW, window owners from X-Resource"
            : "X11, no window manager telling focus yet (_NET_ACTIVE_WINDOW)"
        if !readsIdle { source += "; no idle counter: idle time counts" }
        return source
    }

    /// What a session's watch saw.
    func changed(_ key: String, _ change: X11FocusWatch.Change) {
        let now = SuspendingClock.now
        switch change {
        case .support(let readsFocus, let readsIdle):
            state.withLock { $0.sessions[key]?.source = Self.source(readsFocus: readsFocus, readsIdle: readsIdle) }
        case .front(let windows, let conservative):
            state.withLock { state in
                state.sessions[key]?.conservative = conservative
                if state.sessions[key]?.problem == Self.stalledProblem { state.sessions[key]?.problem = nil }
            }
            focused(key, pids: windows.map(\.pid))
            return
        case .idle(let idleFor):
            // Counted up to the last input, not through the timeout that followed it.
            state.withLock { state in
                Self.endFront(&state, key, at: now - idleFor)
                state.sessions[key]?.idle = true
            }
        case .answeredLate(let from, let to):
            servedAnother(key, from: from, to: to)
            return
        case .active:
            state.withLock { state in
                state.sessions[key]?.idle = false
                if state.sessions[key]?.front == nil, let applications = state.sessions[key]?.focused {
                    Self.beginFront(&state, key, applications)
                }
            }
        }
        flushContinuation.yield()
    }

    /// The windows in front are the processes `pids`' (nil: a window whose process the server
    /// cannot tell). A live process of someone not authorized is not the child's usage; a window
    /// whose process is gone (a connection handed over by a process that exited), unknown, or in
    /// a pid namespace of the server's own is the session user's, under an unidentified program.
    /// `onlyIfStill`: only if those pids are still the ones in front; `unless`: not once it says so
    /// (asked as the change is made). Returns whether it was applied.
    @discardableResult
    func focused(
        _ key: String, pids: [Int32?], onlyIfStill: Bool = false, unless: (@Sendable () -> Bool)? = nil
    ) -> Bool {
        let now = SuspendingClock.now
        let owner = state.withLock { $0.sessions[key]?.owner }
        let applications = applications(key, pids: pids)
        logger.debug(
            "in front",
            metadata: [
                "session": "\(key)", "pids": "\(pids)",
                "applications": "\(applications.map(\.reportID))",
            ])
        let applied = state.withLock { state -> Bool in
            // A look again at what was in front (a program started): the watch may have told
            // something newer meanwhile, which stands.
            if onlyIfStill, state.sessions[key]?.frontPIDs != pids { return false }
            if let unless, unless() { return false }
            state.sessions[key]?.frontPIDs = pids
            // The same applications as counting now: nothing to change.
            if let front = state.sessions[key]?.front,
                front.applications.map(\.token) == applications.map(\.token)
            {
                return true
            }
            Self.endFront(&state, key, at: now)
            state.sessions[key]?.focused = applications
            if state.sessions[key]?.idle == false { Self.beginFront(&state, key, applications) }
            return true
        }
        guard applied else { return false }
        flushContinuation.yield()
        if let owner {
            for pid in Set(pids.compactMap { $0 }) {
                if let thing = processes.shieldedApplication(pid: pid, owner: owner) {
                    shieldEvents.tell(.inFront(thing))
                }
            }
        }
        return true
    }

    /// The applications the processes `pids` of a session are (see `focused`).
    func applications(_ key: String, pids: [Int32?]) -> [ForegroundApplication] {
        let (owner, foreign, x11Server, display) = state.withLock { state in
            let session = state.sessions[key]
            return (
                session?.owner, session?.foreignPIDs ?? false,
                session?.kind == .x11 ? session?.server?.pid : nil, session?.display ?? ""
            )
        }
        // The display's socket (`:N`), by path and abstract name: the server's connections are
        // those it accepted there.
        let addresses = X11Display(display)?.unixAddresses ?? []
        let policy = processes.currentPolicy()
        var applications: [ForegroundApplication] = []
        func add(_ found: [ForegroundApplication]) {
            for application in found
            where !applications.contains(where: { $0.token == application.token && $0.owner == application.owner }) {
                applications.append(application)
            }
        }
        var unidentified = false
        var lookedOverTCP = false
        for pid in pids {
            guard let pid, !foreign else {
                unidentified = true
                // A window whose client the server cannot name: one connected over TCP (a server
                // of the user's listening there) is found in the kernel's table of the server's
                // connections, and every program of the user's connected so counts.
                if pid == nil, !foreign, !lookedOverTCP, let server = x11Server, let owner {
                    lookedOverTCP = true
                    let mine = processes.trackedProcesses().filter { $0.owner == owner }.map(\.pid)
                    for other in TCPPeers.clients(of: server, among: mine) {
                        add(processes.foregroundApplications(pid: other))
                    }
                }
                continue
            }
            let found = processes.foregroundApplications(pid: pid)
            if let server = x11Server, let owner {
                // The server knows the process that connected, which may since have run another
                // program, or given its connection to another process: every process of the
                // user's holding that connection counts, and a window whose connection its
                // process no longer holds counts as unidentified too.
                let mine = processes.trackedProcesses().filter { $0.owner == owner }.map(\.pid)
                if let shared = try? UnixPeers.sharers(of: pid, server: server, among: mine, listening: addresses) {
                    if !shared.holds, UnixPeers.canPair(server: server, listening: addresses) { unidentified = true }
                    for other in shared.sharers { add(processes.foregroundApplications(pid: other)) }
                }
                // A relay of the user's (a display of their own making, passed on to the real
                // one): the programs connected through it draw there, and count (through
                // relays of relays too, a few deep).
                if let all = try? UnixPeers.sockets() {
                    var relays = [pid]
                    var seen: Set<Int32> = [pid]
                    for _ in 0..<4 where !relays.isEmpty {
                        let next = relays.flatMap { UnixPeers.relayedClients(by: $0, among: mine, sockets: all) }
                        relays = next.filter { seen.insert($0).inserted }
                        for other in relays {
                            let drawn = processes.foregroundApplications(pid: other)
                            if drawn.isEmpty { unidentified = true } else { add(drawn) }
                        }
                    }
                }
            }
            if !found.isEmpty {
                add(found)
            } else if let status = inspector.status(pid: pid) {
                // Alive: the session user's own (not known to the shield yet) counts, unidentified.
                if policy.owner(ofKernelUID: status.uid) == owner { unidentified = true }
            } else {
                unidentified = true
            }
        }
        if unidentified, let owner, let application = unidentifiedApplication(owner: owner) { add([application]) }
        return applications
    }

    /// Where a program of the user's shows in each of their sessions the agent reads now: its
    /// kind, and the environment that names the display (an X11 display and a cookie file of the
    /// user's own, or a Wayland socket and its directory).
    func displays(of uid: UInt32) -> [(key: String, kind: SessionKind, environment: [String: String])] {
        let sessions = state.withLock { state in
            state.sessions.filter { $0.value.owner == uid && $0.value.connected }.map { ($0.key, $0.value) }
        }
        return sessions.sorted { $0.0 < $1.0 }.compactMap { key, session in
            switch session.kind {
            case .x11:
                var environment = ["DISPLAY": session.display]
                // A cookie file of the user's own (hinted by their programs), if any.
                for file in session.authorityFiles {
                    if let status = FileStatus.of(path: file), status.owner == uid, status.isRegular {
                        environment["XAUTHORITY"] = file
                        break
                    }
                }
                if let bus = session.sessionBus { environment["DBUS_SESSION_BUS_ADDRESS"] = bus }
                return (key, .x11, environment)
            case .sway, .wayland:
                guard let socket = session.kind == .sway ? session.waylandSocket : session.display else { return nil }
                let directory = String(socket[..<(socket.lastIndex(of: "/") ?? socket.startIndex)])
                let name = String(
                    socket[(socket.lastIndex(of: "/").map { socket.index(after: $0) } ?? socket.startIndex)...])
                var environment = ["WAYLAND_DISPLAY": name, "XDG_RUNTIME_DIR": directory]
                if let bus = session.sessionBus { environment["DBUS_SESSION_BUS_ADDRESS"] = bus }
                return (key, session.kind, environment)
            default:
                return nil
            }
        }
    }

    /// The user started a program: what is in front in their X11 sessions is looked at again
    /// (the new program may hold a connection of a window in front).
    func refocus(owner: UInt32) {
        let keys = state.withLock { state in
            state.sessions.filter { $0.value.owner == owner && $0.value.kind == .x11 && $0.value.connected }
                .map { ($0.key, $0.value.frontPIDs) }
        }
        for (key, pids) in keys where !pids.isEmpty { focused(key, pids: pids, onlyIfStill: true) }
    }

    /// Time starts counting for every application the process in front can be taken for: a
    /// child who starts a game as another application's desktop file (evidence a child can
    /// forge) has its time counted for both, never for the other alone.
    /// What a window counts as when its process cannot be told.
    func unidentifiedApplication(owner: UInt32) -> ForegroundApplication? {
        guard let identity = try? ApplicationIdentity.executable(sha256: String(repeating: "0", count: 64)) else {
            return nil
        }
        return ForegroundApplication(
            owner: owner, identity: identity, token: minter.token(for: identity),
            name: "unidentified (a window whose process the display cannot tell)", categories: [])
    }

    static func beginFront(_ state: inout State, _ key: String, _ applications: [ForegroundApplication]) {
        guard !applications.isEmpty, var session = state.sessions[key], session.hold == nil else { return }
        let wall = Date()
        let gap = Self.gap(&session)
        var serials: [Int] = []
        var ends: [Date] = []
        for application in applications {
            let token = application.token.base64
            // The same application again soon after in the same session: its row grows again.
            let reused = state.rows.first { _, row in
                row.stored.session == key && row.stored.token == token && row.stored.uid == application.owner
                    && !row.open && row.stored.end >= wall.addingTimeInterval(-gap)
            }?.key
            if let reused {
                serials.append(reused)
                ends.append(state.rows[reused]?.stored.end ?? wall)
                state.rows[reused]?.open = true
            } else {
                serials.append(Self.newRow(&state, &session, key, application, from: wall, to: wall, open: true))
                ends.append(wall)
            }
        }
        state.sessions[key] = session
        state.sessions[key]?.front = Front(
            applications: applications, startWall: wall, startClock: .now, rows: serials, rowEnds: ends)
    }

    static func endFront(_ state: inout State, _ key: String, at instant: SuspendingClock.Instant) {
        guard let front = state.sessions[key]?.front else { return }
        state.sessions[key]?.front = nil
        let end = front.wall(at: max(instant, front.startClock))
        for (serial, had) in zip(front.rows, front.rowEnds) {
            guard var row = state.rows[serial] else { continue }
            // The span's own end, also when it is earlier than what was written while it was open
            // (every checkpoint and report writes an open span up to then): idle found 5 minutes
            // after the last input takes back the 5 minutes written meanwhile. Never less than
            // the row had before this span (a row grown again, the wall clock set back between).
            row.stored.end = max(end, had)
            row.open = false
            row.dirty = true
            state.rows[serial] = row
        }
    }
}

/// A sway watch, shared with whoever must interrupt it (its own thread uses it).
private final class SwayBox: @unchecked Sendable {
    let watch: SwayFocusWatch
    init(_ watch: SwayFocusWatch) { self.watch = watch }
    func interrupt() { watch.interrupt() }
}

/// A Wayland idle watch, shared with whoever must interrupt it (its own thread uses it).
private final class IdleBox: @unchecked Sendable {
    let watch: WaylandIdleWatch
    init(_ watch: WaylandIdleWatch) { self.watch = watch }
    func interrupt() { watch.interrupt() }
}

/// An X11 watch, shared with whoever must interrupt it (its own thread uses it).
private final class WatchBox: @unchecked Sendable {
    let watch: X11FocusWatch
    init(_ watch: X11FocusWatch) { self.watch = watch }
    func interrupt() { watch.interrupt() }
}
