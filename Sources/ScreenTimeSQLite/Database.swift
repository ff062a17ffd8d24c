import CSQLite

/// An SQLite error: its result code, SQLite's words, and the statement that met it.
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// SQLite's extended result code (`SQLITE_CONSTRAINT_UNIQUE`, …).
    public let code: Int32
    public let message: String
    public let sql: String?

    public var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " (in \($0))" } ?? "")
    }
}

/// One connection to an SQLite database, used by one thread at a time: `DatabaseQueue` hands it
/// to one closure at a time. Statements are prepared for each call (the agent's writes are a few
/// a second); a statement is never kept past the call that made it.
public final class Database {
    let handle: OpaquePointer

    init(path: String) throws {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        guard status == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(opened)
            throw DatabaseError(code: status, message: message + " (opening \(path))", sql: nil)
        }
        handle = opened
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// The row id of the last row inserted on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The rows the last INSERT, UPDATE or DELETE changed.
    public var changesCount: Int { Int(sqlite3_changes(handle)) }

    /// Whether a transaction is open.
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs every statement of `sql` in turn, each taking its parameters from `arguments` in
    /// order; rows they return are passed over. It is an error for arguments to be left over.
    public func execute(sql: String, arguments: StatementArguments = []) throws {
        var remaining = arguments.values[...]
        try forEachStatement(sql) { statement in
            try statement.bind(&remaining)
            while try statement.step() {}
        }
        guard remaining.isEmpty else {
            throw DatabaseError(
                code: SQLITE_RANGE, message: "\(remaining.count) arguments too many for the statements", sql: sql)
        }
    }

    /// The rows of one statement (`sql` holds one), with `arguments` bound: the first `limit`.
    func rows(sql: String, arguments: StatementArguments, limit: Int = .max) throws -> [Row] {
        var found: [Row] = []
        var statements = 0
        var remaining = arguments.values[...]
        try forEachStatement(sql) { statement in
            statements += 1
            guard statements == 1 else {
                throw DatabaseError(code: SQLITE_MISUSE, message: "a query is one statement", sql: sql)
            }
            try statement.bind(&remaining)
            let columns = statement.columnNames
            let index = Row.Columns(columns)
            while found.count < limit, try statement.step() {
                found.append(Row(columns: index, values: statement.values(count: columns.count)))
            }
        }
        guard remaining.isEmpty else {
            throw DatabaseError(
                code: SQLITE_RANGE, message: "\(remaining.count) arguments too many for the statement", sql: sql)
        }
        return found
    }

    /// Prepares each statement of `sql` in turn and hands it to `body`, then finalizes it.
    private func forEachStatement(_ sql: String, _ body: (Statement) throws -> Void) throws {
        var utf8 = Array(sql.utf8CString)
        try utf8.withUnsafeMutableBufferPointer { buffer in
            guard var start = UnsafePointer(buffer.baseAddress) else { return }
            let end = start + buffer.count - 1
            while start < end {
                var tail: UnsafePointer<CChar>?
                var prepared: OpaquePointer?
                let status = sqlite3_prepare_v2(handle, start, Int32(end - start), &prepared, &tail)
                guard status == SQLITE_OK else { throw error(status, sql: sql) }
                guard let prepared else { break }  // only spaces or comments were left
                let statement = Statement(handle: prepared, database: self, sql: sql)
                defer { sqlite3_finalize(prepared) }
                try body(statement)
                guard let tail, tail > start else { break }
                start = tail
            }
        }
    }

    func error(_ status: Int32, sql: String?) -> DatabaseError {
        DatabaseError(
            code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql
        )
        .orCode(status)
    }
}

extension DatabaseError {
    /// With the status of the call that failed where the connection kept none.
    fileprivate func orCode(_ status: Int32) -> DatabaseError {
        code == SQLITE_OK ? DatabaseError(code: status, message: message, sql: sql) : self
    }
}

/// A prepared statement, valid for the call that prepared it.
struct Statement {
    let handle: OpaquePointer
    let database: Database
    let sql: String

    /// Binds the statement's parameters from the front of `arguments`, taking what it binds.
    func bind(_ arguments: inout ArraySlice<DatabaseValue>) throws {
        let count = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count >= count else {
            throw DatabaseError(
                code: SQLITE_RANGE, message: "\(count) arguments wanted, \(arguments.count) given", sql: sql)
        }
        for index in 0..<count {
            let position = Int32(index + 1)
            let status: Int32
            switch arguments.removeFirst() {
            case .null:
                status = sqlite3_bind_null(handle, position)
            case .integer(let value):
                status = sqlite3_bind_int64(handle, position, value)
            case .real(let value):
                status = sqlite3_bind_double(handle, position, value)
            case .text(let value):
                // By its length: a NUL within the text is kept.
                let bytes = Array(value.utf8)
                status = bytes.withUnsafeBytes { raw in
                    guard let start = raw.baseAddress?.assumingMemoryBound(to: CChar.self) else {
                        return sqlite3_bind_text(handle, position, "", 0, screentime_sqlite_transient())
                    }
                    return sqlite3_bind_text(handle, position, start, Int32(raw.count), screentime_sqlite_transient())
                }
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { raw in
                    // A blob of no bytes is bound as one of length 0, not as NULL.
                    raw.baseAddress == nil
                        ? sqlite3_bind_zeroblob(handle, position, 0)
                        : sqlite3_bind_blob(
                            handle, position, raw.baseAddress, Int32(raw.count), screentime_sqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw database.error(status, sql: sql) }
        }
    }

    /// Steps once: true while there is a row to read.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status: throw database.error(status, sql: sql)
        }
    }

    var columnNames: [String] {
        (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
    }

    /// The current row's values.
    func values(count: Int) -> [DatabaseValue] {
        (0..<Int32(count)).map { column in
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER:
                return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT:
                return .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT:
                let length = Int(sqlite3_column_bytes(handle, column))
                guard let text = sqlite3_column_text(handle, column) else { return .text("") }
                return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
            case SQLITE_BLOB:
                let length = Int(sqlite3_column_bytes(handle, column))
                guard let bytes = sqlite3_column_blob(handle, column), length > 0 else { return .blob([]) }
                return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: length)))
            default:
                return .null
            }
        }
    }
}
