import Foundation
import ScreenTimeCore

/// A minter with a fixed secret, so tests mint the same tokens every run.
let testMinter: TokenMinter = {
    do {
        return try TokenMinter(secret: Array(repeating: UInt8(7), count: 32))
    } catch {
        preconditionFailure("a 32-byte secret is valid: \(error)")
    }
}()

func app(_ id: String) -> ApplicationToken {
    testMinter.token(for: .desktopEntry(id))
}

func category(_ name: String) -> ActivityCategoryToken {
    testMinter.token(for: try! CategoryName(name))
}

func domainName(_ text: String) -> DomainName {
    try! DomainName(text)
}

func domain(_ text: String) -> WebDomainToken {
    testMinter.token(for: domainName(text))
}

func store(_ name: String, client: String = "screentime") -> StoreKey {
    StoreKey(client: try! ClientID(client), name: try! StoreName(name))
}

/// A Gregorian calendar in a real time zone, read from the system's zone files.
func calendar(_ zone: String) -> ZonedCalendar {
    ZonedCalendar(zone: try! ZoneInfo(identifier: zone))
}

/// A moment written in ISO 8601 with its offset: `2026-03-29T01:30:00+01:00`.
func at(_ text: String) -> Date {
    guard let date = try? Date(text, strategy: .iso8601) else { preconditionFailure("not ISO 8601: \(text)") }
    return date
}

func hm(_ hour: Int, _ minute: Int = 0, weekday: Int? = nil) -> DateComponents {
    DateComponents(hour: hour, minute: minute, weekday: weekday)
}
