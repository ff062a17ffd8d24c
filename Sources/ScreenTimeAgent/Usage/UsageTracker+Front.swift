import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// What is in front.
extension UsageTracker {
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
        let notice = pids.contains { $0.map(isNotice) ?? false }
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
            if !notice { state.sessions[key]?.beforeNotice = applications }
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
        var notices: [Int32] = []
        for pid in pids {
            // A notice the agent started counts as what was in front before it.
            if let pid, isNotice(pid) {
                notices.append(pid)
                continue
            }
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
        if !notices.isEmpty {
            let before = state.withLock { $0.sessions[key]?.beforeNotice ?? [] }
            // Nothing before it (a session just found): the notice's own time, as the shield window's.
            add(before.isEmpty ? notices.flatMap { processes.foregroundApplications(pid: $0) } : before)
        }
        return applications
    }

    /// Whether the process `pid` is a notice the agent started (see `NoticeWindows`), still
    /// running the shield window's own file (not another program it was made to run).
    func isNotice(_ pid: Int32) -> Bool {
        (relays?.notices.contains(pid) ?? false) && processes.isShieldWindow(pid: pid)
    }
}
