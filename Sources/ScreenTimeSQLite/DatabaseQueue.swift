import CSQLite
import Glibc

/// One connection to a database file, used by one closure at a time (callers wait their turn):
/// `read` in a read-only transaction, `write` in a transaction that commits when the closure
/// returns and rolls back when it throws.
///
/// Sendable by its lock: the connection is touched only while it is held. (A pthread mutex, not
/// `Mutex`: a closure's result of any type is returned from under it.)
public final class DatabaseQueue: @unchecked Sendable {
    private let database: Database
    private let lock: UnsafeMutablePointer<pthread_mutex_t>

    /// Opens (or creates) the database at `path`; `prepare` runs first on the new connection (its
    /// pragmas). Foreign keys are enforced.
    public init(path: String, prepare: (Database) throws -> Void = { _ in }) throws {
        database = try Database(path: path)
        try database.execute(sql: "PRAGMA foreign_keys = ON")
        try prepare(database)
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` with the connection read-only (`PRAGMA query_only`), in one transaction: what it
    /// reads is one state of the database.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try locked { database in
            try database.execute(sql: "PRAGMA query_only = 1")
            defer { try? database.execute(sql: "PRAGMA query_only = 0") }
            return try database.inTransaction("BEGIN DEFERRED", body)
        }
    }

    /// Runs `body` in an immediate transaction: committed when it returns (on disk by then, with
    /// `synchronous = FULL`), rolled back when it throws.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try locked { database in try database.inTransaction("BEGIN IMMEDIATE", body) }
    }

    /// Runs `body` outside any transaction (a checkpoint, a migration that opens its own).
    public func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try locked(body)
    }

    private func locked<T>(_ body: (Database) throws -> T) rethrows -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(database)
    }
}

extension Database {
    /// Runs `body` between `begin` and COMMIT; rolls back when it throws or the commit fails.
    func inTransaction<T>(_ begin: String, _ body: (Database) throws -> T) throws -> T {
        try execute(sql: begin)
        do {
            let result = try body(self)
            try execute(sql: "COMMIT")
            return result
        } catch {
            if isInTransaction { try? execute(sql: "ROLLBACK") }
            throw error
        }
    }
}

/// The schema's migrations, in the order they run, each once: the ones run are noted by name in
/// `grdb_migrations`, the table GRDB's migrator kept (databases it migrated go on from there).
public struct DatabaseMigrator: Sendable {
    private var migrations: [(name: String, migrate: @Sendable (Database) throws -> Void)] = []

    public init() {}

    /// Adds a migration after those registered; a name is registered once.
    public mutating func registerMigration(_ name: String, migrate: @escaping @Sendable (Database) throws -> Void) {
        precondition(!migrations.contains { $0.name == name }, "migration \(name) registered twice")
        migrations.append((name, migrate))
    }

    /// Runs the migrations not run yet, in order, each in a transaction of its own with foreign
    /// keys checked at its end (SQLite's procedure for schema changes, as GRDB ran them).
    public func migrate(_ queue: DatabaseQueue) throws {
        try queue.writeWithoutTransaction { database in
            try database.execute(
                sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            let done = Set(try String.fetchAll(database, sql: "SELECT identifier FROM grdb_migrations"))
            for migration in migrations where !done.contains(migration.name) {
                try database.execute(sql: "PRAGMA foreign_keys = OFF")
                defer { try? database.execute(sql: "PRAGMA foreign_keys = ON") }
                try database.inTransaction("BEGIN IMMEDIATE") { database in
                    try migration.migrate(database)
                    if let broken = try Row.fetchOne(database, sql: "PRAGMA foreign_key_check") {
                        // SQLITE_CONSTRAINT_FOREIGNKEY, a macro Swift does not import.
                        throw DatabaseError(
                            code: SQLITE_CONSTRAINT | (3 << 8),
                            message:
                                "migration \(migration.name) broke a foreign key of table \(broken["table"] ?? "?")",
                            sql: nil)
                    }
                    try database.execute(
                        sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [migration.name])
                }
            }
        }
    }

    /// The names of the migrations `queue`'s database has run.
    public func appliedMigrations(_ queue: DatabaseQueue) throws -> [String] {
        let done = try queue.read { database in
            Set(try String.fetchAll(database, sql: "SELECT identifier FROM grdb_migrations"))
        }
        return migrations.map(\.name).filter(done.contains)
    }
}
