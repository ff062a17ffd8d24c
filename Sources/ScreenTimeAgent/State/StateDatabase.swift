import FoundationEssentials
import ScreenTimeCore
import ScreenTimeSQLite
import Synchronization

/// The agent's state in SQLite: authorizations, stores, and the names of tokens a guardian used.
///
/// WAL mode with `synchronous = FULL`: a transaction is on disk when `write` returns, so a reply
/// sent after it survives kill -9 and power loss. Migrations are registered in order and never
/// edited once released; a new schema is a new migration.
package final class StateDatabase: Sendable {
    let queue: DatabaseQueue
    /// Events older than this are deleted (`eventRetentionDays`), and at most `maximumEventsPerUser`
    /// of each kind are kept per user, so that no child can grow the database without bound.
    private let retention: TimeInterval
    static let maximumEventsPerUser = 20_000
    private let lastPrune = Mutex<Date?>(nil)

    package init(path: String, retentionDays: Int = 30) throws {
        retention = TimeInterval(retentionDays) * 86_400
        // WAL, with FULL: a committed transaction survives power loss (NORMAL could lose the last).
        queue = try DatabaseQueue(path: path) { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        try StateMigrations.migrator.migrate(queue)
    }

    /// SQLite's journal mode and synchronous level, as in force (`wal`, 2 = FULL).
    func durability() throws -> (journalMode: String, synchronous: Int) {
        try queue.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "",
                try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
            )
        }
    }

    // MARK: authorizations

    struct Authorization: Hashable, Sendable {
        var uid: UInt32
        var userName: String
        var member: FamilyControlsMember
        var status: AuthorizationStatus
        var showNamesToChild: Bool
        var changedAt: Date
        var changedByUID: UInt32
    }

    func authorization(uid: UInt32) throws -> Authorization? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM authorization WHERE uid = ?", arguments: [Int64(uid)])
                .flatMap(Self.authorization(from:))
        }
    }

    func authorizations() throws -> [Authorization] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM authorization ORDER BY userName").compactMap(
                Self.authorization(from:))
        }
    }

    /// Saves an authorization; with `clearingStoresAndEvents`, the user's stores and shield events go
    /// in the same transaction (a revocation: a later account with the same uid inherits nothing).
    func save(_ authorization: Authorization, clearingStoresAndEvents: Bool = false) throws {
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO authorization (uid, userName, member, status, showNamesToChild, changedAt, changedByUID)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(uid) DO UPDATE SET userName = excluded.userName, member = excluded.member,
                      status = excluded.status, showNamesToChild = excluded.showNamesToChild,
                      changedAt = excluded.changedAt, changedByUID = excluded.changedByUID
                    """,
                arguments: [
                    Int64(authorization.uid), authorization.userName, authorization.member.rawValue,
                    authorization.status.rawValue, authorization.showNamesToChild, authorization.changedAt,
                    Int64(authorization.changedByUID),
                ])
            if clearingStoresAndEvents { try Self.delete(Self.settingsAndUsage, of: authorization.uid, in: db) }
        }
    }

    /// What a revocation clears: a user's settings, usage, events, requests and activity.
    static let settingsAndUsage = [
        "store", "shieldEvent", "applicationEvent", "usageSpan", "domainLookup", "webActivity", "timeRequest",
        "shieldExtension", "monitor", "owedCallback", "extensionRun", "alwaysAllowed", "lockout",
    ]

    /// Deletes every row of a user's, its authorization with them, in one transaction: what a
    /// revocation clears, and what it keeps (the record, password failures, a login lock, frozen
    /// processes).
    func forget(uid: UInt32) throws {
        try queue.write { db in
            try Self.delete(
                Self.settingsAndUsage + [
                    "authorization", "passwordFailure", "loginLock", "frozenProcess", "webSession", "webPairing",
                ], of: uid,
                in: db)
        }
    }

    private static func delete(_ tables: [String], of uid: UInt32, in db: Database) throws {
        for table in tables { try db.execute(sql: "DELETE FROM \(table) WHERE uid = ?", arguments: [Int64(uid)]) }
    }

    private static func authorization(from row: Row) -> Authorization? {
        guard let member = FamilyControlsMember(rawValue: row["member"]),
            let status = AuthorizationStatus(rawValue: row["status"])
        else { return nil }
        return Authorization(
            uid: UInt32(row["uid"] as Int64), userName: row["userName"], member: member, status: status,
            showNamesToChild: row["showNamesToChild"], changedAt: row["changedAt"],
            changedByUID: UInt32(row["changedByUID"] as Int64))
    }

    // MARK: stores

    /// Every store of a user, with when each last changed.
    func stores(uid: UInt32) throws -> (collection: StoreCollection, updated: [StoreKey: Date]) {
        try queue.read { db in
            var entries: [(StoreKey, StoreSettings)] = []
            var updated: [StoreKey: Date] = [:]
            let decoder = JSONDecoder()
            for row in try Row.fetchAll(db, sql: "SELECT * FROM store WHERE uid = ?", arguments: [Int64(uid)]) {
                let key = StoreKey(client: try ClientID(row["client"]), name: try StoreName(row["name"]))
                let settings = try decoder.decode(StoreSettings.self, from: Data((row["settings"] as String).utf8))
                entries.append((key, settings))
                updated[key] = row["updatedAt"]
            }
            // Stores were validated before they were saved; a row that fails now is corruption.
            return (try StoreCollection(entries), updated)
        }
    }

    /// Replaces one store (an empty one is deleted) and records token names, in one transaction.
    func saveStore(
        uid: UInt32, key: StoreKey, settings: StoreSettings, names: [String: TokenName], at date: Date
    )
        throws
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(settings), as: UTF8.self)
        try queue.write { db in
            if settings.isEmpty {
                try db.execute(
                    sql: "DELETE FROM store WHERE uid = ? AND client = ? AND name = ?",
                    arguments: [Int64(uid), key.client.rawValue, key.name.rawValue])
            } else {
                try db.execute(
                    sql: """
                        INSERT INTO store (uid, client, name, settings, updatedAt) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT(uid, client, name) DO UPDATE SET settings = excluded.settings,
                          updatedAt = excluded.updatedAt
                        """,
                    arguments: [Int64(uid), key.client.rawValue, key.name.rawValue, json, date])
            }
            for (token, name) in names {
                try db.execute(
                    sql: """
                        INSERT INTO tokenName (token, kind, identity, displayName) VALUES (?, ?, ?, ?)
                        ON CONFLICT(token) DO UPDATE SET displayName = excluded.displayName
                        """,
                    arguments: [token, name.kind.rawValue, name.identity, name.displayName])
            }
        }
    }

    // MARK: retention

    /// Deletes old events (and the oldest beyond the per-user cap), at most once an hour: called
    /// after writes, so that it needs no timer of its own.
    func pruneIfDue(now: Date = Date()) {
        let due = lastPrune.withLock { last -> Bool in
            guard last.map({ now.timeIntervalSince($0) >= 3600 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        try? prune(before: now.addingTimeInterval(-retention))
    }

    /// Deletes events before a date, and each user's oldest beyond `maximumEventsPerUser`.
    func prune(before date: Date) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM shieldEvent WHERE last < ?", arguments: [date])
            try db.execute(sql: "DELETE FROM applicationEvent WHERE time < ?", arguments: [date])
            try db.execute(sql: "DELETE FROM usageSpan WHERE end < ?", arguments: [date])
            try db.execute(sql: "DELETE FROM domainLookup WHERE last < ?", arguments: [date])
            try db.execute(sql: "DELETE FROM webActivity WHERE end < ?", arguments: [date])
            try Self.pruneTimeRequests(db, before: date)
            let cap = Self.maximumEventsPerUser
            try db.execute(
                sql: """
                    DELETE FROM shieldEvent WHERE id IN (
                      SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY last DESC, id DESC) AS n
                                      FROM shieldEvent) WHERE n > ?)
                    """, arguments: [cap])
            try db.execute(
                sql: """
                    DELETE FROM applicationEvent WHERE id IN (
                      SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY time DESC, id DESC) AS n
                                      FROM applicationEvent) WHERE n > ?)
                    """, arguments: [cap])
            try Self.forgetUnusedProgramNames(db)
        }
    }

    /// Deletes the names of programs known only by their content (`exe:sha256:…`, most of them
    /// refused copies of a child's) that nothing kept refers to any more: no event, frozen
    /// process, usage span, request, monitor or store (whose JSON writes a token's `/` as `\/`).
    /// A child's refusal storm adds a name per copy; they go with their events.
    static func forgetUnusedProgramNames(_ db: Database) throws {
        try db.execute(
            sql: """
                DELETE FROM tokenName WHERE identity LIKE 'exe:sha256:%'
                  AND token NOT IN (
                    SELECT token FROM applicationEvent UNION SELECT token FROM shieldEvent
                    UNION SELECT token FROM frozenProcess UNION SELECT token FROM usageSpan
                    UNION SELECT token FROM timeRequest)
                  AND NOT EXISTS (SELECT 1 FROM monitor m WHERE instr(m.definition, tokenName.token) > 0
                                    OR instr(m.definition, replace(tokenName.token, '/', '\\/')) > 0)
                  AND NOT EXISTS (SELECT 1 FROM store s WHERE instr(s.settings, tokenName.token) > 0
                                    OR instr(s.settings, replace(tokenName.token, '/', '\\/')) > 0)
                """)
    }

    /// How many events a user has, of each table (for tests and status).
    func eventCounts(uid: UInt32) throws -> (shield: Int, application: Int) {
        try queue.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM shieldEvent WHERE uid = ?", arguments: [Int64(uid)])
                    ?? 0,
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM applicationEvent WHERE uid = ?", arguments: [Int64(uid)])
                    ?? 0
            )
        }
    }

    // MARK: failed guardian passwords

    struct PasswordFailures: Hashable, Sendable {
        var uid: UInt32
        var failures: Int
        var lastFailure: Date
        var locked: Bool
    }

    func passwordFailures(uid: UInt32) throws -> PasswordFailures? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM passwordFailure WHERE uid = ?", arguments: [Int64(uid)]).map {
                PasswordFailures(
                    uid: uid, failures: $0["failures"], lastFailure: $0["lastFailure"], locked: $0["locked"])
            }
        }
    }

    /// Saves an asker's failures; nil forgets them (a right password, or a guardian's unlock).
    func savePasswordFailures(uid: UInt32, _ record: PasswordFailures?) throws {
        try queue.write { db in
            if let record {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO passwordFailure (uid, failures, lastFailure, locked)
                        VALUES (?, ?, ?, ?)
                        """,
                    arguments: [Int64(uid), record.failures, record.lastFailure, record.locked])
            } else {
                try db.execute(sql: "DELETE FROM passwordFailure WHERE uid = ?", arguments: [Int64(uid)])
            }
        }
    }

    // MARK: token names

    func tokenNames(_ tokens: Set<String>) throws -> [String: TokenName] {
        guard !tokens.isEmpty else { return [:] }
        return try queue.read { db in
            var names: [String: TokenName] = [:]
            // Looked up by key, in batches under SQLite's limit on bound parameters.
            let all = Array(tokens)
            for start in stride(from: 0, to: all.count, by: 500) {
                let batch = Array(all[start..<min(start + 500, all.count)])
                let marks = Array(repeating: "?", count: batch.count).joined(separator: ",")
                let sql = "SELECT * FROM tokenName WHERE token IN (\(marks))"
                for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(batch)) {
                    guard let kind = TokenKindName(rawValue: row["kind"]) else { continue }
                    names[row["token"]] = TokenName(
                        kind: kind, identity: row["identity"], displayName: row["displayName"])
                }
            }
            return names
        }
    }

}
