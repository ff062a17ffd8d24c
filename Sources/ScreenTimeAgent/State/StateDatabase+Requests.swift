import FoundationEssentials
import ScreenTimeCore
import ScreenTimeSQLite

extension StateDatabase {
    struct TimeRequest: Hashable, Sendable {
        /// `screenTime`: more screen time for a child whose logins downtime or the day's screen
        /// time refuse (token `screen-time`).
        enum Kind: String, Sendable { case application, webDomain, screenTime }
        enum State: String, Sendable { case pending, granted, denied, ended }

        var id: Int64?
        var uid: UInt32
        var kind: Kind
        var token: String
        var name: String
        var minutes: Int
        var note: String?
        var state: State
        var createdAt: Date
        var decidedAt: Date?
        var decidedBy: String?
        var until: Date?
    }

    private static func timeRequest(_ row: Row) -> TimeRequest? {
        guard let kind = TimeRequest.Kind(rawValue: row["kind"]), let state = TimeRequest.State(rawValue: row["state"])
        else { return nil }
        return TimeRequest(
            id: row["id"], uid: UInt32(row["uid"] as Int64), kind: kind, token: row["token"], name: row["name"],
            minutes: row["minutes"], note: row["note"], state: state, createdAt: row["createdAt"],
            decidedAt: row["decidedAt"], decidedBy: row["decidedBy"], until: row["until"])
    }

    func addTimeRequest(_ request: TimeRequest) throws -> TimeRequest {
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO timeRequest (uid, kind, token, name, minutes, note, state, createdAt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Int64(request.uid), request.kind.rawValue, request.token, request.name, request.minutes,
                    request.note, request.state.rawValue, request.createdAt,
                ])
            var saved = request
            saved.id = db.lastInsertedRowID
            return saved
        }
    }

    func timeRequest(id: Int64) throws -> TimeRequest? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM timeRequest WHERE id = ?", arguments: [id]).flatMap(
                Self.timeRequest)
        }
    }

    /// A user's requests (or everyone's), newest first, at most `limit`.
    func timeRequests(uid: UInt32?, limit: Int = 200) throws -> [TimeRequest] {
        try queue.read { db in
            let rows =
                if let uid {
                    try Row.fetchAll(
                        db, sql: "SELECT * FROM timeRequest WHERE uid = ? ORDER BY id DESC LIMIT ?",
                        arguments: [Int64(uid), limit])
                } else {
                    try Row.fetchAll(db, sql: "SELECT * FROM timeRequest ORDER BY id DESC LIMIT ?", arguments: [limit])
                }
            return rows.compactMap(Self.timeRequest)
        }
    }

    /// A guardian's decision: granted until a moment, or denied.
    func decide(id: Int64, state: TimeRequest.State, minutes: Int, until: Date?, by name: String, at date: Date) throws
    {
        try queue.write { db in
            try db.execute(
                sql:
                    "UPDATE timeRequest SET state = ?, minutes = ?, until = ?, decidedBy = ?, decidedAt = ? WHERE id = ?",
                arguments: [state.rawValue, minutes, until, name, date, id])
        }
    }

    /// Grants in force at `date` for a user: the tokens whose shields are lifted, until when.
    func grants(uid: UInt32, at date: Date) throws -> [TimeRequest] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM timeRequest WHERE uid = ? AND state = 'granted' AND until > ?",
                arguments: [Int64(uid), date]
            ).compactMap(Self.timeRequest)
        }
    }

    /// The grants in force for a user at `date`, as the effective policy takes them.
    func timeGrants(uid: UInt32, at date: Date) throws -> [TimeGrant] {
        try grants(uid: uid, at: date).compactMap { grant in
            guard let until = grant.until else { return nil }
            switch grant.kind {
            case .application:
                return (try? ApplicationToken(base64: grant.token)).map { TimeGrant(.application($0), until: until) }
            case .webDomain:
                return (try? WebDomainToken(base64: grant.token)).map { TimeGrant(.webDomain($0), until: until) }
            case .screenTime: return TimeGrant(.screenTime, until: until)
            }
        }
    }

    /// The earliest end of a grant after `date`, anyone's.
    func nextGrantEnd(after date: Date) throws -> Date? {
        try queue.read { db in
            try Date.fetchOne(
                db, sql: "SELECT min(until) FROM timeRequest WHERE state = 'granted' AND until > ?", arguments: [date])
        }
    }

    /// Requests older than the retention, and beyond the newest 500 per user, go.
    static func pruneTimeRequests(_ db: Database, before date: Date) throws {
        try db.execute(
            sql: "DELETE FROM timeRequest WHERE createdAt < ? AND (until IS NULL OR until < ?)",
            arguments: [date, date])
        try db.execute(
            sql: """
                DELETE FROM timeRequest WHERE id IN (
                  SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY id DESC) AS n
                                  FROM timeRequest) WHERE n > 500)
                """)
    }

    /// Remembers what a token names (an ask made by name, shown to guardians).
    func rememberName(token: String, kind: TokenKindName, name: String) throws {
        try queue.write { db in
            try Self.remember([token: TokenName(kind: kind, identity: name, displayName: name)], in: db)
        }
    }

    // MARK: shield extensions

    struct ShieldExtensions: Hashable, Sendable {
        var configuration: String?
        var action: String?
    }

    func shieldExtensions(uid: UInt32) throws -> [ClientID: ShieldExtensions] {
        try queue.read { db in
            var found: [ClientID: ShieldExtensions] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT * FROM shieldExtension WHERE uid = ?", arguments: [Int64(uid)])
            {
                guard let client = try? ClientID(row["client"]) else { continue }
                found[client] = ShieldExtensions(configuration: row["configuration"], action: row["action"])
            }
            return found
        }
    }

    func saveShieldExtensions(uid: UInt32, client: ClientID, _ extensions: ShieldExtensions) throws {
        try queue.write { db in
            if extensions.configuration == nil && extensions.action == nil {
                try db.execute(
                    sql: "DELETE FROM shieldExtension WHERE uid = ? AND client = ?",
                    arguments: [Int64(uid), client.rawValue])
            } else {
                try db.execute(
                    sql: """
                        INSERT INTO shieldExtension (uid, client, configuration, action) VALUES (?, ?, ?, ?)
                        ON CONFLICT (uid, client) DO UPDATE SET configuration = excluded.configuration,
                          action = excluded.action
                        """,
                    arguments: [Int64(uid), client.rawValue, extensions.configuration, extensions.action])
            }
        }
    }
}
