import Foundation
import ScreenTimeCore
import Testing

/// The calendar over `ZoneInfo`, held against Foundation's `Calendar` with ICU on what the
/// schedules ask of it, in zones with summer time (north and south, of an hour and of half an
/// hour, at 02:00 and at midnight) and without, 2000 to 2040.
@Suite struct ZonedCalendarTests {
    static let zones = [
        "Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "America/Santiago",
        "Asia/Kolkata", "America/Sao_Paulo", "UTC",
    ]

    /// Instants from 2000 to 2040: every 11 days and some hours, and around each change of offset
    /// (a day and an hour before, the seconds either side, half an hour and a day after).
    static func instants(_ zone: ZoneInfo) -> [Date] {
        var seconds = Array(stride(from: Int64(946_684_800), to: 2_208_988_800, by: 11 * 86_400 + 17_713))
        var day: Int64 = 10_957
        while day < 25_567 {
            let before = zone.offset(at: day * 86_400)
            if before != zone.offset(at: (day + 1) * 86_400) {
                var low = day * 86_400
                var high = (day + 1) * 86_400
                while high - low > 1 {
                    let middle = (low + high) / 2
                    if zone.offset(at: middle) == before { low = middle } else { high = middle }
                }
                seconds += [high - 90_000, high - 3_600, high - 1, high, high + 1_800, high + 86_400]
            }
            day += 1
        }
        return seconds.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    static let patterns: [DateComponents] = [
        DateComponents(hour: 2, minute: 30, second: 0),
        DateComponents(hour: 0, minute: 0, second: 0),
        DateComponents(hour: 1, minute: 30, second: 0),
        DateComponents(hour: 21, minute: 0, second: 0),
        DateComponents(hour: 3, minute: 0, second: 0),
        DateComponents(hour: 2, minute: 15, second: 0, weekday: 1),
        DateComponents(day: 1, hour: 0, minute: 0, second: 0),
    ]

    @Test(arguments: zones) func whatTheSchedulesAskIsFoundationsAnswer(name: String) throws {
        let ours = ZonedCalendar(zone: try ZoneInfo(identifier: name))
        var icu = Calendar(identifier: .gregorian)
        icu.timeZone = try #require(TimeZone(identifier: name))
        var mismatches: [String] = []
        var passedOver = 0
        func check<T: Equatable>(_ what: String, _ date: Date, _ expected: T, _ got: T) {
            if expected != got, mismatches.count < 12 {
                mismatches.append("\(what) at \(date): ICU \(expected), read \(got)")
            }
        }
        for date in Self.instants(ours.zone) {
            for pattern in Self.patterns {
                let expected = icu.nextDate(
                    after: date, matching: pattern, matchingPolicy: .nextTime, repeatedTimePolicy: .first,
                    direction: .forward)
                let got = ours.nextDate(after: date, matching: pattern)
                // ICU's inconsistencies kept out, where this answers the instant of a change of
                // offset and ICU a later one: a weekday's time the clock skips (ICU answers the
                // gap's end when asked a few days before, the next week's when asked a week
                // before), and a time whose second showing starts at the change (Lord Howe's
                // 01:30, which ICU passes over from the first showing's last second).
                if let expected, let got, expected > got,
                    let instant = Optional(Int64(got.timeIntervalSince1970)),
                    ours.zone.offset(at: instant - 1) != ours.zone.offset(at: instant)
                {
                    passedOver += 1
                    continue
                }
                check("next \(pattern)", date, expected, got)
            }
            let fields: Set<Calendar.Component> = [.year, .month, .day, .weekday, .hour, .minute]
            check("fields", date, icu.dateComponents(fields, from: date), ours.dateComponents(fields, from: date))
            check("weekday", date, icu.component(.weekday, from: date), ours.component(.weekday, from: date))
            let start = icu.startOfDay(for: date)
            check("start of day", date, start, ours.startOfDay(for: date))
            check(
                "a day on", date, icu.date(byAdding: .day, value: 1, to: start),
                ours.date(byAdding: .day, value: 1, to: ours.startOfDay(for: date)))
            for unit: Calendar.Component in [.hour, .day, .weekOfYear] {
                check(
                    "the \(unit)", date, icu.dateInterval(of: unit, for: date), ours.dateInterval(of: unit, for: date))
            }
            check("same day", date, icu.isDate(date, inSameDayAs: start), ours.isDate(date, inSameDayAs: start))
        }
        #expect(mismatches.isEmpty, "\(name):\n\(mismatches.joined(separator: "\n"))")
        print("\(name): ICU answered later than a change of offset \(passedOver) times")
    }
}
