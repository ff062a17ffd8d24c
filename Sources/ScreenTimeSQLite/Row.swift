/// The values bound to a statement's `?` parameters, in order.
public struct StatementArguments: ExpressibleByArrayLiteral, Sendable {
    var values: [DatabaseValue]

    /// nil is NULL.
    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        values = elements.map { $0?.databaseValue ?? .null }
    }

    public init(_ elements: [some DatabaseValueConvertible]) {
        values = elements.map(\.databaseValue)
    }

    public init(_ elements: [(any DatabaseValueConvertible)?]) {
        values = elements.map { $0?.databaseValue ?? .null }
    }
}

/// A row a query returned: its values by column name (in any case, as SQL names them).
public struct Row: Sendable {
    /// A query's column names, shared by its rows.
    final class Columns: Sendable {
        let names: [String]
        let indexes: [String: Int]

        init(_ names: [String]) {
            self.names = names
            var indexes: [String: Int] = [:]
            // The first of two columns of one name, as SQLite's own lookup would.
            for (index, name) in names.enumerated().reversed() { indexes[name.lowercased()] = index }
            self.indexes = indexes
        }
    }

    let columns: Columns
    let values: [DatabaseValue]

    /// The stored value of a column; nil for a column the query did not return.
    public func databaseValue(_ column: String) -> DatabaseValue? {
        columns.indexes[column].map { values[$0] } ?? columns.indexes[column.lowercased()].map { values[$0] }
    }

    /// A column's value; nil when it is NULL or does not convert.
    public subscript<Value: DatabaseValueConvertible>(_ column: String) -> Value? {
        databaseValue(column).flatMap(Value.fromDatabaseValue)
    }

    /// A column's value, which must be there and convert: the schema says so (NOT NULL, and its
    /// type), and a row that breaks it is a corrupt database, which stops the agent.
    public subscript<Value: DatabaseValueConvertible>(_ column: String) -> Value {
        guard let stored = databaseValue(column) else {
            fatalError("the state database has no column \(column) here (columns: \(columns.names))")
        }
        guard let value = Value.fromDatabaseValue(stored) else {
            fatalError("the state database's column \(column) holds \(stored), not a \(Value.self)")
        }
        return value
    }

    public static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try db.rows(sql: sql, arguments: arguments)
    }

    public static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try db.rows(sql: sql, arguments: arguments, limit: 1).first
    }
}

extension DatabaseValueConvertible {
    /// The first column of each row; rows where it is NULL or does not convert are left out.
    public static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try db.rows(sql: sql, arguments: arguments).compactMap { $0.values.first.flatMap(fromDatabaseValue) }
    }

    /// The first column of the first row; nil if there is none, or it is NULL or does not convert.
    public static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try db.rows(sql: sql, arguments: arguments, limit: 1).first?.values.first.flatMap(fromDatabaseValue)
    }
}

extension StatementArguments {
    /// These arguments, then those.
    public static func + (first: StatementArguments, second: StatementArguments) -> StatementArguments {
        var joined = first
        joined.values += second.values
        return joined
    }
}
