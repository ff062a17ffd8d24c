import ScreenTimeSQLite

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

    // The statements are those GRDB's schema builder ran (as `sqlite_master` keeps them), so that a
    // database made now has the schema of one made before.
    private static func v1(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE "authorization" (\
                "uid" INTEGER PRIMARY KEY, \
                "userName" TEXT NOT NULL, \
                "member" TEXT NOT NULL, \
                "status" TEXT NOT NULL, \
                "showNamesToChild" BOOLEAN NOT NULL DEFAULT 0, \
                "changedAt" DATETIME NOT NULL, \
                "changedByUID" INTEGER NOT NULL);
                CREATE TABLE "store" (\
                "uid" INTEGER NOT NULL, \
                "client" TEXT NOT NULL, \
                "name" TEXT NOT NULL, \
                "settings" TEXT NOT NULL, \
                "updatedAt" DATETIME NOT NULL, \
                PRIMARY KEY ("uid", "client", "name"));
                CREATE TABLE "tokenName" (\
                "token" TEXT PRIMARY KEY NOT NULL, \
                "kind" TEXT NOT NULL, \
                "identity" TEXT NOT NULL, \
                "displayName" TEXT NOT NULL);
                """)
    }

    private static func v2(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE "shieldEvent" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "uid" INTEGER NOT NULL, \
                "kind" TEXT NOT NULL, \
                "token" TEXT NOT NULL, \
                "reason" TEXT NOT NULL, \
                "category" TEXT, \
                "first" DATETIME NOT NULL, \
                "last" DATETIME NOT NULL, \
                "count" INTEGER NOT NULL);
                CREATE INDEX "shieldEventByUser" ON "shieldEvent"("uid", "last");
                """)
    }

    private static func v3(_ db: Database) throws {
        // What the agent froze, with where each process came from: after a crash, the next
        // run thaws what is no longer shielded back into its own group.
        try db.execute(
            sql: """
                CREATE TABLE "frozenProcess" (\
                "pid" INTEGER NOT NULL, \
                "startTime" INTEGER NOT NULL, \
                "uid" INTEGER NOT NULL, \
                "token" TEXT NOT NULL, \
                "origin" TEXT NOT NULL, \
                "frozenAt" DATETIME NOT NULL, \
                PRIMARY KEY ("pid", "startTime"));
                CREATE TABLE "applicationEvent" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "time" DATETIME NOT NULL, \
                "uid" INTEGER NOT NULL, \
                "token" TEXT NOT NULL, \
                "pid" INTEGER NOT NULL, \
                "action" TEXT NOT NULL);
                CREATE INDEX "applicationEventByUser" ON "applicationEvent"("uid", "time");
                """)
    }

    private static func v4(_ db: Database) throws {
        // Per asker (the uid whose session typed the password): consecutive failures, the
        // last one, and whether a guardian must lift a lockout. Kept across restarts, so that
        // restarting the agent is no way to more guesses.
        try db.execute(
            sql: """
                CREATE TABLE "passwordFailure" (\
                "uid" INTEGER PRIMARY KEY, \
                "failures" INTEGER NOT NULL, \
                "lastFailure" DATETIME NOT NULL, \
                "locked" BOOLEAN NOT NULL DEFAULT 0);
                """)
    }

    private static func v5(_ db: Database) throws {
        // Foreground time: one row per stretch of an application in front (stretches of the
        // same application in one session less than a few seconds apart share a row, so a
        // child switching windows fast cannot grow the table fast).
        // Names the user's programs looked up, per registrable domain and day.
        try db.execute(
            sql: """
                CREATE TABLE "usageSpan" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "uid" INTEGER NOT NULL, \
                "session" TEXT NOT NULL, \
                "token" TEXT NOT NULL, \
                "identity" TEXT NOT NULL, \
                "displayName" TEXT NOT NULL, \
                "categories" TEXT NOT NULL, \
                "start" DATETIME NOT NULL, \
                "end" DATETIME NOT NULL);
                CREATE INDEX "usageSpanByUser" ON "usageSpan"("uid", "end");
                CREATE TABLE "domainLookup" (\
                "uid" INTEGER NOT NULL, \
                "day" TEXT NOT NULL, \
                "domain" TEXT NOT NULL, \
                "count" INTEGER NOT NULL, \
                "first" DATETIME NOT NULL, \
                "last" DATETIME NOT NULL, \
                PRIMARY KEY ("uid", "day", "domain"));
                """)
    }

    private static func v6(_ db: Database) throws {
        // One row per monitored activity: its definition and what has been told of it.
        // Callbacks owed: written with the progress that made them owed, deleted once run.
        // How the latest runs went (a few per monitor).
        try db.execute(
            sql: """
                CREATE TABLE "monitor" (\
                "uid" INTEGER NOT NULL, \
                "client" TEXT NOT NULL, \
                "name" TEXT NOT NULL, \
                "definition" TEXT NOT NULL, \
                "progress" TEXT NOT NULL, \
                PRIMARY KEY ("uid", "client", "name"));
                CREATE TABLE "owedCallback" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "uid" INTEGER NOT NULL, \
                "client" TEXT NOT NULL, \
                "name" TEXT NOT NULL, \
                "callback" TEXT NOT NULL);
                CREATE TABLE "extensionRun" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "uid" INTEGER NOT NULL, \
                "client" TEXT NOT NULL, \
                "name" TEXT NOT NULL, \
                "callback" TEXT NOT NULL, \
                "at" DATETIME NOT NULL, \
                "outcome" TEXT NOT NULL, \
                "problem" TEXT);
                CREATE INDEX "extensionRunByMonitor" ON "extensionRun"("uid", "client", "name", "id");
                """)
    }

    private static func v7(_ db: Database) throws {
        // When a user's programs used a registrable domain: a window from a lookup or a
        // connection naming it to a few minutes after the last one (windows a few minutes
        // apart are one row).
        try db.execute(
            sql: """
                CREATE TABLE "webActivity" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "uid" INTEGER NOT NULL, \
                "domain" TEXT NOT NULL, \
                "start" DATETIME NOT NULL, \
                "end" DATETIME NOT NULL);
                CREATE INDEX "webActivityByUser" ON "webActivity"("uid", "end");
                """)
    }

    private static func v8(_ db: Database) throws {
        // A child's asks for more time, and what a guardian decided: a granted one lifts the
        // shield on its token until `until`.
        // Each client's configuration and action extensions, per user.
        try db.execute(
            sql: """
                CREATE TABLE "timeRequest" (\
                "id" INTEGER PRIMARY KEY AUTOINCREMENT, \
                "uid" INTEGER NOT NULL, \
                "kind" TEXT NOT NULL, \
                "token" TEXT NOT NULL, \
                "name" TEXT NOT NULL, \
                "minutes" INTEGER NOT NULL, \
                "note" TEXT, \
                "state" TEXT NOT NULL, \
                "createdAt" DATETIME NOT NULL, \
                "decidedAt" DATETIME, \
                "decidedBy" TEXT, \
                "until" DATETIME);
                CREATE INDEX "timeRequestByUser" ON "timeRequest"("uid", "state");
                CREATE TABLE "shieldExtension" (\
                "uid" INTEGER NOT NULL, \
                "client" TEXT NOT NULL, \
                "configuration" TEXT, \
                "action" TEXT, \
                PRIMARY KEY ("uid", "client"));
                """)
    }

    private static func v9(_ db: Database) throws {
        // Why a child's sessions are locked and logins refused, until when: downtime with
        // --no-login while its interval lasts, the day's screen time used up until midnight.
        // Set and cleared by the built-in monitors' reactions (each once per interval, and
        // caught up after a restart), so a restart keeps a lock in force.
        try db.execute(
            sql: """
                CREATE TABLE "loginLock" (\
                "uid" INTEGER NOT NULL, \
                "reason" TEXT NOT NULL, \
                "until" DATETIME NOT NULL, \
                "since" DATETIME NOT NULL, \
                PRIMARY KEY ("uid", "reason"));
                """)
    }

    private static func v10(_ db: Database) throws {
        // What a guardian always allows a child, under downtime and a used-up screen time: apps
        // and web domains by token, with the name the guardian gave.
        try db.execute(
            sql: """
                CREATE TABLE "alwaysAllowed" (\
                "uid" INTEGER NOT NULL, \
                "kind" TEXT NOT NULL, \
                "token" TEXT NOT NULL, \
                "name" TEXT NOT NULL, \
                PRIMARY KEY ("uid", "kind", "token"));
                """)
    }

    private static func v11(_ db: Database) throws {
        // What a lock does to a child's sessions besides refusing its logins: hold them, log them
        // out, or suspend the computer; and the warnings before it and before a limit (seconds,
        // comma-separated; NULL: the default 30, 10, 5 and 1 minutes). No row: both defaults.
        try db.execute(
            sql: """
                CREATE TABLE "lockout" (\
                "uid" INTEGER PRIMARY KEY NOT NULL, \
                "action" TEXT NOT NULL, \
                "warnings" TEXT);
                """)
    }

    private static func v12(_ db: Database) throws {
        // The dashboard's guardian sessions: the SHA-256 of each secret (the secret itself lives
        // only in the guardian's cookie), whose it is, the device's own name, whether a paired
        // device's (long-lived), and when it was made, last used and ends. And the one-time codes
        // that pair a phone, hashed too, until they are used or run out.
        try db.execute(
            sql: """
                CREATE TABLE "webSession" (\
                "secretHash" TEXT PRIMARY KEY NOT NULL, \
                "uid" INTEGER NOT NULL, \
                "device" TEXT NOT NULL, \
                "paired" BOOLEAN NOT NULL, \
                "created" DATETIME NOT NULL, \
                "lastUsed" DATETIME NOT NULL, \
                "expires" DATETIME NOT NULL);
                CREATE TABLE "webPairing" (\
                "codeHash" TEXT PRIMARY KEY NOT NULL, \
                "uid" INTEGER NOT NULL, \
                "expires" DATETIME NOT NULL);
                """)
    }

    private static func v13(_ db: Database) throws {
        // Whether a guardian has the dashboard on, where it listens (a JSON list of addresses,
        // empty: the home network's), and who changed it last: one row at most.
        try db.execute(
            sql: """
                CREATE TABLE "webService" (\
                "id" INTEGER PRIMARY KEY CHECK ("id" = 1), \
                "enabled" BOOLEAN NOT NULL, \
                "port" INTEGER NOT NULL, \
                "listen" TEXT NOT NULL, \
                "changedBy" TEXT NOT NULL, \
                "changedAt" DATETIME NOT NULL);
                """)
    }

    private static func v14(_ db: Database) throws {
        // What the browsers may do while a child is authorized (BrowserSettings as JSON), and who
        // changed it last: one row at most.
        try db.execute(
            sql: """
                CREATE TABLE "browserSettings" (\
                "id" INTEGER PRIMARY KEY CHECK ("id" = 1), \
                "settings" TEXT NOT NULL, \
                "changedBy" TEXT NOT NULL, \
                "changedAt" DATETIME NOT NULL);
                """)
    }
}
