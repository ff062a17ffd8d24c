import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// The span ledger.
extension UsageTracker {
    /// A span already over, for `applications`: each one's row of the session that ended within
    /// the merge gap before it grows to its end, or a row of its own is made.
    static func addSpan(
        _ state: inout State, _ key: String, _ applications: [ForegroundApplication], from start: Date, to end: Date
    ) {
        guard end > start, var session = state.sessions[key] else { return }
        let gap = Self.gap(&session)
        for application in applications {
            let token = application.token.base64
            let near = state.rows.first { _, row in
                row.stored.session == key && row.stored.token == token && row.stored.uid == application.owner
                    && row.stored.start <= start && row.stored.end >= start.addingTimeInterval(-gap)
            }?.key
            if let near {
                // An open row grows by itself; a closed one to the span's end.
                guard state.rows[near]?.open == false else { continue }
                if let before = state.rows[near]?.stored.end, before < end {
                    state.rows[near]?.stored.end = end
                    state.rows[near]?.dirty = true
                }
            } else {
                _ = Self.newRow(&state, &session, key, application, from: start, to: end, open: false)
            }
        }
        state.sessions[key] = session
    }

    /// How soon after a row of the same application's ended one may grow again (longer once a
    /// session started many rows within a minute).
    static func gap(_ session: inout Session) -> TimeInterval {
        if SuspendingClock.now - session.minuteStart > .seconds(60) {
            session.minuteStart = .now
            session.rowsStarted = 0
        }
        return session.rowsStarted >= rowsPerMinute ? floodGap : mergeGap
    }

    /// A new row of a session's for `application`; its serial.
    static func newRow(
        _ state: inout State, _ session: inout Session, _ key: String, _ application: ForegroundApplication,
        from start: Date, to end: Date, open: Bool
    ) -> Int {
        let serial = state.nextRow
        state.nextRow += 1
        state.rows[serial] = Row(
            stored: StateDatabase.UsageRow(
                id: nil, uid: application.owner, session: key, token: application.token.base64,
                identity: application.reportID, displayName: application.name,
                categories: application.categories, start: start, end: end),
            open: open)
        session.rowsStarted += 1
        return serial
    }
}
