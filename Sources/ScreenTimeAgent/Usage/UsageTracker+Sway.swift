import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// One sway session.
extension UsageTracker {
    func watchSway(_ key: String, _ path: String, _ mine: StopSignal, wayland: String?) {
        var idleStarted = false
        var delay: Duration = .milliseconds(500)
        var failingSince: ContinuousClock.Instant?
        var connected: ContinuousClock.Instant?
        // While the session under the key is this thread's (one made again later has its own).
        while let session = state.withLock({ $0.sessions[key] }), session.stop === mine, !session.stop.isRaised {
            do throws(SystemError) {
                let watch = try SwayFocusWatch(path: path)
                // The compositor is the session's user's (a socket of anyone else's is not
                // this child's session, and is not read).
                guard processes.currentPolicy().owner(ofKernelUID: watch.server.uid) == session.owner else {
                    throw SystemError(.command, "\(path) is not served by the session's user (uid \(watch.server.uid))")
                }
                let interrupter = WatchInterrupter(watch)
                let foreign = Files.readLink("/proc/\(watch.server.pid)/ns/pid") != Files.readLink("/proc/self/ns/pid")
                let compositorStart = inspector.startTime(pid: watch.server.pid)
                state.withLock { state in
                    state.sessions[key]?.foreignPIDs = foreign
                    state.sessions[key]?.server = (watch.server.pid, compositorStart)
                    state.sessions[key]?.interrupt = { interrupter.interrupt() }
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
                // Told once a streak: a compositor that answers and then fails is not logged at
                // each try.
                if failingSince == nil {
                    logger.info("reading focus", metadata: ["session": "\(key)", "server": "pid \(watch.server.pid)"])
                }
                connected = .now
                try watch.run(stop: session.stop) { change in
                    switch change {
                    case .focus(let window): focused(key, pids: window.map { [$0.pid] } ?? [])
                    }
                }
                return
            } catch {
                // The waits start again only after a connection that lasted: one to a program
                // that answers and then fails (or closes) is one more failure of the streak, so
                // that it is tried less and less often and dropped, not read twice a second.
                if let since = connected, ContinuousClock.now - since >= Self.healthyConnection {
                    failingSince = nil
                    delay = .milliseconds(500)
                }
                connected = nil
                if failed(key, error, since: &failingSince) { return }
                session.stop.wait(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}
