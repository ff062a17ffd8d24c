import GRDB

/// Every schema change of the state database, in the order they run. A migration once released is
/// never edited: a new schema is a new entry at the end of `all`.
enum StateMigrations {
    static let all: [(name: String, migrate: @Sendable (Database) throws -> Void)] = [
        ("v1: authorizations, stores, token names", v1),
        ("v2: shield events", v2),
        ("v3: frozen processes, application events", v3),
        ("v4: failed guardian passwords", v4),
        ("v5: usage spans, domain lookups", v5),
        ("v6: monitors, owed callbacks, extension runs", v6),
        ("v7: web activity", v7),
        ("v8: time requests, shield extensions", v8),
        ("v9: login locks", v9),
        ("v10: always allowed", v10),
        ("v11: lockout actions", v11),
        ("v12: dashboard sessions", v12),
        ("v13: the dashboard's setting", v13),
        ("v14: the browsers' settings", v14),
    ]

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (name, migrate) in all { migrator.registerMigration(name, migrate: migrate) }
        return migrator
    }

    private static func v1(_ db: Database) throws {
        try db.create(table: "authorization") { table in
            table.primaryKey("uid", .integer)
            table.column("userName", .text).notNull()
            table.column("member", .text).notNull()
            table.column("status", .text).notNull()
            table.column("showNamesToChild", .boolean).notNull().defaults(to: false)
            table.column("changedAt", .datetime).notNull()
            table.column("changedByUID", .integer).notNull()
        }
        try db.create(table: "store") { table in
            table.column("uid", .integer).notNull()
            table.column("client", .text).notNull()
            table.column("name", .text).notNull()
            table.column("settings", .text).notNull()
            table.column("updatedAt", .datetime).notNull()
            table.primaryKey(["uid", "client", "name"])
        }
        try db.create(table: "tokenName") { table in
            table.primaryKey("token", .text)
            table.column("kind", .text).notNull()
            table.column("identity", .text).notNull()
            table.column("displayName", .text).notNull()
        }
    }

    private static func v2(_ db: Database) throws {
        try db.create(table: "shieldEvent") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("uid", .integer).notNull()
            table.column("kind", .text).notNull()
            table.column("token", .text).notNull()
            table.column("reason", .text).notNull()
            table.column("category", .text)
            table.column("first", .datetime).notNull()
            table.column("last", .datetime).notNull()
            table.column("count", .integer).notNull()
        }
        try db.create(index: "shieldEventByUser", on: "shieldEvent", columns: ["uid", "last"])
    }

    private static func v3(_ db: Database) throws {
        // What the agent froze, with where each process came from: after a crash, the next
        // run thaws what is no longer shielded back into its own group.
        try db.create(table: "frozenProcess") { table in
            table.column("pid", .integer).notNull()
            table.column("startTime", .integer).notNull()
            table.column("uid", .integer).notNull()
            table.column("token", .text).notNull()
            table.column("origin", .text).notNull()
            table.column("frozenAt", .datetime).notNull()
            table.primaryKey(["pid", "startTime"])
        }
        try db.create(table: "applicationEvent") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("time", .datetime).notNull()
            table.column("uid", .integer).notNull()
            table.column("token", .text).notNull()
            table.column("pid", .integer).notNull()
            table.column("action", .text).notNull()
        }
        try db.create(index: "applicationEventByUser", on: "applicationEvent", columns: ["uid", "time"])
    }

    private static func v4(_ db: Database) throws {
        // Per asker (the uid whose session typed the password): consecutive failures, the
        // last one, and whether a guardian must lift a lockout. Kept across restarts, so that
        // restarting the agent is no way to more guesses.
        try db.create(table: "passwordFailure") { table in
            table.primaryKey("uid", .integer)
            table.column("failures", .integer).notNull()
            table.column("lastFailure", .datetime).notNull()
            table.column("locked", .boolean).notNull().defaults(to: false)
        }
    }

    private static func v5(_ db: Database) throws {
        // Foreground time: one row per stretch of an application in front (stretches of the
        // same application in one session less than a few seconds apart share a row, so a
        // child switching windows fast cannot grow the table fast).
        try db.create(table: "usageSpan") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("uid", .integer).notNull()
            table.column("session", .text).notNull()
            table.column("token", .text).notNull()
            table.column("identity", .text).notNull()
            table.column("displayName", .text).notNull()
            // Category names, one per line.
            table.column("categories", .text).notNull()
            table.column("start", .datetime).notNull()
            table.column("end", .datetime).notNull()
        }
        try db.create(index: "usageSpanByUser", on: "usageSpan", columns: ["uid", "end"])
        // Names the user's programs looked up, per registrable domain and day.
        try db.create(table: "domainLookup") { table in
            table.column("uid", .integer).notNull()
            table.column("day", .text).notNull()
            table.column("domain", .text).notNull()
            table.column("count", .integer).notNull()
            table.column("first", .datetime).notNull()
            table.column("last", .datetime).notNull()
            table.primaryKey(["uid", "day", "domain"])
        }
    }

    private static func v6(_ db: Database) throws {
        // One row per monitored activity: its definition and what has been told of it.
        try db.create(table: "monitor") { table in
            table.column("uid", .integer).notNull()
            table.column("client", .text).notNull()
            table.column("name", .text).notNull()
            table.column("definition", .text).notNull()
            table.column("progress", .text).notNull()
            table.primaryKey(["uid", "client", "name"])
        }
        // Callbacks owed: written with the progress that made them owed, deleted once run.
        try db.create(table: "owedCallback") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("uid", .integer).notNull()
            table.column("client", .text).notNull()
            table.column("name", .text).notNull()
            table.column("callback", .text).notNull()
        }
        // How the latest runs went (a few per monitor).
        try db.create(table: "extensionRun") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("uid", .integer).notNull()
            table.column("client", .text).notNull()
            table.column("name", .text).notNull()
            table.column("callback", .text).notNull()
            table.column("at", .datetime).notNull()
            table.column("outcome", .text).notNull()
            table.column("problem", .text)
        }
        try db.create(index: "extensionRunByMonitor", on: "extensionRun", columns: ["uid", "client", "name", "id"])
    }

    private static func v7(_ db: Database) throws {
        // When a user's programs used a registrable domain: a window from a lookup or a
        // connection naming it to a few minutes after the last one (windows a few minutes
        // apart are one row).
        try db.create(table: "webActivity") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("uid", .integer).notNull()
            table.column("domain", .text).notNull()
            table.column("start", .datetime).notNull()
            table.column("end", .datetime).notNull()
        }
        try db.create(index: "webActivityByUser", on: "webActivity", columns: ["uid", "end"])
    }

    private static func v8(_ db: Database) throws {
        // A child's asks for more time, and what a guardian decided: a granted one lifts the
        // shield on its token until `until`.
        try db.create(table: "timeRequest") { table in
            table.autoIncrementedPrimaryKey("id")
            table.column("uid", .integer).notNull()
            table.column("kind", .text).notNull()
            table.column("token", .text).notNull()
            table.column("name", .text).notNull()
            table.column("minutes", .integer).notNull()
            table.column("note", .text)
            table.column("state", .text).notNull()
            table.column("createdAt", .datetime).notNull()
            table.column("decidedAt", .datetime)
            table.column("decidedBy", .text)
            table.column("until", .datetime)
        }
        try db.create(index: "timeRequestByUser", on: "timeRequest", columns: ["uid", "state"])
        // Each client's configuration and action extensions, per user.
        try db.create(table: "shieldExtension") { table in
            table.column("uid", .integer).notNull()
            table.column("client", .text).notNull()
            table.column("configuration", .text)
            table.column("action", .text)
            table.primaryKey(["uid", "client"])
        }
    }

    private static func v9(_ db: Database) throws {
        // Why a child's sessions are locked and logins refused, until when: downtime with
        // --no-login while its interval lasts, the day's screen time used up until midnight.
        // Set and cleared by the built-in monitors' reactions (each once per interval, and
        // caught up after a restart), so a restart keeps a lock in force.
        try db.create(table: "loginLock") { table in
            table.column("uid", .integer).notNull()
            table.column("reason", .text).notNull()
            table.column("until", .datetime).notNull()
            table.column("since", .datetime).notNull()
            table.primaryKey(["uid", "reason"])
        }
    }

    private static func v10(_ db: Database) throws {
        // What a guardian always allows a child, under downtime and a used-up screen time: apps
        // and web domains by token, with the name the guardian gave.
        try db.create(table: "alwaysAllowed") { table in
            table.column("uid", .integer).notNull()
            table.column("kind", .text).notNull()
            table.column("token", .text).notNull()
            table.column("name", .text).notNull()
            table.primaryKey(["uid", "kind", "token"])
        }
    }

    private static func v11(_ db: Database) throws {
        // What a lock does to a child's sessions besides refusing its logins: hold them, log them
        // out, or suspend the computer; and the warnings before it and before a limit (seconds,
        // comma-separated; NULL: the default 30, 10, 5 and 1 minutes). No row: both defaults.
        try db.create(table: "lockout") { table in
            table.column("uid", .integer).notNull().primaryKey()
            table.column("action", .text).notNull()
            table.column("warnings", .text)
        }
    }

    private static func v12(_ db: Database) throws {
        // The dashboard's guardian sessions: the SHA-256 of each secret (the secret itself lives
        // only in the guardian's cookie), whose it is, the device's own name, whether a paired
        // device's (long-lived), and when it was made, last used and ends. And the one-time codes
        // that pair a phone, hashed too, until they are used or run out.
        try db.create(table: "webSession") { table in
            table.column("secretHash", .text).notNull().primaryKey()
            table.column("uid", .integer).notNull()
            table.column("device", .text).notNull()
            table.column("paired", .boolean).notNull()
            table.column("created", .datetime).notNull()
            table.column("lastUsed", .datetime).notNull()
            table.column("expires", .datetime).notNull()
        }
        try db.create(table: "webPairing") { table in
            table.column("codeHash", .text).notNull().primaryKey()
            table.column("uid", .integer).notNull()
            table.column("expires", .datetime).notNull()
        }
    }

    private static func v13(_ db: Database) throws {
        // Whether a guardian has the dashboard on, where it listens (a JSON list of addresses,
        // empty: the home network's), and who changed it last: one row at most.
        try db.create(table: "webService") { table in
            table.primaryKey("id", .integer).check { $0 == 1 }
            table.column("enabled", .boolean).notNull()
            table.column("port", .integer).notNull()
            table.column("listen", .text).notNull()
            table.column("changedBy", .text).notNull()
            table.column("changedAt", .datetime).notNull()
        }
    }

    private static func v14(_ db: Database) throws {
        // What the browsers may do while a child is authorized (BrowserSettings as JSON), and who
        // changed it last: one row at most.
        try db.create(table: "browserSettings") { table in
            table.primaryKey("id", .integer).check { $0 == 1 }
            table.column("settings", .text).notNull()
            table.column("changedBy", .text).notNull()
            table.column("changedAt", .datetime).notNull()
        }
    }
}
