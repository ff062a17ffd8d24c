import FoundationEssentials
import ScreenTimeIPC
import Synchronization

/// What the child and the guardians are shown, as it happens: the one stream of shield encounters
/// (an app started or brought to the front while shielded, a shielded name looked up), asks for
/// more time made and decided, and notices. The process, domain and usage sides and the policy
/// service tell it; the shield presenter alone takes from it, on its own thread.
///
/// Telling never waits. It is bounded: past `limit` events waiting, what comes is dropped (a
/// flood of shields shows the first ones), and a user's notices are limited to a few a minute.
package final class ShieldEvents: Sendable {
    enum Event: Sendable {
        /// An app started (or a name looked up) while shielded.
        case met(ShieldEncounter)
        /// A shielded app came to the front.
        case inFront(ShieldEncounter)
        /// A child asked for more time (a guardian's windows show it).
        case asked(TimeRequestReport)
        /// A guardian decided an ask (the child is told).
        case decided(TimeRequestReport)
        /// A notice in the user's sessions that closes by itself (a limit or downtime is near).
        case notice(uid: UInt32, title: String, subtitle: String, icon: String)
    }

    package init() {}

    static let limit = 1_000
    static let noticesPerMinute = 6

    private let mailbox = Mailbox<[Event]>(empty: [])
    /// When each user was last shown notices (within the last minute).
    private let notices = Mutex<[UInt32: [Date]]>([:])

    /// Adds an event (dropped when `limit` wait, or once finished).
    func tell(_ event: Event) {
        mailbox.put { events in
            guard events.count < Self.limit else { return false }
            events.append(event)
            return true
        }
    }

    /// An ask made or decided.
    func tell(request: TimeRequestReport) {
        tell(request.state == .pending ? .asked(request) : .decided(request))
    }

    /// A notice for `uid`, if the user has had fewer than `noticesPerMinute` in the last minute;
    /// whether it is shown.
    @discardableResult
    func notify(uid: UInt32, title: String, subtitle: String, icon: String) -> Bool {
        let allowed = notices.withLock { notices in
            let now = Date()
            let recent = (notices[uid] ?? []).filter { now.timeIntervalSince($0) < 60 }
            guard recent.count < Self.noticesPerMinute else { return false }
            notices[uid] = recent + [now]
            return true
        }
        if allowed { tell(.notice(uid: uid, title: title, subtitle: subtitle, icon: icon)) }
        return allowed
    }

    /// The events told since the last take, waiting until there is one; nil once finished.
    func take() -> [Event]? { mailbox.take() }

    /// Ends the stream: `take` returns nil, and later events are dropped.
    func finish() { mailbox.finish() }
}

/// What went wrong lately with each user's shield extensions, newest last: written by the shield
/// presenter, shown by `status`.
package final class ShieldProblems: Sendable {
    package init() {}

    static let kept = 10
    private let problems = Mutex<[UInt32: [String]]>([:])

    func note(_ uid: UInt32, _ problem: String, at date: Date = Date()) {
        let stamped = "\(date.formatted(.iso8601)) \(problem)"
        problems.withLock { problems in
            problems[uid, default: []].append(stamped)
            if problems[uid, default: []].count > Self.kept { problems[uid]?.removeFirst() }
        }
    }

    func of(_ uid: UInt32) -> [String] { problems.withLock { $0[uid] ?? [] } }
}
