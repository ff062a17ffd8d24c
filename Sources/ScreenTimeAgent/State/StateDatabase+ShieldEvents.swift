import FoundationEssentials
import ScreenTimeCore
import ScreenTimeSQLite
import Synchronization

// Shield events.
extension StateDatabase {
    /// Shielded lookups (or, later, launches) of one token for one reason, counted.
    struct ShieldEvent: Hashable, Sendable {
        var uid: UInt32
        var kind: TokenKindName
        var token: String
        var reason: String
        var category: String?
        var first: Date
        var last: Date
        var count: Int
    }

    /// Appends events and the names of their tokens, in one transaction: each only while its
    /// user is authorized. A revocation deletes a user's events in a transaction of its own; a
    /// batch counted before it and written after it would otherwise bring them back (written in
    /// the moment between the revocation and the filters it takes away). A name is kept only for
    /// an event kept: a revoked child's lookup leaves not even its domain behind.
    func record(_ events: [ShieldEvent], names: [String: TokenName]) throws {
        guard !events.isEmpty else { return }
        defer { pruneIfDue() }
        try queue.write { db in
            var kept: Set<String> = []
            for event in events {
                try db.execute(
                    sql: """
                        INSERT INTO shieldEvent (uid, kind, token, reason, category, first, last, count)
                        SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (
                            SELECT 1 FROM "authorization" WHERE uid = ? AND status = ?)
                        """,
                    arguments: [
                        Int64(event.uid), event.kind.rawValue, event.token, event.reason, event.category, event.first,
                        event.last, event.count, Int64(event.uid), AuthorizationStatus.approved.rawValue,
                    ])
                if db.changesCount > 0 { kept.insert(event.token) }
            }
            try Self.remember(names.filter { kept.contains($0.key) }, in: db)
        }
    }

    /// A user's latest events of one kind, newest first.
    func shieldEvents(uid: UInt32, kind: TokenKindName, limit: Int) throws -> [ShieldEvent] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM shieldEvent WHERE uid = ? AND kind = ? ORDER BY last DESC, id DESC LIMIT ?",
                arguments: [Int64(uid), kind.rawValue, limit]
            ).map { row in
                ShieldEvent(
                    uid: UInt32(row["uid"] as Int64), kind: kind, token: row["token"], reason: row["reason"],
                    category: row["category"], first: row["first"], last: row["last"], count: row["count"])
            }
        }
    }
}
