import Foundation
import Glibc
import Hummingbird
import Testing

@testable import ScreenTimeWeb

/// The dashboard's wall clock: ScreenTimeCore's `WallClock`, as the agent's, since it links no ICU.
/// Days across a change of summer time and the zone's name are checked against what Foundation
/// (with ICU) says in this process, and in a child process with `TZ` set, so that no other test
/// sees the zone change.
@Suite struct LocalTimeTests {
    @Test func theZoneIsTheOneFoundationReads() {
        #expect(LocalTime.zoneIdentifier() == TimeZone.current.identifier)
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": ":Europe/Paris"]) == "Europe/Paris")
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": "/usr/share/zoneinfo/Asia/Tokyo"]) == "Asia/Tokyo")
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": "UTC"]) == "UTC")
        // A rule or a file the agent could not find by name: the machine's zone, which it can.
        let machine = LocalTime.zoneIdentifier(environment: [:])
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": "CET-1CEST,M3.5.0,M10.5.0/3"]) == machine)
        #expect(LocalTime.zoneIdentifier(environment: ["TZ": "/etc/localtime"]) == machine)
    }

    @Test func daysAndHoursFollowTheMachinesZone() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        for offset in stride(from: 0, to: 400 * 86_400, by: 86_400 / 3 + 17) {
            let date = Date(timeIntervalSince1970: 1_700_000_000 + TimeInterval(offset))
            let start = calendar.startOfDay(for: date)
            #expect(LocalTime.startOfDay(date) == start)
            #expect(LocalTime.startOfDay(date, addingDays: 1) == calendar.date(byAdding: .day, value: 1, to: start))
            #expect(LocalTime.format(date, "HH") == String(calendar.component(.hour, from: date)).leftPadded)
        }
    }

    /// Paris changed to summer time on 31 March 2024: that day had 23 hours.
    @Test func aDayAcrossSummerTimeInParis() async {
        await #expect(processExitsWith: .success) {
            setenv("TZ", "Europe/Paris", 1)
            let noon = Date(timeIntervalSince1970: 1_711_886_400)  // 2024-03-31 12:00 UTC
            let midnight = Date(timeIntervalSince1970: 1_711_839_600)  // 2024-03-30 23:00 UTC
            guard LocalTime.startOfDay(noon) == midnight,
                LocalTime.startOfDay(noon, addingDays: 1) == midnight.addingTimeInterval(23 * 3600),
                LocalTime.startOfDay(noon, addingDays: -6) == midnight.addingTimeInterval(-6 * 86_400),
                LocalTime.format(noon, "EEE d MMM HH:mm") == "Sun 31 Mar 14:00",
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

    /// A body is split on its bytes, as browsers write it; what browsers never send is refused
    /// (third attack on the dashboard, findings 5 to 7).
    @Test func formBodiesAreSplitOnBytesAndControlCharactersRefused() throws {
        #expect(
            try Dashboard.fields(Array("user=pat&password=a+b%26c&x=%C3%A9".utf8)) == [
                "user": "pat", "password": "a b&c", "x": "é",
            ])
        // "&" then a combining mark (sent raw): refused, not one field taking the next.
        for body in [
            "user=pat%00x", "user=pat%0A", "csrf=ok&x=\u{FF}", "a=1&\u{301}b=2", "user=pat\tx", "user=pat%7F",
        ] {
            #expect(throws: HTTPError.self, "\(body)") { try Dashboard.fields(Array(body.utf8)) }
        }
        #expect(throws: HTTPError.self) { try Dashboard.fields([0x61, 0x3D, 0xFF]) }
    }

    /// A user name in a link reaches the router as the name (it does not decode paths).
    @Test func namesInLinksAreKeptAsTheyAre() {
        #expect(Pages.path("kid") == "kid")
        #expect(Pages.path("host$") == "host$")
        #expect(Pages.path("a.b_c-d") == "a.b_c-d")
        #expect(Pages.path("a/b c") == "a%2Fb%20c")
        #expect(Pages.path("é") == "%C3%A9")
    }

    @Test(arguments: ["%", "%4", "%zz", "a%g1", "%FF", "%C3"])
    func badEscapesAreRefused(_ text: String) {
        #expect(Dashboard.decoded(Substring(text)) == nil)
    }
}

extension String {
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
