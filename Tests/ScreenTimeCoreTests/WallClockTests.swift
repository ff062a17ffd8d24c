import Foundation
import ScreenTimeCore
import Testing

/// The wall clock without ICU, held against Foundation's `Calendar` and `DateFormatter` (ICU) in
/// zones with and without summer time, either side of the equator and of UTC.
@Suite struct WallClockTests {
    static let zones = [
        "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo", "UTC",
    ]

    /// Instants from 2000 to 2040: every 9 days and 7 hours and some, and either side of each
    /// change of offset.
    static func instants(_ zone: ZoneInfo) -> [Date] {
        var seconds = Array(stride(from: Int64(946_684_800), to: 2_208_988_800, by: 9 * 86_400 + 25_931))
        var day: Int64 = 10_957
        while day < 25_567 {
            if zone.offset(at: day * 86_400) != zone.offset(at: (day + 1) * 86_400) {
                seconds += [day * 86_400 + 43_200, (day + 1) * 86_400 - 1, (day + 1) * 86_400]
            }
            day += 1
        }
        return seconds.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    @Test(arguments: zones) func readingsAndFormatsAreFoundations(name: String) throws {
        let clock = WallClock(zone: try ZoneInfo(identifier: name))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: name))
        let patterns = [
            "EEE d MMM yyyy", "EEEE d MMMM yyyy", "HH:mm", "EEE d MMM HH:mm", "d MMM HH:mm", "yyyy-MM-dd HH:mm:ss",
        ]
        let formatters = patterns.map { pattern in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = calendar.timeZone
            formatter.dateFormat = pattern
            return (pattern, formatter)
        }
        var mismatches: [String] = []
        for date in Self.instants(clock.zone) {
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
            let reading = clock.reading(date)
            let expected = [parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second, parts.weekday]
            let got = [
                reading.year, reading.month, reading.day, reading.hour, reading.minute, reading.second, reading.weekday,
            ]
            if expected != got.map(Optional.some) { mismatches.append("\(date): \(expected) read \(got)") }
            for (pattern, formatter) in formatters {
                let foundation = formatter.string(from: date)
                let ours = clock.format(date, pattern)
                if foundation != ours { mismatches.append("\(date) \(pattern): \(foundation) written \(ours)") }
            }
            let start = calendar.startOfDay(for: date)
            if clock.startOfDay(date) != start {
                mismatches.append("\(date): day starts \(start), read \(clock.startOfDay(date))")
            }
            let next = try #require(calendar.date(byAdding: .day, value: 1, to: start))
            if clock.startOfDay(date, adding: 1) != calendar.startOfDay(for: next) {
                mismatches.append(
                    "\(date): next day starts \(calendar.startOfDay(for: next)), read \(clock.startOfDay(date, adding: 1))"
                )
            }
            if mismatches.count > 10 { break }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
    }

    @Test func aDayThatStartsInAGapStartsWhenTheClockResumes() throws {
        // Santiago moved its clocks at midnight: 2022-09-11 has no 00:00.
        let clock = WallClock(zone: try ZoneInfo(identifier: "America/Santiago"))
        let start = clock.start(year: 2022, month: 9, day: 11)
        #expect(clock.format(start, "yyyy-MM-dd HH:mm") == "2022-09-11 01:00")
        #expect(clock.format(start.addingTimeInterval(-1), "yyyy-MM-dd HH:mm:ss") == "2022-09-10 23:59:59")
    }

    @Test func daysWrittenAsPeopleWriteThem() throws {
        let clock = WallClock(zone: try ZoneInfo(identifier: "Europe/Paris"))
        #expect(clock.day(written: "2026-11-29").map { clock.format($0, "yyyy-MM-dd HH:mm") } == "2026-11-29 00:00")
        #expect(clock.day(written: "2024-02-29") != nil)
        for bad in ["2026-02-29", "2026-13-01", "2026-00-10", "2026-1-01", "26-11-29", "2026-11-29x", "２０２６-11-29", ""]
        {
            #expect(clock.day(written: bad) == nil, "\(bad)")
        }
        #expect(padded("ab", to: 4) == "ab  " && padded("abcdef", to: 4) == "abcdef")
    }

    @Test func aFileErrorIsItsCauseInTheSystemsWords() {
        do {
            try Data([1]).write(to: URL(fileURLWithPath: "/nonexistent/dir/x"))
            Issue.record("written")
        } catch {
            #expect(readableError(error) == "No such file or directory")
        }
    }
}
