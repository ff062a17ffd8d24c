import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// One X11 session.
extension UsageTracker {
    /// Connects, reports focus until the server goes, then tries again for a while before the
    /// session is dropped (a later hint finds it again). The server is looked at before anything
    /// is sent: root's (a display manager's) or the session user's, else this is not their
    /// display and no cookie of theirs goes to it. A connection cut (any client of the display
    /// may kill another's) is made again at once, the time in front going on meanwhile.
    func watchX11(_ key: String, _ display: X11Display, _ mine: StopSignal) {
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
                let interrupter = WatchInterrupter(watch)
                state.withLock { state in
                    state.sessions[key]?.interrupt = { interrupter.interrupt() }
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
}
