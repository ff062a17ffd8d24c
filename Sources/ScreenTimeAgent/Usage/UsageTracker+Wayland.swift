import Dispatch
import LinuxSupport

/// A Wayland session whose compositor does not tell the agent what is in front (GNOME's, KDE's,
/// weston, any but sway's): it is counted the conservative way, every app connected to the
/// compositor as if in front, so a desktop the agent cannot read never means free time. The
/// clients are what the kernel pairs with the compositor's own sockets, not what a program's
/// environment says; the compositor's own helpers (programs under /usr/lib and /usr/libexec) are
/// not apps. Nothing tells the agent when a window opens, so the clients are looked for again
/// every `clientRescan` — the one place the agent polls, and only in this degraded mode — and
/// soon after each program the user starts (`followUps`).
extension UsageTracker {
    static let clientRescan: Duration = .seconds(3)
    /// After the user starts a program: looks, this long after it, for its connection.
    static let followUps: [Duration] = [.milliseconds(300), .milliseconds(1500)]

    /// The Wayland socket a program's environment names (`WAYLAND_DISPLAY`, under
    /// `XDG_RUNTIME_DIR` when relative), if it is a socket.
    static func waylandSocket(_ environment: [String: String]) -> String? {
        guard var path = environment["WAYLAND_DISPLAY"], !path.isEmpty, !path.contains("\0") else { return nil }
        if !path.hasPrefix("/") {
            guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/"), !path.contains("/") else {
                return nil
            }
            path = runtime + "/" + path
        }
        guard path.utf8.count < 108, FileStatus.of(path: path)?.isSocket == true else {
            return nil
        }
        return path
    }

    func watchWayland(_ key: String, _ path: String, _ mine: StopSignal) {
        let nudge = DispatchSemaphore(value: 0)
        guard let owner = state.withLock({ $0.sessions[key]?.owner }) else { return }
        nudges.withLock { $0[owner, default: [:]][key] = nudge }
        defer {
            nudges.withLock { nudges in
                nudges[owner]?[key] = nil
                if nudges[owner]?.isEmpty == true { nudges[owner] = nil }
            }
        }
        var delay: Duration = .milliseconds(500)
        var failingSince: ContinuousClock.Instant?
        var idleStarted = false
        var relayed: Int32?
        while let session = state.withLock({ $0.sessions[key] }), session.stop === mine, !mine.isRaised {
            do throws(SystemError) {
                let server = try UnixPeers.server(of: path, timeout: .seconds(2))
                guard processes.currentPolicy().owner(ofKernelUID: server.uid) == session.owner else {
                    throw SystemError(.command, "\(path) is not served by the session's user (uid \(server.uid))")
                }
                let started = inspector.startTime(pid: server.pid)
                if readBySway(key, compositor: server.pid, owner: session.owner) { return }
                let name = inspector.commandLine(pid: server.pid).first.map {
                    String($0.split(separator: "/").last ?? "")
                }
                state.withLock { state in
                    state.sessions[key]?.interrupt = { nudge.signal() }
                    state.sessions[key]?.connected = true
                    state.sessions[key]?.problem = nil
                    state.sessions[key]?.server = (server.pid, started)
                    state.sessions[key]?.conservative = true
                    state.sessions[key]?.source =
                        "Wayland compositor \(name ?? "?") (pid \(server.pid)), whose focus cannot be read: "
                        + "every app connected to it counts"
                }
                failingSince = nil
                delay = .milliseconds(500)
                logger.info(
                    "counting a Wayland session's clients",
                    metadata: ["session": "\(key)", "server": "pid \(server.pid)"])
                if !idleStarted {
                    idleStarted = true
                    startThread("screentime.idle") { [self] in
                        watchWaylandIdle(key, path, mine, compositor: server.pid)
                    }
                }
                // KWin tells its focus through a script and the agent's relay on the session bus.
                if name?.hasPrefix("kwin_wayland") == true, relayed != server.pid {
                    relayed = server.pid
                    let uid = server.uid
                    startThread("screentime.relay") { [self] in
                        relayFocus(key, mine, socket: path, compositor: server.pid, startTime: started, uid: uid)
                    }
                }
                let conservativeSource =
                    "Wayland compositor \(name ?? "?") (pid \(server.pid)), whose focus cannot be read: "
                    + "every app connected to it counts"
                var shown: [Int32]?
                var told = false
                var idleTold = false
                var pending: [Duration] = []
                defer { if idleTold { changed(key, .active) } }
                while !mine.isRaised {
                    guard inspector.startTime(pid: server.pid) == started else {
                        throw SystemError(.command, "the compositor (pid \(server.pid)) ended")
                    }
                    if readBySway(key, compositor: server.pid, owner: session.owner) { return }
                    // The compositor's own extension tells its focus: the window in front counts.
                    if let report = shellReport(compositor: server.pid, startTime: started) {
                        if !told {
                            told = true
                            shown = nil
                            state.withLock { state in
                                state.sessions[key]?.conservative = false
                                // A relay tells focus only: idle is still the compositor's to say.
                                let idle =
                                    report.relay != nil
                                    && state.sessions[key]?.source.hasSuffix("; idle from the compositor") == true
                                state.sessions[key]?.source =
                                    "Wayland compositor \(name ?? "?") (pid \(server.pid)): "
                                    + (report.relay.map {
                                        "focus from its screentime-focus script, relayed by pid \($0)"
                                    }
                                        ?? "focus and idle from its screentime-focus extension")
                                    + ", the pid checked to be the user's and a client of the compositor "
                                    + "(else every connected app counts)" + (idle ? "; idle from the compositor" : "")
                            }
                        }
                        // Believed only when it names a client of this compositor: no window
                        // told, none, or a process that is not a client (pid 1, a program with
                        // no window) — every connected app counts, as without a script.
                        // Every process holding the named one's connection counts with it (the
                        // compositor names the process that connected, which may have handed
                        // its socket to the app it started), as on X11.
                        let (all, candidates) = try connectedClients(session.owner, server.pid, path)
                        var pids = (report.focus ?? nil).map { [$0] } ?? []
                        let believed = pids.first.map { all.contains($0) } ?? false
                        if let named = pids.first, believed {
                            let shared = try UnixPeers.sharers(
                                of: named, server: server.pid, among: candidates, listening: [path])
                            pids = ([named] + shared.sharers).sorted()
                        } else {
                            pids = apps(all)
                        }
                        // `status` says so when no word stands (none told, one expired, or one
                        // naming no client).
                        state.withLock { $0.sessions[key]?.conservative = !believed }
                        if pids != shown {
                            shown = pids
                            focused(key, pids: pids)
                        }
                        if report.idle != idleTold {
                            idleTold = report.idle
                            changed(key, report.idle ? .idle(idleFor: .seconds(configuration.idleTimeout)) : .active)
                        }
                        _ = nudge.wait(timeout: .now() + .seconds(Int(Self.clientRescan.components.seconds)))
                        continue
                    }
                    if told {
                        // The extension went quiet: every connected app counts again.
                        told = false
                        shown = nil
                        if idleTold {
                            idleTold = false
                            changed(key, .active)
                        }
                        state.withLock { state in
                            state.sessions[key]?.conservative = true
                            state.sessions[key]?.source = conservativeSource
                        }
                    }
                    let clients = apps(try connectedClients(session.owner, server.pid, path).clients)
                    if clients != shown {
                        shown = clients
                        focused(key, pids: clients)
                    }
                    // The next look: a follow-up owed, or a program started, or the rescan.
                    if let next = pending.first {
                        pending.removeFirst()
                        mine.wait(for: next)
                    } else if nudge.wait(timeout: .now() + .seconds(Int(Self.clientRescan.components.seconds)))
                        == .success
                    {
                        while nudge.wait(timeout: .now()) == .success {}
                        pending = Self.followUps
                    }
                }
                return
            } catch {
                if failed(key, error, since: &failingSince) { return }
                mine.wait(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// The user's processes connected to the compositor's socket (the kernel's pairing), and the
    /// user's processes they were looked for among.
    private func connectedClients(
        _ owner: UInt32, _ compositor: Int32, _ path: String
    ) throws(SystemError) -> (
        clients: [Int32], candidates: [Int32]
    ) {
        let candidates = processes.trackedProcesses().filter { $0.owner == owner }.map(\.pid)
        return (try UnixPeers.clients(of: compositor, among: candidates, listening: [path]).sorted(), candidates)
    }

    /// Clients that are apps: the system's helpers (portals, input methods) left out — a program
    /// of `/usr/lib` or `/usr/libexec` that is no desktop app and not the dynamic loader (which
    /// runs whatever program it is given: `ld-linux-x86-64.so.2 ~/game`).
    private func apps(_ clients: [Int32]) -> [Int32] {
        clients.filter { !processes.isSystemHelper(pid: $0) }
    }

    /// Whether a sway session of the same user reads this compositor (its focus, not the
    /// conservative count): then this session goes.
    private func readBySway(_ key: String, compositor: Int32, owner: UInt32) -> Bool {
        let read = state.withLock { state in
            let sway = state.sessions.contains { other in
                other.value.kind == .sway && other.value.owner == owner && other.value.connected
                    && other.value.server?.pid == compositor
            }
            if sway {
                Self.endFront(&state, key, at: .now)
                state.sessions[key] = nil
            }
            return sway
        }
        if read { logger.info("a Wayland session sway's IPC reads", metadata: ["session": "\(key)"]) }
        return read
    }
}
