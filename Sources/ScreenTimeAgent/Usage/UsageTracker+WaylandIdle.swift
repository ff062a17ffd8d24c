import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Wayland idle.
extension UsageTracker {
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
                let interrupter = WatchInterrupter(watch)
                state.withLock { state in
                    let previous = state.sessions[key]?.interrupt
                    state.sessions[key]?.interrupt = {
                        previous?()
                        interrupter.interrupt()
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
                            source.replacing("; idle from the compositor", with: "")
                            + "; idle is not told (\(error.message.prefix(80)))"
                    }
                }
                mine.wait(for: delay)
                delay = min(delay * 2, .seconds(60))
            }
        }
    }
}
