import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Text logins (tty, ssh, su) as sessions of their own: the PAM session hook tells of them, and
/// their whole time counts as screen time — under a pseudo-application per kind, "Text session
/// (ssh)" — until they close or their leader exits. Graphical logins count what is in front.
extension UsageTracker {
    package func textSessionStarted(uid: UInt32, key: String, kind: String, tty: String) {
        guard let identity = try? ApplicationIdentity.desktopEntry(id: "screentime-text-session-\(kind).desktop"),
            let stop = try? StopSignal()
        else { return }
        let application = ForegroundApplication(
            owner: uid, identity: identity, token: minter.token(for: identity), name: "Text session (\(kind))",
            categories: [])
        state.withLock { state in
            // Not under the displays' cap (a child's fake displays cannot keep it out): the
            // PAM hook's logins are bounded by `LoginSessions.perUser` already.
            guard state.sessions[key] == nil else { return }
            var session = Session(
                kind: SessionKind(rawValue: kind) ?? .tty, display: tty.isEmpty ? kind : tty, owner: uid, stop: stop,
                authorityFiles: [])
            session.source = "PAM login: the whole session counts"
            session.connected = true
            state.sessions[key] = session
            Self.beginFront(&state, key, [application])
        }
        // The flush tells the scheduler the user now has something in front.
        flushContinuation.yield()
    }

    package func textSessionEnded(key: String) {
        state.withLock { state in
            guard state.sessions[key] != nil else { return }
            Self.endFront(&state, key, at: .now)
            state.sessions[key] = nil
        }
        flushContinuation.yield()
    }
}
