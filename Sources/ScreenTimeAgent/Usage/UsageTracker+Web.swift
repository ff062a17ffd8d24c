import FoundationEssentials
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
    func lookedUp(_ domain: String, uid: UInt32, at time: Date = Date(), times: Int = 1) {
        let day = Self.day(time)
        state.withLock { state in
            let key = LookupKey(uid: uid, day: day, domain: domain)
            // Bounded: a child inventing names cannot grow the agent's memory without limit.
            guard state.lookups[key] != nil || state.lookups.count < 50_000 else { return }
            state.lookups[key] = Self.merged(
                state.lookups[key],
                StateDatabase.DomainLookups(
                    uid: uid, day: day, domain: domain, count: max(1, times), first: time, last: time))
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

    /// The UTC day of `time`, `YYYY-MM-DD`: by arithmetic on the days since 1970 (the civil
    /// calendar's, proleptic Gregorian), not a calendar and a formatter, since it is asked at each
    /// lookup a child makes (a formatter there took a fifth of a query's time).
    static func day(_ time: Date) -> String {
        let date = CivilDate.date(days: Int64((time.timeIntervalSince1970 / 86_400).rounded(.down)))
        let year = String(date.year)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-" + twoDigits(Int(date.month)) + "-"
            + twoDigits(Int(date.day))
    }
}
