import FoundationEssentials
import ScreenTimeSQLite

extension StateDatabase {
    /// A stretch of foreground time as stored: an application of a user's in front in a session.
    struct UsageRow: Hashable, Sendable {
        /// Nil until written.
        var id: Int64?
        var uid: UInt32
        var session: String
        var token: String
        var identity: String
        var displayName: String
        var categories: [String]
        var start: Date
        var end: Date
    }

    /// Names looked up by a user on one day: how often, first and last.
    struct DomainLookups: Hashable, Sendable {
        var uid: UInt32
        /// `yyyy-MM-dd` in UTC.
        var day: String
        var domain: String
        var count: Int
        var first: Date
        var last: Date
    }

    /// Writes new rows and the new ends of rows already written, and adds lookups, in one
    /// transaction; returns the rows with their ids.
    func saveUsage(_ rows: [UsageRow], lookups: [DomainLookups]) throws -> [UsageRow] {
        guard !rows.isEmpty || !lookups.isEmpty else { return rows }
        defer { pruneIfDue() }
        return try queue.write { db in
            var saved = rows
            for index in saved.indices {
                let row = saved[index]
                if let id = row.id {
                    try db.execute(
                        sql: "UPDATE usageSpan SET end = ? WHERE id = ?", arguments: [row.end, id])
                } else {
                    try db.execute(
                        sql: """
                            INSERT INTO usageSpan (uid, session, token, identity, displayName, categories, start, end)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            Int64(row.uid), row.session, row.token, row.identity, row.displayName,
                            row.categories.joined(separator: "\n"), row.start, row.end,
                        ])
                    saved[index].id = db.lastInsertedRowID
                }
            }
            for lookup in lookups {
                try db.execute(
                    sql: """
                        INSERT INTO domainLookup (uid, day, domain, count, first, last) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT (uid, day, domain) DO UPDATE SET
                          count = count + excluded.count, first = min(first, excluded.first),
                          last = max(last, excluded.last)
                        """,
                    arguments: [Int64(lookup.uid), lookup.day, lookup.domain, lookup.count, lookup.first, lookup.last])
            }
            return saved
        }
    }

    /// A user's rows that reach into `interval`.
    func usage(uid: UInt32, during interval: DateInterval) throws -> [UsageRow] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM usageSpan WHERE uid = ? AND end > ? AND start < ? ORDER BY start",
                arguments: [Int64(uid), interval.start, interval.end]
            ).map { row in
                let categories: String = row["categories"]
                return UsageRow(
                    id: row["id"], uid: UInt32(row["uid"] as Int64), session: row["session"], token: row["token"],
                    identity: row["identity"], displayName: row["displayName"],
                    categories: categories.split(separator: "\n").map(String.init), start: row["start"],
                    end: row["end"])
            }
        }
    }

    /// A user's lookups on the days (UTC) that reach into `interval`.
    func lookups(uid: UInt32, during interval: DateInterval) throws -> [DomainLookups] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM domainLookup WHERE uid = ? AND last >= ? AND first < ?",
                arguments: [Int64(uid), interval.start, interval.end]
            ).map { row in
                DomainLookups(
                    uid: UInt32(row["uid"] as Int64), day: row["day"], domain: row["domain"], count: row["count"],
                    first: row["first"], last: row["last"])
            }
        }
    }
}

extension StateDatabase {
    /// A stretch of time a registrable domain was in use by a user's programs.
    struct WebActivity: Hashable, Sendable {
        var id: Int64?
        var uid: UInt32
        var domain: String
        var start: Date
        var end: Date
    }

    /// Writes new windows and the new ends of windows already written; returns them with ids.
    func saveWebActivity(_ windows: [WebActivity]) throws -> [WebActivity] {
        guard !windows.isEmpty else { return windows }
        return try queue.write { db in
            var saved = windows
            for index in saved.indices {
                let window = saved[index]
                if let id = window.id {
                    try db.execute(sql: "UPDATE webActivity SET end = ? WHERE id = ?", arguments: [window.end, id])
                } else {
                    try db.execute(
                        sql: "INSERT INTO webActivity (uid, domain, start, end) VALUES (?, ?, ?, ?)",
                        arguments: [Int64(window.uid), window.domain, window.start, window.end])
                    saved[index].id = db.lastInsertedRowID
                }
            }
            return saved
        }
    }

    /// A user's windows that reach into `interval`.
    func webActivity(uid: UInt32, during interval: DateInterval) throws -> [WebActivity] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM webActivity WHERE uid = ? AND end > ? AND start < ? ORDER BY start",
                arguments: [Int64(uid), interval.start, interval.end]
            ).map { row in
                WebActivity(
                    id: row["id"], uid: UInt32(row["uid"] as Int64), domain: row["domain"], start: row["start"],
                    end: row["end"])
            }
        }
    }
}
