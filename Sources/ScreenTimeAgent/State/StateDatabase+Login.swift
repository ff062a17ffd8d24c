import FoundationEssentials
import ScreenTimeSQLite

extension StateDatabase {
    struct LoginLock: Hashable, Sendable {
        enum Reason: String, Sendable, CaseIterable {
            case downtime
            case screenTime = "screen time"
            /// The week's screen time used up.
            case weeklyScreenTime = "weekly screen time"
            /// The month's screen time used up.
            case monthlyScreenTime = "monthly screen time"
            /// A guardian's `lock`: no grant of screen time lifts it.
            case guardian
        }

        var uid: UInt32
        var reason: Reason
        var until: Date
        var since: Date
    }

    func setLoginLock(_ lock: LoginLock) throws {
        try queue.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO loginLock (uid, reason, until, since) VALUES (?, ?, ?, ?)",
                arguments: [Int64(lock.uid), lock.reason.rawValue, lock.until, lock.since])
        }
    }

    /// Ends a lock; returns whether there was one.
    @discardableResult
    func clearLoginLock(uid: UInt32, reason: LoginLock.Reason) throws -> Bool {
        try queue.write { db in
            try db.execute(
                sql: "DELETE FROM loginLock WHERE uid = ? AND reason = ?", arguments: [Int64(uid), reason.rawValue])
            return db.changesCount > 0
        }
    }

    /// A user's locks in force at `date` (one that ended while the agent was down is not).
    func loginLocks(uid: UInt32, at date: Date) throws -> [LoginLock] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM loginLock WHERE uid = ? AND until > ? ORDER BY until DESC",
                arguments: [Int64(uid), date]
            ).compactMap { row in
                guard let reason = LoginLock.Reason(rawValue: row["reason"]) else { return nil }
                return LoginLock(
                    uid: UInt32(row["uid"] as Int64), reason: reason, until: row["until"], since: row["since"])
            }
        }
    }

    /// The earliest end of any lock after `date` (the policy changes then).
    func nextLoginLockEnd(after date: Date) throws -> Date? {
        try queue.read { db in
            try Date.fetchOne(db, sql: "SELECT min(until) FROM loginLock WHERE until > ?", arguments: [date])
        }
    }
}
