import ScreenTimeReports
import Testing

@testable import screentime

/// The time over a bar of the report page's charts: seconds under a minute, minutes under an hour,
/// then hours and minutes (a label of "1m" over 44 s was read as a minute).
@Suite struct ChartLabelTests {
    @Test(arguments: [
        (0.4, "0s"), (44, "44s"), (59.4, "59s"), (59.6, "1m"), (719.6, "12m"), (3569, "59m"), (3599, "1h00"),
        (3900, "1h05"), (36_000, "10h00"),
    ])
    func aBarIsLabelledInTheUnitItsTimeCallsFor(seconds: Double, label: String) {
        #expect(compact(seconds) == label)
    }
}
