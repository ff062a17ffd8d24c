import FoundationEssentials
import ScreenTimeCore
import ScreenTimeSQLite

extension StateDatabase {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    private static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private static func text(_ value: some Encodable) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Every monitor, with its progress. A row that no longer decodes (never written by this
    /// agent) is skipped and named in `unreadable`.
    func monitors() throws -> (monitors: [(Monitor, ActivityProgress)], unreadable: [String]) {
        try queue.read { db in
            var found: [(Monitor, ActivityProgress)] = []
            var unreadable: [String] = []
            let decoder = Self.decoder()
            for row in try Row.fetchAll(db, sql: "SELECT * FROM monitor ORDER BY uid, client, name") {
                do {
                    let monitor = try decoder.decode(Monitor.self, from: Data((row["definition"] as String).utf8))
                    let progress = try decoder.decode(
                        ActivityProgress.self, from: Data((row["progress"] as String).utf8))
                    found.append((monitor, progress))
                } catch {
                    unreadable.append(
                        "\(row["client"] as String)/\(row["name"] as String) of uid \(row["uid"] as Int64)")
                }
            }
            return (found, unreadable)
        }
    }

    /// Starts (or replaces, from scratch) a monitor, remembering the names of its tokens;
    /// callbacks it still owed go.
    func saveMonitor(_ monitor: Monitor, names: [String: TokenName] = [:]) throws {
        let definition = try Self.text(monitor)
        let progress = try Self.text(ActivityProgress())
        try queue.write { db in
            try Self.remember(names, in: db)
            try Self.deleteOwed(db, monitor.key)
            try db.execute(
                sql: """
                    INSERT INTO monitor (uid, client, name, definition, progress) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (uid, client, name) DO UPDATE SET definition = excluded.definition,
                      progress = excluded.progress
                    """,
                arguments: [
                    Int64(monitor.uid), monitor.client.rawValue, monitor.activity.name.rawValue, definition, progress,
                ])
        }
    }

    /// Changes a monitor's definition and keeps its progress (what was told stays told).
    func updateMonitorDefinition(_ monitor: Monitor) throws {
        let definition = try Self.text(monitor)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE monitor SET definition = ? WHERE uid = ? AND client = ? AND name = ?",
                arguments: [definition, Int64(monitor.uid), monitor.client.rawValue, monitor.activity.name.rawValue])
        }
    }

    /// Stops monitors: they, their owed callbacks and their runs go.
    func deleteMonitors(_ keys: [Monitor.Key]) throws {
        try queue.write { db in
            for key in keys {
                try Self.deleteOwed(db, key)
                let arguments: StatementArguments = [Int64(key.uid), key.client.rawValue, key.name.rawValue]
                try db.execute(
                    sql: "DELETE FROM monitor WHERE uid = ? AND client = ? AND name = ?", arguments: arguments)
                try db.execute(
                    sql: "DELETE FROM extensionRun WHERE uid = ? AND client = ? AND name = ?", arguments: arguments)
            }
        }
    }

    private static func deleteOwed(_ db: Database, _ key: Monitor.Key) throws {
        try db.execute(
            sql: "DELETE FROM owedCallback WHERE uid = ? AND client = ? AND name = ?",
            arguments: [Int64(key.uid), key.client.rawValue, key.name.rawValue])
    }

    /// Saves the progress of monitors and the callbacks it made owed, in one transaction: a
    /// callback is owed on disk before anything runs it, and never owed twice.
    func advance(
        _ changes: [(key: Monitor.Key, progress: ActivityProgress, owed: [ActivityCallback])]
    ) throws
        -> [OwedCallback]
    {
        guard !changes.isEmpty else { return [] }
        var encoded: [(Monitor.Key, String, [(ActivityCallback, String)])] = []
        for change in changes {
            encoded.append(
                (change.key, try Self.text(change.progress), try change.owed.map { ($0, try Self.text($0)) }))
        }
        return try queue.write { db in
            var owed: [OwedCallback] = []
            for (key, progress, callbacks) in encoded {
                let arguments: StatementArguments = [Int64(key.uid), key.client.rawValue, key.name.rawValue]
                try db.execute(
                    sql: "UPDATE monitor SET progress = ? WHERE uid = ? AND client = ? AND name = ?",
                    arguments: [progress] + arguments)
                // A monitor stopped meanwhile owes nothing.
                guard db.changesCount > 0 else { continue }
                for (callback, text) in callbacks {
                    try db.execute(
                        sql: "INSERT INTO owedCallback (uid, client, name, callback) VALUES (?, ?, ?, ?)",
                        arguments: arguments + [text])
                    owed.append(OwedCallback(id: db.lastInsertedRowID, key: key, callback: callback))
                }
            }
            return owed
        }
    }

    /// Callbacks owed (after a restart: those not yet run), oldest first.
    func owedCallbacks() throws -> [OwedCallback] {
        try queue.read { db in
            let decoder = Self.decoder()
            return try Row.fetchAll(db, sql: "SELECT * FROM owedCallback ORDER BY id").compactMap { row in
                guard let name = try? DeviceActivityName.validated(row["name"]),
                    let client = try? ClientID(row["client"]),
                    let callback = try? decoder.decode(
                        ActivityCallback.self, from: Data((row["callback"] as String).utf8))
                else { return nil }
                return OwedCallback(
                    id: row["id"], key: Monitor.Key(uid: UInt32(row["uid"] as Int64), client: client, name: name),
                    callback: callback)
            }
        }
    }

    /// A callback was run (or given up): it is owed no more, and how it went is kept (the latest
    /// 20 per monitor).
    func ran(_ owed: OwedCallback, _ run: ExtensionRun) throws {
        let callback = try Self.text(run.callback)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM owedCallback WHERE id = ?", arguments: [owed.id])
            let arguments: StatementArguments = [Int64(run.key.uid), run.key.client.rawValue, run.key.name.rawValue]
            // Only while the monitor exists: a run finishing after its monitor stopped leaves nothing.
            guard
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM monitor WHERE uid = ? AND client = ? AND name = ?",
                    arguments: arguments) ?? 0 > 0
            else { return }
            try db.execute(
                sql: """
                    INSERT INTO extensionRun (uid, client, name, callback, at, outcome, problem)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: arguments + [callback, run.at, run.outcome.rawValue, run.problem])
            try db.execute(
                sql: """
                    DELETE FROM extensionRun WHERE uid = ? AND client = ? AND name = ? AND id NOT IN (
                      SELECT id FROM extensionRun WHERE uid = ? AND client = ? AND name = ? ORDER BY id DESC LIMIT 20)
                    """,
                arguments: arguments + arguments)
        }
    }

    /// The latest run of each of a user's monitors.
    func lastRuns(uid: UInt32) throws -> [Monitor.Key: ExtensionRun] {
        try queue.read { db in
            let decoder = Self.decoder()
            var runs: [Monitor.Key: ExtensionRun] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT * FROM extensionRun WHERE uid = ? ORDER BY id", arguments: [Int64(uid)])
            {
                guard let name = try? DeviceActivityName.validated(row["name"]),
                    let client = try? ClientID(row["client"]),
                    let callback = try? decoder.decode(
                        ActivityCallback.self, from: Data((row["callback"] as String).utf8)),
                    let outcome = ExtensionRun.Outcome(rawValue: row["outcome"])
                else { continue }
                let key = Monitor.Key(uid: uid, client: client, name: name)
                runs[key] = ExtensionRun(
                    key: key, callback: callback, at: row["at"], outcome: outcome, problem: row["problem"])
            }
            return runs
        }
    }

}
