import FoundationEssentials
import LinuxSupport

/// Focus told by the compositor itself: GNOME Shell runs the screentime-focus extension
/// (packaging/gnome-shell) inside the compositor process, which connects to `focusSocket` and
/// writes a line of JSON at each change of the window in front, and when the session goes idle
/// and comes back. A connection is listened to only while the kernel says its peer is the
/// compositor of a Wayland session the agent reads (the process serving the session's socket,
/// the session user's); anyone else's is closed at once. What it says is still the compositor's
/// claim: the pid it names counts only if that process is the session user's (else no one's),
/// and when it goes quiet (the extension disabled, the shell restarted) the session is counted
/// the conservative way again.
extension UsageTracker {
    /// What a compositor's extension told, by the compositor's pid.
    struct ShellReport: Sendable {
        var uid: UInt32
        var startTime: UInt64?
        /// nil until the first focus line; then the pid in front, or nil (`.some(nil)`) for none.
        var focus: Int32??
        var idle = false
        var lines = 0
        /// The relay it came through (KWin's), if not straight from the compositor.
        var relay: Int32?
    }

    /// How long a focus relayed from KWin's script stands without being told again.
    static let relayedFocusLife = Duration.seconds(15)

    /// Lines longer than this end the connection.
    static let reportLineLimit = 4096

    /// The listener's thread: accepts connections while the tracker runs.
    func serveShellReports(_ path: String, _ stop: StopSignal) {
        let listener: UnixSocket
        do throws(SystemError) {
            let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
            if !Files.exists(directory) { try Files.makeDirectory(directory, mode: 0o755) }
            listener = try UnixSocket.listen(at: path, mode: 0o666)
        } catch {
            logger.error("cannot listen for compositors' focus", metadata: ["error": "\(error.message)"])
            return
        }
        logger.info("listening for compositors' focus", metadata: ["socket": "\(path)"])
        while !stop.isRaised {
            guard let connection = try? listener.accept(unless: stop) else {
                if stop.isRaised { break }
                stop.wait(for: .milliseconds(50))
                continue
            }
            guard let peer = try? connection.peerCredentials(), let key = waylandSession(servedBy: peer) else {
                continue  // not a compositor the agent reads: closed (the extension tries again)
            }
            let started = inspector.startTime(pid: peer.pid)
            let admitted = shellReports.withLock { reports in
                guard reports[peer.pid] == nil else { return false }
                reports[peer.pid] = ShellReport(uid: peer.uid, startTime: started)
                return true
            }
            guard admitted else { continue }
            startThread(
                "screentime.shell", otherwise: { shellReports.withLock { _ = $0.removeValue(forKey: peer.pid) } }
            ) {
                [self] in readShellReports(connection, peer, key, stop)
            }
        }
        Files.remove(path)
    }

    /// The Wayland session (counted the conservative way) whose compositor `peer` is, if any.
    private func waylandSession(servedBy peer: PeerCredentials) -> String? {
        let policy = processes.currentPolicy()
        return state.withLock { state in
            state.sessions.first { _, session in
                session.kind == .wayland && session.server?.pid == peer.pid
                    && policy.owner(ofKernelUID: peer.uid) == session.owner
            }?.key
        }
    }

