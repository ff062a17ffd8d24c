import Foundation
import Glibc
import Testing

@testable import ScreenTimeWeb

/// The dashboard's wall clock: glibc's, since it links no ICU. Days across a change of summer time
/// and the zone's name are checked against what Foundation (with ICU) says in this process, and in
/// a child process with `TZ` set, so that no other test sees the zone change.
@Suite struct LocalTimeTests {
    @Test func theZoneIsTheOneFoundationReads() {
        #expect(LocalTime.zoneIdentifier() == TimeZone.current.identifier)
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": ":Europe/Paris"]) == "Europe/Paris")
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": "/usr/share/zoneinfo/Asia/Tokyo"]) == "Asia/Tokyo")
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": "UTC"]) == "UTC")
    }

    @Test func daysAndHoursFollowTheMachinesZone() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        for offset in stride(from: 0, to: 400 * 86_400, by: 86_400 / 3 + 17) {
            let date = Date(timeIntervalSince1970: 1_700_000_000 + TimeInterval(offset))
            let start = calendar.startOfDay(for: date)
            #expect(LocalTime.startOfDay(date) == start)
            #expect(LocalTime.startOfDay(date, addingDays: 1) == calendar.date(byAdding: .day, value: 1, to: start))
            #expect(LocalTime.format(date, "%H") == String(calendar.component(.hour, from: date)).leftPadded)
        }
    }

    /// Paris changed to summer time on 31 March 2024: that day had 23 hours.
    @Test func aDayAcrossSummerTimeInParis() async {
        await #expect(processExitsWith: .success) {
            setenv("TZ", "Europe/Paris", 1)
            tzset()
            let noon = Date(timeIntervalSince1970: 1_711_886_400)  // 2024-03-31 12:00 UTC
            let midnight = Date(timeIntervalSince1970: 1_711_839_600)  // 2024-03-30 23:00 UTC
            guard LocalTime.startOfDay(noon) == midnight,
                LocalTime.startOfDay(noon, addingDays: 1) == midnight.addingTimeInterval(23 * 3600),
                LocalTime.startOfDay(noon, addingDays: -6) == midnight.addingTimeInterval(-6 * 86_400),
                LocalTime.format(noon, "%a %-d %b %H:%M") == "Sun 31 Mar 14:00",
                LocalTime.zoneIdentifier() == "Europe/Paris"
            else { exit(1) }
        }
    }

    @Test(arguments: [
        ("a+b%20c", "a b c"), ("%C3%A9t%C3%A9", "été"), ("plain", "plain"), ("", ""), ("100%25", "100%"),
    ])
    func formFieldsAreDecoded(_ text: String, _ expected: String) {
        #expect(Dashboard.decoded(Substring(text)) == expected)
    }

    @Test(arguments: ["%", "%4", "%zz", "a%g1", "%FF", "%C3"])
    func badEscapesAreRefused(_ text: String) {
        #expect(Dashboard.decoded(Substring(text)) == nil)
    }
}

extension String {
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
