import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Front time.
extension UsageTracker {
    static func beginFront(_ state: inout State, _ key: String, _ applications: [ForegroundApplication]) {
        guard !applications.isEmpty, var session = state.sessions[key], session.hold == nil else { return }
        let wall = Date()
        let gap = Self.gap(&session)
        var serials: [Int] = []
        var ends: [Date] = []
        for application in applications {
            let token = application.token.base64
            // The same application again soon after in the same session: its row grows again.
            let reused = state.rows.first { _, row in
                row.stored.session == key && row.stored.token == token && row.stored.uid == application.owner
                    && !row.open && row.stored.end >= wall.addingTimeInterval(-gap)
            }?.key
            if let reused {
                serials.append(reused)
                ends.append(state.rows[reused]?.stored.end ?? wall)
                state.rows[reused]?.open = true
            } else {
                serials.append(Self.newRow(&state, &session, key, application, from: wall, to: wall, open: true))
                ends.append(wall)
            }
        }
        state.sessions[key] = session
        state.sessions[key]?.front = Front(
            applications: applications, startWall: wall, startClock: .now, rows: serials, rowEnds: ends)
    }

    static func endFront(_ state: inout State, _ key: String, at instant: SuspendingClock.Instant) {
        guard let front = state.sessions[key]?.front else { return }
        state.sessions[key]?.front = nil
        let end = front.wall(at: max(instant, front.startClock))
        for (serial, had) in zip(front.rows, front.rowEnds) {
            guard var row = state.rows[serial] else { continue }
            // The span's own end, also when it is earlier than what was written while it was open
            // (every checkpoint and report writes an open span up to then): idle found 5 minutes
            // after the last input takes back the 5 minutes written meanwhile. Never less than
            // the row had before this span (a row grown again, the wall clock set back between).
            row.stored.end = max(end, had)
            row.open = false
            row.dirty = true
            state.rows[serial] = row
        }
    }
}
