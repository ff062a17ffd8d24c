import LinuxSupport

/// logind, where it runs: its sessions of authorized users name displays to read (checked as
/// every hint is), and its hints stop the clock — a locked session, a session that is not the
/// seat's active one (a switched-away user) and a session its desktop told logind is idle count
/// nothing, whatever input comes. Without logind (no system bus, as on the test machines) the
/// sessions are still found from the users' programs and idle read from the display itself.
extension UsageTracker {
    /// The logind thread: connects, follows the signals, and connects again when the bus goes
    /// (backing off to five minutes between tries, where no bus runs at all).
    func watchLogind(_ stop: StopSignal) {
        var delay: Duration = .seconds(1)
        var said = false
        while !stop.isRaised {
            do throws(SystemError) {
                let watch = try LogindWatch(address: configuration.logindBus) { logindChanged($0) }
                state.withLock { $0.logindProblem = nil }
                logger.info("reading logind's sessions", metadata: ["bus": "\(configuration.logindBus)"])
                said = false
                delay = .seconds(1)
                try watch.run(stop: stop) { logindChanged($0) }
            } catch {
                state.withLock { $0.logindProblem = error.message }
                if !said {
                    logger.notice("logind is not read", metadata: ["error": "\(error.message)"])
                    said = true
                }
            }
            // What logind said no longer holds: nothing is held by a logind not heard.
            state.withLock { $0.logind = [:] }
            updateHolds()
            stop.wait(for: delay)
            delay = min(delay * 2, .seconds(300))
        }
    }

    /// A session logind told of (new, changed or ended). Every user's is kept (a user
    /// authorized later has theirs read then); only an authorized user's names a display.
    func logindChanged(_ told: LogindWatch.Session) {
        let owner = processes.currentPolicy().owner(ofKernelUID: told.uid) ?? told.uid
        state.withLock { state in
            if !told.removed, told.sessionClass.isEmpty || told.sessionClass == "user", state.logind.count < 4096 {
                state.logind[told.id] = LogindRecord(owner: owner, session: told)
            } else {
                state.logind[told.id] = nil
            }
        }
        if !told.removed, owners.withLock({ $0.contains(owner) }) { logindHints(told, owner: owner) }
        updateHolds(idleSince: told.idle ? told.idleSinceMonotonic : 0)
    }

    /// What a session of an authorized user's names, as hints (checked as any): its leader's
    /// environment, and its X11 display.
    func logindHints(_ told: LogindWatch.Session, owner: UInt32) {
        if told.leader > 1 { hint(pid: told.leader, owner: owner) }
        if told.type == "x11", let display = X11Display(told.display) {
            noteX11(display, owner: owner, authority: nil)
        }
    }

    /// Each session's hold from what logind says now; the clock stops when a hold comes (for
    /// idle, at the moment logind says input stopped) and starts again when it goes.
    func updateHolds(idleSince: UInt64 = 0) {
        let now = SuspendingClock.now
        var changes: [(String, String?)] = []
        state.withLock { state in
            for (key, session) in state.sessions {
                let hold = Self.hold(for: session, told: Self.logindSessions(state, matching: session))
                guard hold != session.hold else { continue }
                changes.append((key, hold))
                if hold != nil {
                    Self.endFront(&state, key, at: Self.instant(monotonicMicroseconds: idleSince, now: now))
                    state.sessions[key]?.hold = hold
                } else {
                    state.sessions[key]?.hold = nil
                    if session.idle == false { Self.beginFront(&state, key, session.focused) }
                }
            }
        }
        for (key, hold) in changes {
            logger.info(
                hold == nil ? "counting again" : "counting nothing",
                metadata: ["session": "\(key)", "why": "\(hold ?? "")"])
        }
        if !changes.isEmpty { flushContinuation.yield() }
    }

    /// logind's sessions that are this session: the same user's, on the same X11 display, or a
    /// Wayland session of theirs for a sway session.
    static func logindSessions(_ state: State, matching session: Session) -> [LogindWatch.Session] {
        state.logind.values.filter { record in
            guard record.owner == session.owner else { return false }
            switch session.kind {
            case .x11:
                guard let told = X11Display(record.session.display) else { return false }
                return X11Display(session.display)?.number == told.number
            case .sway, .wayland: return record.session.type == "wayland"
            default: return false
            }
        }.map(\.session)
    }

    /// Why a session counts nothing, from the logind sessions that are it: any of them locked
    /// or idle, or none of them the active one.
    static func hold(for session: Session, told: [LogindWatch.Session]) -> String? {
        guard !told.isEmpty else { return nil }
        if told.contains(where: \.locked) { return "locked (logind)" }
        if !told.contains(where: \.active) { return "not the active session of its seat (logind)" }
        if told.contains(where: \.idle) { return "idle (logind)" }
        return nil
    }

    /// `now`, or the past moment a CLOCK_MONOTONIC reading in microseconds names (logind's
    /// IdleSinceHintMonotonic), no earlier than a day ago.
    static func instant(monotonicMicroseconds: UInt64, now: SuspendingClock.Instant) -> SuspendingClock.Instant {
        guard monotonicMicroseconds > 0 else { return now }
        let current = SystemClocks.monotonicMicroseconds()
        guard monotonicMicroseconds < current else { return now }
        return now - .microseconds(min(current - monotonicMicroseconds, 86_400_000_000))
    }
}
