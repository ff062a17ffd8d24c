import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Displays that cannot be read.
extension UsageTracker {
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
}