    private func readShellReports(_ connection: UnixSocket, _ peer: PeerCredentials, _ key: String, _ stop: StopSignal)
    {
        defer {
            shellReports.withLock { $0[peer.pid] = nil }
            nudgeSession(key)
        }
        let greeting = "{\"idleTimeoutMilliseconds\":\(configuration.idleTimeout * 1000)}\n"
        guard (try? connection.write(Array(greeting.utf8), until: .now + .seconds(2))) != nil else { return }
        logger.info("a compositor tells its focus", metadata: ["session": "\(key)", "compositor": "pid \(peer.pid)"])
        var buffer: [UInt8] = []
        while !stop.isRaised {
            let got: [UInt8]
            do throws(SystemError) {
                got = try connection.receive(upTo: Self.reportLineLimit, until: .now + .seconds(30)).bytes
            } catch {
                if error.code == .timedOut { continue }
                break
            }
            if got.isEmpty { break }
            buffer += got
            while let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                guard let message = try? JSONDecoder().decode(ShellMessage.self, from: Data(line)) else {
                    logger.notice(
                        "a compositor's line is not understood",
                        metadata: [
                            "compositor": "pid \(peer.pid)",
                            "line": "\(String(decoding: line.prefix(80), as: UTF8.self))",
                        ])
                    continue
                }
                shellReports.withLock { reports in
                    if let focus = message.focus { reports[peer.pid]?.focus = .some(focus?.pid) }
                    if let idle = message.idle { reports[peer.pid]?.idle = idle }
                    reports[peer.pid]?.lines += 1
                }
                nudgeSession(key)
            }
            if buffer.count > Self.reportLineLimit {
                logger.notice(
                    "a compositor's line is too long: its connection is closed",
                    metadata: ["compositor": "pid \(peer.pid)"])
                break
            }
        }
    }

    /// KWin's focus: its screentime-focus script calls org.screentime.Focus on the session bus,
    /// where a relay the agent starts as the session's user (`screentime-shield --focus-relay`,
    /// through the launcher) owns the name and writes each call, with the caller's pid as the bus
    /// says it, on a pipe only the agent reads. A call counts only when that caller is the
    /// session's compositor (or holds its socket: Plasma's wrapper hands it to the kwin_wayland it
    /// starts); the pid it names counts only if it is the user's (as the extension's). The relay killed, its name taken or the bus gone: the session is counted the
    /// conservative way while the relay is started again (after 1 s, doubling up to a minute).
    func relayFocus(
        _ key: String, _ mine: StopSignal, socket: String, compositor: Int32, startTime: UInt64?, uid: UInt32
    ) {
        var delay: Duration = .seconds(1)
        while !mine.isRaised, inspector.startTime(pid: compositor) == startTime,
            state.withLock({ $0.sessions[key]?.stop === mine })
        {
            // The compositor's own bus: where its script's calls go.
            let environment = inspector.sessionEnvironment(pid: compositor)
            guard let relays, relays.exists, let bus = environment["DBUS_SESSION_BUS_ADDRESS"]
            else {
                logger.notice(
                    "KWin's focus cannot be relayed: no relay program or no session bus",
                    metadata: ["session": "\(key)"])
                return
            }
            var session = ["DBUS_SESSION_BUS_ADDRESS": bus]
            if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
                session["XDG_RUNTIME_DIR"] = runtime
            }
            let began = ContinuousClock.now
            if let relay = relays.start(as: uid, session: session, key: key, arguments: ["--focus-relay"]) {
                readRelay(relay, key, mine, socket: socket, compositor: compositor, startTime: startTime, uid: uid)
                relays.stop(relay)
                relay.close()
                shellReports.withLock { reports in
                    if reports[compositor]?.relay == relay.pid { reports[compositor] = nil }
                }
                nudgeSession(key)
            }
            delay = ContinuousClock.now - began > .seconds(60) ? .seconds(1) : min(delay * 2, .seconds(60))
            mine.wait(for: delay)
        }
    }

    /// Reads one relay's lines until it ends, its session or compositor does, or it says wrong.
    private func readRelay(
        _ relay: SessionProgram, _ key: String, _ mine: StopSignal, socket: String,
        compositor: Int32, startTime: UInt64?, uid: UInt32
    ) {
        var refused = 0
        var verified: (pid: Int32, startTime: UInt64?)?
        // When the compositor last told its focus: the script says it every 5 s, so a word older
        // than `relayedFocusLife` is a script turned off (or unloaded), and stands no more.
        var lastTold: ContinuousClock.Instant?
        var refusedCallers: Set<Int32> = []
        var notHolding: [Int32: UInt64?] = [:]
        // Whether the compositor is still the one read: looked at when the relay has been quiet,
        // and every 64 lines (a flood of a child's bus calls costs no /proc read per line).
        var linesSinceLook = 0
        while !mine.isRaised {
            if linesSinceLook == 0, inspector.startTime(pid: compositor) != startTime { return }
            let reading = relay.readLine(limit: Self.reportLineLimit, timeout: .seconds(1))
            linesSinceLook = reading == .quiet ? 0 : (linesSinceLook + 1) % 64
            // A relay stopped (SIGSTOP) tells nothing while what it last told stands: ended, and
            // started again. Looked at when it has been quiet a second, not at each line.
            if reading == .quiet, let state = inspector.state(pid: relay.pid), state == "T" || state == "t" {
                logger.notice(
                    "KWin's focus relay was stopped", metadata: ["session": "\(key)", "relay": "pid \(relay.pid)"])
                return
            }
            if let told = lastTold, ContinuousClock.now - told > Self.relayedFocusLife {
                lastTold = nil
                logger.notice(
                    "KWin's script has not told its focus for \(Self.relayedFocusLife): every connected app counts",
                    metadata: ["session": "\(key)"])
                shellReports.withLock { reports in
                    guard reports[compositor] != nil else { return }
                    reports[compositor]?.focus = .some(nil)
                }
                nudgeSession(key)
            }
            let line: [UInt8]
            switch reading {
            case .quiet: continue
            case .ended:
                logger.notice(
                    "KWin's focus relay ended (or said a line over \(Self.reportLineLimit) bytes)",
                    metadata: ["session": "\(key)", "relay": "pid \(relay.pid)"])
                return
            case .line(let said): line = said
            }
            guard let message = try? JSONDecoder().decode(RelayMessage.self, from: Data(line)) else {
                // The relay writes only what it makes: a line not understood ends it.
                logger.notice(
                    "a focus relay's line is not understood: it is ended",
                    metadata: [
                        "relay": "pid \(relay.pid)", "line": "\(String(decoding: line.prefix(80), as: UTF8.self))",
                    ])
                return
            }
            if let problem = message.error {
                logger.notice(
                    "KWin's focus cannot be relayed",
                    metadata: ["session": "\(key)", "problem": "\(problem.prefix(200))"])
                return
            }
            if message.ready == true {
                logger.info(
                    "a focus relay serves KWin's script",
                    metadata: ["session": "\(key)", "relay": "pid \(relay.pid)"])
                continue
            }
            guard let focus = message.focus else { continue }
            // The compositor: the process that listens on the session's socket, or one that
            // holds it (Plasma's kwin_wayland_wrapper listens and hands the socket to the
            // kwin_wayland it starts, where the script runs). Not merely a child of it: a
            // compositor of the child's choosing may start any program.
            guard let sender = message.sender, sender > 0,
                sender == compositor || holds(sender, socket: socket, &verified, &notHolding)
            else {
                // Someone on the bus who is not the compositor: not listened to (said for each
                // new caller, a few dozen at most, and then once in a while).
                refused += 1
                let caller = message.sender ?? 0
                let new = refusedCallers.count < 32 && refusedCallers.insert(caller).inserted
                if new || refused % 100 == 0 {
                    logger.notice(
                        "a focus call not from the compositor was ignored",
                        metadata: [
                            "session": "\(key)", "caller": "pid \(message.sender ?? 0)", "calls": "\(refused)",
                        ])
                }
                continue
            }
            lastTold = .now
            shellReports.withLock { reports in
                var report = reports[compositor] ?? ShellReport(uid: uid, startTime: startTime, relay: relay.pid)
                report.relay = relay.pid
                report.focus = .some(focus?.pid)
                report.lines += 1
                reports[compositor] = report
            }
            nudgeSession(key)
        }
    }

    /// Whether `pid` holds a Unix socket bound to `socket` (the listening one, or a connection
    /// accepted on it): the kernel's answer (sock_diag), remembered for that process.
    /// Processes found not to hold it are remembered too (a few dozen): a caller repeating its
    /// calls costs no more dumps.
    private func holds(
        _ pid: Int32, socket: String, _ verified: inout (pid: Int32, startTime: UInt64?)?,
        _ refused: inout [Int32: UInt64?]
    ) -> Bool {
        let started = inspector.startTime(pid: pid)
        if let known = verified, known.pid == pid, known.startTime == started { return true }
        if let known = refused[pid], known == started { return false }
        guard let sockets = try? UnixPeers.sockets() else { return false }
        let bound = Set(sockets.filter { $0.value.name == socket }.keys)
        guard !bound.isEmpty, !UnixPeers.socketInodes(pid: pid).isDisjoint(with: bound) else {
            if refused.count >= 64 { refused.removeAll() }
            refused[pid] = started
            return false
        }
        verified = (pid, started)
        return true
    }

    /// Wakes a Wayland session's watch (a report came, or its reporter went).
    private func nudgeSession(_ key: String) {
        let nudge = nudges.withLock { nudges in nudges.values.lazy.compactMap { $0[key] }.first }
        nudge?.signal()
    }

    /// What the compositor `pid` (started at `startTime`) told of its focus and idle, once it
    /// told its focus at all.
    func shellReport(compositor pid: Int32, startTime: UInt64?) -> ShellReport? {
        shellReports.withLock { reports in
            guard let report = reports[pid], report.startTime == startTime, report.focus != nil else { return nil }
            return report
        }
    }
}

