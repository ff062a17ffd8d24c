package import FoundationEssentials
package import ScreenTimeCore

/// What the login sessions tell of text sessions (tty, ssh, su), whose whole time counts as
/// screen time: the usage tracker makes each a session of its own.
package protocol TextSessions: Sendable {
    func textSessionStarted(uid: UInt32, key: String, kind: String, tty: String)
    func textSessionEnded(key: String)
}

/// What the activity scheduler asks of usage.
package protocol UsageQueries: Sendable {
    /// The user's foreground time within an interval (nil: it cannot be read).
    func ledger(uid: UInt32, during interval: DateInterval) -> UsageLedger?
    /// Whether the user has something in front now.
    func isInFront(uid: UInt32) -> Bool
}

extension UsageTracker: WebActivity, TextSessions, UsageQueries {
    func lookedUp(_ domain: String, uid: UInt32, times: Int) { lookedUp(domain, uid: uid, at: Date(), times: times) }
    func webUsed(_ domain: String, uid: UInt32) { webUsed(domain, uid: uid, at: Date()) }
    package func ledger(uid: UInt32, during interval: DateInterval) -> UsageLedger? {
        try? usage(uid: uid, during: interval).ledger
    }
}
