import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Finding sessions.
extension UsageTracker {
    /// A program an authorized user's process runs: its environment may name a session.
    func hint(pid: Int32, owner: UInt32) {
        hints.add(pid: pid, owner: owner)
    }

    /// Wakes the user's Wayland sessions counted the conservative way: a program of theirs started,
    /// and its connection is looked for soon.
    func nudge(owner: UInt32) {
        for nudge in nudges.withLock({ $0[owner].map { Array($0.values) } ?? [] }) { nudge.signal() }
    }

    /// The finder's thread: reads the environments of new programs (off the process watcher's
    /// thread: a child's memory is slow to read when the child makes it so) and starts a watch
    /// for each display not watched yet.
    func findSessions() {
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
                        startThread("screentime.wayland", otherwise: forgetting(key, mine)) { [self] in
                            watchWayland(key, path, mine)
                        }
                    }
                }
                if let path = environment["SWAYSOCK"], path.hasPrefix("/"), path.utf8.count < 108,
                    FileStatus.of(path: path)?.isSocket == true
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
                        startThread("screentime.sway", otherwise: forgetting(key, mine)) { [self] in
                            watchSway(key, path, mine, wayland: socket)
                        }
                    }
                }
            }
        }
    }

    /// The session's D-Bus address, from the first program of the session's that named one.
    func noteBus(_ environment: [String: String], key: String) {
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
            if let mine = isNew {
                startThread("screentime.x11", otherwise: forgetting(key, mine)) { [self] in watchX11(key, shown, mine) }
            }
        }
    }

    /// Records a session a hint names; returns its stop signal when it is new (then its watch
    /// is started, and runs while the session under its key is this one).
    func noteSession(
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

    /// Starts a thread of the tracker's; when the system starts none (its limit of threads), it
    /// says so and runs `undo` (what was noted for the thread is taken back, to be tried again).
    func startThread(_ name: String, otherwise undo: () -> Void = {}, _ body: @escaping @Sendable () -> Void) {
        guard Threads.start(name, body) else {
            logger.error("no thread could be started (the system's limit of threads)", metadata: ["thread": "\(name)"])
            undo()
            return
        }
    }

    /// Takes back a session noted for a watch that could not start: a later hint notes it again.
    func forgetting(_ key: String, _ mine: StopSignal) -> () -> Void {
        {
            self.state.withLock { state in
                if state.sessions[key]?.stop === mine { state.sessions[key] = nil }
            }
        }
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
}