/// A relay's line: `{"sender": S, "focus": {"pid": N}}`, `{"sender": S, "focus": null}`,
/// `{"ready": true}`, `{"error": "…"}`.
struct RelayMessage: Decodable {
    var sender: Int32?
    var focus: ShellMessage.Focus??
    var ready: Bool?
    var error: String?

    enum CodingKeys: String, CodingKey { case sender, focus, ready, error }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sender = try container.decodeIfPresent(Int32.self, forKey: .sender)
        if container.contains(.focus) {
            focus = .some(
                try container.decodeNil(forKey: .focus)
                    ? nil : try container.decode(ShellMessage.Focus.self, forKey: .focus))
        }
        ready = try container.decodeIfPresent(Bool.self, forKey: .ready)
        error = try container.decodeIfPresent(String.self, forKey: .error)
    }
}

/// A compositor's line: `{"focus": {"pid": N, "appId": "…"}}`, `{"focus": null}`,
/// `{"idle": true}`; anything else in it is ignored.
struct ShellMessage: Decodable {
    struct Focus: Decodable {
        var pid: Int32?
    }

    /// nil: no focus in the line; `.some(nil)`: no window in front.
    var focus: Focus??
    var idle: Bool?

    enum CodingKeys: String, CodingKey { case focus, idle }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if container.contains(.focus) {
            focus = .some(
                try container.decodeNil(forKey: .focus) ? nil : try container.decode(Focus.self, forKey: .focus))
        }
        idle = try container.decodeIfPresent(Bool.self, forKey: .idle)
    }
}
