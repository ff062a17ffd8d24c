import FoundationEssentials
import ScreenTimeCore
import ScreenTimeSQLite
import Synchronization

// Frozen processes and application events.
extension StateDatabase {
    /// A process the agent froze: the pid with its start time names it even after pid reuse.
    struct FrozenProcess: Hashable, Sendable {
        var pid: Int32
        var startTime: UInt64
        var uid: UInt32
        var token: String
        /// The cgroup (v2 path) it was taken from.
        var origin: String
        var frozenAt: Date
    }

    /// Something the process shield did to a process of a user's.
    struct ApplicationEvent: Hashable, Sendable {
        /// `uninstalled`: a program no guardian installed, refused or killed (`denyAppInstallation`).
        enum Action: String, Sendable { case frozen, thawed, killed, refused, uninstalled }
        var time: Date
        var uid: UInt32
        var token: String
        var pid: Int32
        var action: Action
    }

    /// Writes what was frozen and thawed, and the events, in one transaction.
    func recordShieldChanges(
        frozen: [FrozenProcess], thawed: [(pid: Int32, startTime: UInt64)], events: [ApplicationEvent],
        names: [String: TokenName]
    ) throws {
        guard !frozen.isEmpty || !thawed.isEmpty || !events.isEmpty else { return }
        defer { pruneIfDue() }
        try queue.write { db in
            for process in frozen {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO frozenProcess (pid, startTime, uid, token, origin, frozenAt)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        Int64(process.pid), Int64(bitPattern: process.startTime), Int64(process.uid), process.token,
                        process.origin, process.frozenAt,
                    ])
            }
            for process in thawed {
                try db.execute(
                    sql: "DELETE FROM frozenProcess WHERE pid = ? AND startTime = ?",
                    arguments: [Int64(process.pid), Int64(bitPattern: process.startTime)])
            }
            for event in events {
                try db.execute(
                    sql: "INSERT INTO applicationEvent (time, uid, token, pid, action) VALUES (?, ?, ?, ?, ?)",
                    arguments: [event.time, Int64(event.uid), event.token, Int64(event.pid), event.action.rawValue])
            }
            try Self.remember(names, in: db)
        }
    }

    /// Keeps the names of tokens that events use; a name already known (a guardian's) stays.
    static func remember(_ names: [String: TokenName], in db: Database) throws {
        for (token, name) in names {
            try db.execute(
                sql: "INSERT OR IGNORE INTO tokenName (token, kind, identity, displayName) VALUES (?, ?, ?, ?)",
                arguments: [token, name.kind.rawValue, name.identity, name.displayName])
        }
    }

    func frozenProcesses() throws -> [FrozenProcess] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM frozenProcess ORDER BY frozenAt").map { row in
                FrozenProcess(
                    pid: Int32(row["pid"] as Int64), startTime: UInt64(bitPattern: row["startTime"] as Int64),
                    uid: UInt32(row["uid"] as Int64), token: row["token"], origin: row["origin"],
                    frozenAt: row["frozenAt"])
            }
        }
    }

    /// A user's latest application events, newest first.
    func applicationEvents(uid: UInt32, limit: Int) throws -> [ApplicationEvent] {
        try queue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM applicationEvent WHERE uid = ? ORDER BY time DESC, id DESC LIMIT ?",
                arguments: [Int64(uid), limit]
            ).compactMap { row in
                guard let action = ApplicationEvent.Action(rawValue: row["action"]) else { return nil }
                return ApplicationEvent(
                    time: row["time"], uid: UInt32(row["uid"] as Int64), token: row["token"],
                    pid: Int32(row["pid"] as Int64), action: action)
            }
        }
    }
}
