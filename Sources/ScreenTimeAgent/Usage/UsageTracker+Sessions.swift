import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Sessions asked about.
extension UsageTracker {
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
}
