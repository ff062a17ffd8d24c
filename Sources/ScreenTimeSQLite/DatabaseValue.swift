public import FoundationEssentials
import ScreenTimeCore

/// A value as SQLite stores it: one of its five storage classes.
public enum DatabaseValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift value that is written to and read from a column. Reading gives nil where the stored
/// value does not convert (NULL, or another storage class than the type reads).
public protocol DatabaseValueConvertible {
    var databaseValue: DatabaseValue { get }
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension Int64: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self) }
    /// An integer, or a real with no fraction that fits.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let number): number
        case .real(let number): Int64(exactly: number)
        default: nil
        }
    }
}

/// The other integers, stored as 64-bit ones; read where the stored value fits.
extension DatabaseValueConvertible where Self: BinaryInteger {
    public var databaseValue: DatabaseValue { .integer(Int64(self)) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        Int64.fromDatabaseValue(value).flatMap { Self(exactly: $0) }
    }
}

extension Int: DatabaseValueConvertible {}
extension Int32: DatabaseValueConvertible {}
extension UInt32: DatabaseValueConvertible {}
extension UInt16: DatabaseValueConvertible {}

extension Double: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .real(self) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .integer(let number): Double(number)
        case .real(let number): number
        default: nil
        }
    }
}

/// Stored as the integers 0 and 1 (any other number reads as true).
extension Bool: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        switch value {
        case .integer(let number): number != 0
        case .real(let number): number != 0
        default: nil
        }
    }
}

extension String: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .text(self) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case .text(let text) = value { return text }
        return nil
    }
}

/// Stored as a blob (an empty one too: SQLite would store a blob bound with no bytes as NULL).
extension Data: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .blob(Array(self)) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let bytes): Data(bytes)
        case .text(let text): Data(text.utf8)
        default: nil
        }
    }
}

/// Stored as UTC text with milliseconds, "2026-11-29 14:05:09.123", the format GRDB wrote (the
/// state of earlier versions is read as it is, and its text compares in order with the new).
/// Read from that text with or without seconds or milliseconds, a "T" for the space, or from a
/// number of seconds since 1970.
extension Date: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .text(DatabaseDate.text(self)) }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Date? {
        switch value {
        case .text(let text): DatabaseDate.date(text)
        case .integer(let seconds): Date(timeIntervalSince1970: Double(seconds))
        case .real(let seconds): Date(timeIntervalSince1970: seconds)
        default: nil
        }
    }
}

/// A date's storage text, both ways.
enum DatabaseDate {
    /// The text of a date: its nearest millisecond, worked out as GRDB's formatter did (Core
    /// Foundation adds half a millisecond, ICU rounds down).
    static func text(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000 + 0.5).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 1e17 else { return "0000-01-01 00:00:00.000" }
        let total = Int64(milliseconds)
        let days = CivilDate.floorDivide(total, 86_400_000)
        let inDay = total - days * 86_400_000
        let (year, month, day) = CivilDate.date(days: days)
        var text = digits(year, 4) + "-" + digits(month, 2) + "-" + digits(day, 2) + " "
        text += digits(inDay / 3_600_000, 2) + ":" + digits(inDay / 60_000 % 60, 2) + ":"
        text += digits(inDay / 1000 % 60, 2) + "." + digits(inDay % 1000, 3)
        return text
    }

    /// The date a storage text gives (UTC), or nil for any other text.
    static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard bytes.count >= 10, bytes[4] == 45, bytes[7] == 45, let year = number(0, 4),
            let month = number(5, 2), let day = number(8, 2), (1...12).contains(month),
            (1...CivilDate.daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var milliseconds: Int64 = 0
        if bytes.count > 10 {
            guard bytes.count >= 16, bytes[10] == 32 || bytes[10] == 84, bytes[13] == 58, let hour = number(11, 2),
                let minute = number(14, 2), hour < 24, minute < 60
            else { return nil }
            milliseconds = (hour * 60 + minute) * 60_000
            if bytes.count > 16 {
                guard bytes.count >= 19, bytes[16] == 58, let second = number(17, 2), second < 60 else { return nil }
                milliseconds += second * 1000
                if bytes.count > 19 {
                    // A fraction of one to nine digits, read to the millisecond.
                    guard bytes[19] == 46, bytes.count <= 29, bytes.count > 20, number(20, bytes.count - 20) != nil
                    else { return nil }
                    let first = Array(bytes[20..<min(bytes.count, 23)]) + Array(repeating: 48, count: 3)
                    milliseconds += first.prefix(3).reduce(0) { $0 * 10 + Int64($1 - 48) }
                }
            }
        }
        let total = CivilDate.days(year: year, month: month, day: day) * 86_400_000 + milliseconds
        return Date(timeIntervalSince1970: Double(total) / 1000)
    }

    private static func digits(_ value: Int64, _ count: Int) -> String {
        let text = String(value)
        return text.count >= count ? text : String(repeating: "0", count: count - text.count) + text
    }
}
