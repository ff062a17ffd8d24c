import Foundation
import ScreenTimeSQLite
import ScreenTimeTestKit
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// The state database's own SQLite layer (it replaced GRDB): what it stores, its transactions and
/// its migrations, and the state GRDB wrote, which an upgraded agent reads as it is.
@Suite struct StateSQLiteTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/"

    func queue(_ directory: TemporaryDirectory) throws -> DatabaseQueue {
        try DatabaseQueue(path: directory.path + "/test.sqlite")
    }

    /// GRDB's text for 709 dates (9 chosen, 700 at random from 1970 to 2100, some on exact
    /// milliseconds), written by the last version that used it: the new text is the same, so
    /// that old and new rows compare in order in SQL, and reading it gives the same text again.
    @Test func datesAreWrittenAsGRDBWroteThem() throws {
        let text = try String(contentsOfFile: Self.fixtures + "grdb-dates.txt", encoding: .utf8)
        var checked = 0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            let date = Date(timeIntervalSince1970: Double(bitPattern: try #require(UInt64(parts[0]))))
            let written = String(parts[1])
            #expect(date.databaseValue == .text(written), "\(date.timeIntervalSince1970)")
            let read = try #require(Date.fromDatabaseValue(.text(written)), "\(written)")
            #expect(read.databaseValue == .text(written))
            #expect(abs(read.timeIntervalSince(date)) <= 0.0005 + 1e-6, "\(written)")
            checked += 1
        }
        #expect(checked == 709)
        // Other ways a date is read: less precision, a T, a number of seconds.
        let day = Date(timeIntervalSince1970: 1_764_374_400)
        #expect(Date.fromDatabaseValue(.text("2025-11-29")) == day)
        #expect(Date.fromDatabaseValue(.text("2025-11-29 14:05")) == day + 50_700)
        #expect(Date.fromDatabaseValue(.text("2025-11-29T14:05:09")) == day + 50_709)
        #expect(Date.fromDatabaseValue(.text("2025-11-29 14:05:09.5")) == day + 50_709.5)
        #expect(Date.fromDatabaseValue(.integer(1_764_374_400)) == day)
        #expect(Date.fromDatabaseValue(.real(1_764_374_400.25)) == day + 0.25)
        for bad in [
            "", "2025-11-31", "2025-13-01", "2025-11-29 24:00", "2025-11-29 14:05:09.", "29/11/2025", "2025-11-29x",
        ] {
            #expect(Date.fromDatabaseValue(.text(bad)) == nil, "\(bad)")
        }
        #expect(Date.fromDatabaseValue(.null) == nil)
    }

    /// The state an agent that used GRDB left (v14, its `.dump`): the migrations run none again,
    /// and every kind of value reads as GRDB wrote it: dates, booleans, NULLs, JSON text.
    @Test func stateGRDBWroteIsReadAsItIs() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.sqlite"
        let dump = try String(contentsOfFile: Self.fixtures + "state-grdb-v14.sql", encoding: .utf8)
        do {
            let loader = try DatabaseQueue(path: path)
            try loader.writeWithoutTransaction { try $0.execute(sql: dump) }
        }
        let database = try StateDatabase(path: path)
        #expect(
            try StateMigrations.migrator.appliedMigrations(database.queue) == StateMigrations.all.map(\.name))
        func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }
        #expect(
            try database.authorizations() == [
                .init(
                    uid: 1002, userName: "leo", member: .individual, status: .denied, showNamesToChild: false,
                    changedAt: at(1_700_000_000.5), changedByUID: 0),
                .init(
                    uid: 1001, userName: "mia", member: .child, status: .approved, showNamesToChild: true,
                    changedAt: at(1_764_424_800.125), changedByUID: 1000),
            ])
        let requests = try database.timeRequests(uid: 1001)
        #expect(requests.count == 2)
        let granted = try #require(requests.first { $0.id == 1 })
        #expect(granted.state == .granted && granted.kind == .webDomain && granted.minutes == 15)
        #expect(granted.note == nil && granted.decidedBy == "dad")
        #expect(granted.createdAt == at(1_764_424_900.25) && granted.until == at(1_764_425_800.75))
        #expect(granted.decidedAt == at(1_764_424_950))
        let pending = try #require(requests.first { $0.id == 2 })
        #expect(pending.note == "for school" && pending.decidedAt == nil && pending.until == nil)
        #expect(try database.grants(uid: 1001, at: at(1_764_425_000)).map(\.id) == [1])
        #expect(try database.grants(uid: 1001, at: at(1_764_425_801)).isEmpty)
        let failures = try #require(try database.passwordFailures(uid: 1000))
        #expect(failures.failures == 3 && failures.locked && failures.lastFailure == at(1_764_420_000.001))
        let service = try database.webService()
        #expect(service.enabled && service.port == 8443 && service.listen == ["0.0.0.0"] && service.changedBy == "dad")
        #expect(try database.loginLocks(uid: 1001, at: at(1_764_445_000)).map(\.reason) == [.downtime])
        #expect(try database.nextLoginLockEnd(after: at(1_764_445_000)) == at(1_764_450_000))
        // A new row's id follows GRDB's, and a date written now compares with GRDB's in SQL.
        let third = try database.addTimeRequest(
            .init(
                id: nil, uid: 1001, kind: .screenTime, token: "", name: "screen time", minutes: 30, note: nil,
                state: .pending, createdAt: at(1_764_424_000)))
        #expect(third.id == 3)
        let ordered = try database.queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM timeRequest ORDER BY createdAt")
        }
        #expect(ordered == [3, 1, 2])
    }

    /// A database made now has the schema GRDB's migrations made, to the letter.
    @Test func theMigrationsMakeTheSchemaGRDBMade() throws {
        let directory = try TemporaryDirectory()
        let dump = try String(contentsOfFile: Self.fixtures + "state-grdb-v14.sql", encoding: .utf8)
        let old = try DatabaseQueue(path: directory.path + "/old.sqlite")
        try old.writeWithoutTransaction { try $0.execute(sql: dump) }
        let new = try StateDatabase(path: directory.path + "/new.sqlite")
        func schema(_ queue: DatabaseQueue) throws -> [String] {
            try queue.read { db in
                try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").map {
                    "\($0["type"] as String) \($0["name"] as String) \($0["tbl_name"] as String) \($0["sql"] ?? "-")"
                }
            }
        }
        let made = try schema(new.queue)
        #expect(made.count == 41)
        #expect(made == (try schema(old)))
        #expect(try new.durability() == ("wal", 2))
    }

    @Test func valuesGoInAndComeOutAsTheyWere() throws {
        let directory = try TemporaryDirectory()
        let queue = try queue(directory)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB, f BOOLEAN)")
            try db.execute(
                sql:
                    "INSERT INTO t (i, r, s, b, f) VALUES (?, ?, ?, ?, ?); INSERT INTO t (i, r, s, b, f) VALUES (?, ?, ?, ?, ?)",
                arguments: [
                    Int64.min, 0.1, "é\u{0}x", Data([0, 1, 2]), true, nil, -1.5, "", Data(), false,
                ])
            #expect(db.lastInsertedRowID == 2)
            try db.execute(sql: "UPDATE t SET i = 7 WHERE i IS NULL")
            #expect(db.changesCount == 1)
        }
        let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT * FROM t ORDER BY id") }
        #expect(rows.count == 2)
        #expect(rows[0]["i"] == Int64.min && rows[0]["r"] == 0.1 && rows[0]["S"] == "é\u{0}x")
        #expect(rows[0]["b"] == Data([0, 1, 2]) && rows[0]["f"] == true)
        #expect(rows[1]["i"] == 7 && rows[1]["s"] == "" && rows[1]["b"] == Data() && rows[1]["f"] == false)
        #expect(rows[1].databaseValue("b") == .blob([]))
        // NULL and a value of another kind read as nil; a column not returned too.
        let row = try #require(try queue.read { db in try Row.fetchOne(db, sql: "SELECT NULL AS n, 'x' AS s") })
        #expect((row["n"] as String?) == nil && (row["s"] as Int?) == nil && (row["missing"] as String?) == nil)
        #expect(try queue.read { db in try Int.fetchOne(db, sql: "SELECT id FROM t WHERE id > 5") } == nil)
        #expect(
            try queue.read { db in try String.fetchAll(db, sql: "SELECT s FROM t ORDER BY id") } == ["é\u{0}x", ""])
        #expect(try queue.read { db in try Int32.fetchOne(db, sql: "SELECT ?", arguments: [Int64.max]) } == nil)
    }

    @Test func aWriteThatThrowsLeavesNothingAndAReadWritesNothing() throws {
        let directory = try TemporaryDirectory()
        let queue = try queue(directory)
        try queue.write { try $0.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT NOT NULL)") }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try queue.write { db in
                try db.execute(sql: "INSERT INTO t (s) VALUES ('a')")
                throw Stop()
            }
        }
        // A failing statement: SQLite's words, and the statement.
        do {
            try queue.write { db in
                try db.execute(sql: "INSERT INTO t (s) VALUES ('b')")
                try db.execute(sql: "INSERT INTO t (s) VALUES (NULL)")
            }
            Issue.record("a NULL went into a NOT NULL column")
        } catch let error as DatabaseError {
            #expect(error.description.contains("NOT NULL constraint failed: t.s"), "\(error)")
            #expect(error.sql == "INSERT INTO t (s) VALUES (NULL)")
        }
        #expect(throws: DatabaseError.self) { try queue.read { try $0.execute(sql: "INSERT INTO t (s) VALUES ('c')") } }
        // Arguments that do not match the statements: an error, and nothing run.
        #expect(throws: DatabaseError.self) {
            try queue.write { try $0.execute(sql: "INSERT INTO t (s) VALUES (?)", arguments: ["d", "e"]) }
        }
        #expect(throws: DatabaseError.self) {
            try queue.write { try $0.execute(sql: "INSERT INTO t (s) VALUES (?)") }
        }
        #expect(throws: DatabaseError.self) { try queue.read { try Row.fetchAll($0, sql: "SELECT 1; SELECT 2") } }
        #expect(throws: DatabaseError.self) { try queue.read { try Row.fetchAll($0, sql: "SELEC 1") } }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM t") } == 0)
        // And the connection goes on.
        try queue.write { try $0.execute(sql: "INSERT INTO t (s) VALUES ('f')") }
        #expect(try queue.read { try String.fetchAll($0, sql: "SELECT s FROM t") } == ["f"])
    }

    @Test func writesFromManyThreadsAreEachWhole() throws {
        let directory = try TemporaryDirectory()
        let queue = try DatabaseQueue(path: directory.path + "/test.sqlite") { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        try queue.write {
            try $0.execute(sql: "CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)")
        }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<50 {
                try? queue.write { db in
                    let n = try Int.fetchOne(db, sql: "SELECT n FROM counter") ?? 0
                    try db.execute(sql: "UPDATE counter SET n = ?", arguments: [n + 1])
                }
            }
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT n FROM counter") } == 400)
    }

    @Test func eachMigrationRunsOnceAndOneThatFailsLeavesNoTrace() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/test.sqlite"
        let runs = Mutex(0)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("one") { db in
            runs.withLock { $0 += 1 }
            try db.execute(sql: "CREATE TABLE a (x INTEGER)")
        }
        try migrator.migrate(try DatabaseQueue(path: path))
        try migrator.migrate(try DatabaseQueue(path: path))
        #expect(runs.withLock { $0 } == 1)
        migrator.registerMigration("two, which fails halfway") { db in
            try db.execute(sql: "CREATE TABLE b (x INTEGER)")
            try db.execute(sql: "CREATE TABLE a (x INTEGER)")
        }
        let queue = try DatabaseQueue(path: path)
        #expect(throws: DatabaseError.self) { try migrator.migrate(queue) }
        #expect(try migrator.appliedMigrations(queue) == ["one"])
        #expect(
            try queue.read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE name = 'b'") } == [])
    }
}
