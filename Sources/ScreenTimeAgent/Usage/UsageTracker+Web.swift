import Foundation
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Lookups.
extension UsageTracker {
    /// A registrable domain a user's programs used (looked up, or named by a connection): it
    /// counts as in use for `webWindow` from now.
    func webUsed(_ domain: String, uid: UInt32, at time: Date = Date()) {
        let changed = state.withLock { state -> Bool in
            let key = WebKey(uid: uid, domain: domain)
            let end = time.addingTimeInterval(Self.webWindow)
            if var window = state.web[key], time <= window.stored.end {
                // Written at most every few seconds per domain: a page loading fetches many names.
                guard end.timeIntervalSince(window.stored.end) >= 5 else { return false }
                window.stored.end = end
                window.dirty = true
                state.web[key] = window
                return true
            }
            // Bounded: a child inventing names cannot grow the agent's memory without limit.
            guard state.web[key] != nil || state.web.count < 50_000 else { return false }
            if let old = state.web[key], old.dirty { state.webClosed.append(old.stored) }
            state.web[key] = WebWindow(
                stored: StateDatabase.WebActivity(id: nil, uid: uid, domain: domain, start: time, end: end))
            return true
        }
        if changed { flushContinuation.yield() }
    }

    /// A name a user's program looked up (the DNS filter tells, for each question it judged).
    func lookedUp(_ domain: String, uid: UInt32, at time: Date = Date()) {
        let day = Self.day(time)
        state.withLock { state in
            let key = LookupKey(uid: uid, day: day, domain: domain)
            // Bounded: a child inventing names cannot grow the agent's memory without limit.
            guard state.lookups[key] != nil || state.lookups.count < 50_000 else { return }
            state.lookups[key] = Self.merged(
                state.lookups[key],
                StateDatabase.DomainLookups(uid: uid, day: day, domain: domain, count: 1, first: time, last: time))
        }
        flushContinuation.yield()
    }

    static func merged(
        _ old: StateDatabase.DomainLookups?, _ new: StateDatabase.DomainLookups
    ) -> StateDatabase.DomainLookups {
        guard var old else { return new }
        old.count += new.count
        old.first = min(old.first, new.first)
        old.last = max(old.last, new.last)
        return old
    }

    static func day(_ time: Date) -> String {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: time)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
