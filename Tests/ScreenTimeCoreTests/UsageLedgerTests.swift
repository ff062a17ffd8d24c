import Foundation
import ScreenTimeCore
import Testing

/// Helpers: a span of an app between two local times on one day.
private func span(
    _ token: ApplicationToken, _ categories: Set<ActivityCategoryToken> = [], _ start: String, _ end: String
) -> UsageSpan {
    try! UsageSpan(.application(token), categories: categories, start: at(start), end: at(end))
}

private func interval(_ start: String, _ end: String) -> DateInterval {
    DateInterval(start: at(start), end: at(end))
}

@Suite struct UsageLedgerTests {
    let chess = app("chess")
    let mines = app("mines")
    let editor = app("editor")
    let games = category("game")

    var ledger: UsageLedger {
        UsageLedger([
            span(chess, [games], "2026-06-10T09:00:00Z", "2026-06-10T09:30:00Z"),
            span(editor, [], "2026-06-10T09:30:00Z", "2026-06-10T10:00:00Z"),
            span(mines, [games], "2026-06-10T10:00:00Z", "2026-06-10T10:20:00Z"),
            // A second seat: chess again while the first seat plays mines.
            span(chess, [games], "2026-06-10T10:10:00Z", "2026-06-10T10:40:00Z"),
            try! UsageSpan(
                .webDomain(domain("youtube.com")), categories: [category("video")], start: at("2026-06-10T11:00:00Z"),
                end: at("2026-06-10T11:15:00Z")),
        ])
    }

    @Test func totalsPerApplicationCategoryAndDomain() {
        let day = interval("2026-06-10T00:00:00Z", "2026-06-11T00:00:00Z")
        #expect(ledger.totalsByApplication(during: day) == [chess: 3_600, editor: 1_800, mines: 1_200])
        // Games: 09:00-09:30 and 10:00-10:40, overlapping play counted once.
        #expect(ledger.totalsByCategory(during: day) == [games: 4_200, category("video"): 900])
        #expect(ledger.totalsByWebDomain(during: day) == [domain("youtube.com"): 900])
        // All usage: 09:00-10:40 and 11:00-11:15.
        #expect(ledger.total(during: day) == 6_900)
    }

    @Test func spansAreClippedToTheInterval() {
        let window = interval("2026-06-10T09:15:00Z", "2026-06-10T10:15:00Z")
        #expect(ledger.totalsByApplication(during: window) == [chess: 1_200, editor: 1_800, mines: 900])
        #expect(ledger.total(UsageFilter(applications: [chess]), during: window) == 1_200)
        #expect(ledger.total(during: interval("2026-06-11T00:00:00Z", "2026-06-12T00:00:00Z")) == 0)
    }

    @Test func filtersMatchAppsCategoriesAndDomains() {
        let day = interval("2026-06-10T00:00:00Z", "2026-06-11T00:00:00Z")
        #expect(ledger.total(UsageFilter(categories: [games]), during: day) == 4_200)
        #expect(ledger.total(UsageFilter(applications: [editor], categories: [games]), during: day) == 6_000)
        #expect(ledger.total(UsageFilter(webDomains: [domain("youtube.com")]), during: day) == 900)
        #expect(ledger.total(UsageFilter(), during: day) == 0)
    }

    @Test func aLongSpanStartingBeforeTheIntervalStillCounts() {
        var ledger = UsageLedger()
        ledger.record(span(chess, [], "2026-06-09T20:00:00Z", "2026-06-10T02:00:00Z"))
        for minute in stride(from: 0, to: 50, by: 5) {
            ledger.record(
                span(
                    editor, [], "2026-06-10T05:\(String(format: "%02d", minute)):00Z",
                    "2026-06-10T05:\(String(format: "%02d", minute + 1)):00Z"))
        }
        #expect(
            ledger.totalsByApplication(during: interval("2026-06-10T00:00:00Z", "2026-06-11T00:00:00Z")) == [
                chess: 7_200, editor: 600,
            ])
    }

    @Test func hourlySegments() {
        let segments = ledger.segments(
            .hourly(during: interval("2026-06-10T09:00:00Z", "2026-06-10T12:00:00Z")), calendar: calendar("UTC"))
        #expect(segments.map(\.totalActivityDuration) == [3_600, 2_400, 900])
        #expect(segments[1].applications == [chess: 1_800, mines: 1_200])
        #expect(segments.map(\.interval.duration) == [3_600, 3_600, 3_600])
    }

    @Test func dailySegmentsFollowTheLocalDayAcrossDST() {
        // Berlin's 2026-03-29 is 23 hours long.
        let berlin = calendar("Europe/Berlin")
        var ledger = UsageLedger()
        ledger.record(span(chess, [], "2026-03-28T23:30:00+01:00", "2026-03-29T00:30:00+01:00"))
        ledger.record(span(chess, [], "2026-03-29T23:00:00+02:00", "2026-03-30T01:00:00+02:00"))
        let segments = ledger.segments(
            .daily(during: interval("2026-03-28T00:00:00+01:00", "2026-03-31T00:00:00+02:00")), calendar: berlin)
        #expect(segments.map(\.interval.duration) == [86_400, 82_800, 86_400])
        #expect(segments.map(\.totalActivityDuration) == [1_800, 1_800 + 3_600, 3_600])
    }

    @Test func theSameAppInTwoSessionsAtOnceCountsOnce() {
        // Two displays of the same child, chess on both for half an hour at the same time; a
        // second app beside it in the overlap counts for itself, and the total is the union.
        var ledger = UsageLedger()
        ledger.record(span(chess, [games], "2026-06-10T09:00:00Z", "2026-06-10T10:00:00Z"))
        ledger.record(span(chess, [games], "2026-06-10T09:30:00Z", "2026-06-10T10:30:00Z"))
        ledger.record(span(editor, [], "2026-06-10T09:45:00Z", "2026-06-10T09:50:00Z"))
        let day = interval("2026-06-10T00:00:00Z", "2026-06-11T00:00:00Z")
        #expect(ledger.totalsByApplication(during: day) == [chess: 5_400, editor: 300])
        #expect(ledger.totalsByCategory(during: day) == [games: 5_400])
        #expect(ledger.total(during: day) == 5_400)
        let hours = ledger.segments(
            .hourly(during: interval("2026-06-10T09:00:00Z", "2026-06-10T11:00:00Z")), calendar: calendar("UTC"))
        #expect(hours.map(\.totalActivityDuration) == [3_600, 1_800])
    }

    @Test func aSpanAcrossMidnightIsSplitBetweenTheDays() {
        // 23:40 to 00:25 local time in New York, counted in that zone's days.
        var ledger = UsageLedger()
        ledger.record(span(chess, [], "2026-11-23T23:40:00-05:00", "2026-11-24T00:25:00-05:00"))
        let segments = ledger.segments(
            .daily(during: interval("2026-11-23T00:00:00-05:00", "2026-11-25T00:00:00-05:00")),
            calendar: calendar("America/New_York"))
        #expect(segments.map(\.totalActivityDuration) == [1_200, 1_500])
        #expect(segments.map { $0.applications[chess] } == [1_200, 1_500])
    }

    @Test func weeklySegmentsAreClippedToTheStretch() {
        var monday = calendar("UTC")
        monday.firstWeekday = 2
        let segments = UsageLedger().segments(
            .weekly(during: interval("2026-06-10T00:00:00Z", "2026-06-24T00:00:00Z")), calendar: monday)
        #expect(
            segments.map(\.interval.start) == [
                at("2026-06-10T00:00:00Z"), at("2026-06-15T00:00:00Z"), at("2026-06-22T00:00:00Z"),
            ])
        #expect(segments.last?.interval.end == at("2026-06-24T00:00:00Z"))
    }

    @Test func pruningDropsOnlyFinishedSpans() {
        var ledger = self.ledger
        ledger.removeSpans(endingBefore: at("2026-06-10T10:30:00Z"))
        #expect(ledger.spans.count == 2)
        #expect(
            ledger.totalsByApplication(during: interval("2026-06-10T00:00:00Z", "2026-06-11T00:00:00Z")) == [
                chess: 1_800
            ])
    }

    @Test func spansMustNotEndBeforeTheyStart() {
        #expect(throws: ScreenTimeCoreError.self) {
            try UsageSpan(.application(chess), start: at("2026-06-10T10:00:00Z"), end: at("2026-06-10T09:00:00Z"))
        }
    }

    @Test func ledgerRoundTripsThroughJSON() throws {
        let data = try JSONEncoder().encode(ledger)
        #expect(try JSONDecoder().decode(UsageLedger.self, from: data) == ledger)
    }
}

@Suite struct ThresholdTrackerTests {
    let chess = app("chess")
    let games = category("game")
    let berlin = calendar("Europe/Berlin")

    func activity(
        warning: DateComponents? = DateComponents(minute: 5), includesPast: Bool = false,
        start: String = "2026-06-10T08:00:00+02:00"
    ) -> MonitoredActivity {
        let schedule = DeviceActivitySchedule(
            intervalStart: hm(0), intervalEnd: hm(0), repeats: true, warningTime: warning)
        let limit = DeviceActivityEvent(
            categories: [games], threshold: DateComponents(minute: 30), includesPastActivity: includesPast)
        return MonitoredActivity(
            name: try! DeviceActivityName.validated("daily"), schedule: schedule,
            events: [try! .validated("games-30m"): limit],
            monitoringStart: at(start))
    }

    func playing(from start: String, minutes: Double) -> UsageSpan {
        try! UsageSpan(
            .application(chess), categories: [games], start: at(start), end: at(start).addingTimeInterval(minutes * 60))
    }

    @Test func warningThenThresholdEachExactlyOnce() throws {
        let activity = activity()
        let name = try DeviceActivityEvent.Name.validated("games-30m")
        var tracker = ThresholdTracker()
        var ledger = UsageLedger()
        let day = try #require(activity.currentOrNextInterval(at: at("2026-06-10T09:00:00+02:00"), calendar: berlin))

        ledger.record(playing(from: "2026-06-10T09:00:00+02:00", minutes: 20))
        #expect(tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:20:00+02:00")).isEmpty)
        ledger.record(playing(from: "2026-06-10T09:20:00+02:00", minutes: 5))
        #expect(
            tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:25:00+02:00")) == [
                .eventWillReachThresholdWarning(name)
            ])
        #expect(tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:26:00+02:00")).isEmpty)
        ledger.record(playing(from: "2026-06-10T09:25:00+02:00", minutes: 5))
        #expect(
            tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:30:00+02:00")) == [
                .eventDidReachThreshold(name)
            ])
        ledger.record(playing(from: "2026-06-10T09:30:00+02:00", minutes: 60))
        #expect(tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T10:30:00+02:00")).isEmpty)

        // The next day is a new interval: both come again, once.
        let nextDay = try #require(
            activity.currentOrNextInterval(at: at("2026-06-11T09:00:00+02:00"), calendar: berlin))
        ledger.record(playing(from: "2026-06-11T09:00:00+02:00", minutes: 45))
        #expect(
            tracker.evaluate(activity, interval: nextDay, ledger: ledger, now: at("2026-06-11T09:45:00+02:00")) == [
                .eventWillReachThresholdWarning(name), .eventDidReachThreshold(name),
            ])
        #expect(
            tracker.evaluate(activity, interval: nextDay, ledger: ledger, now: at("2026-06-11T09:50:00+02:00")).isEmpty)
    }

    @Test func stateSurvivesARestart() throws {
        let activity = activity()
        var tracker = ThresholdTracker()
        var ledger = UsageLedger()
        let day = try #require(activity.currentOrNextInterval(at: at("2026-06-10T09:00:00+02:00"), calendar: berlin))
        ledger.record(playing(from: "2026-06-10T09:00:00+02:00", minutes: 31))
        #expect(
            tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:31:00+02:00")).count == 2)
        var restored = try JSONDecoder().decode(ThresholdTracker.self, from: JSONEncoder().encode(tracker))
        #expect(
            restored.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:40:00+02:00")).isEmpty)
    }

    @Test func pastActivityCountsOnlyWhenAskedFor() throws {
        // Monitoring starts at 10:00; 25 minutes were played at 09:00 the same day.
        var ledger = UsageLedger()
        ledger.record(playing(from: "2026-06-10T09:00:00+02:00", minutes: 25))
        ledger.record(playing(from: "2026-06-10T10:05:00+02:00", minutes: 10))
        let now = at("2026-06-10T10:15:00+02:00")
        let name = try DeviceActivityEvent.Name.validated("games-30m")

        let fresh = activity(warning: nil, includesPast: false, start: "2026-06-10T10:00:00+02:00")
        let day = try #require(fresh.currentOrNextInterval(at: now, calendar: berlin))
        var tracker = ThresholdTracker()
        #expect(tracker.evaluate(fresh, interval: day, ledger: ledger, now: now).isEmpty)

        let withPast = activity(warning: nil, includesPast: true, start: "2026-06-10T10:00:00+02:00")
        var pastTracker = ThresholdTracker()
        #expect(
            pastTracker.evaluate(withPast, interval: day, ledger: ledger, now: now) == [.eventDidReachThreshold(name)])
    }

    @Test func warningLongerThanTheThresholdComesAtOnce() throws {
        let activity = activity(warning: DateComponents(hour: 1))
        var tracker = ThresholdTracker()
        let now = at("2026-06-10T08:00:01+02:00")
        let day = try #require(activity.currentOrNextInterval(at: now, calendar: berlin))
        #expect(
            tracker.evaluate(activity, interval: day, ledger: UsageLedger(), now: now) == [
                .eventWillReachThresholdWarning(.init("games-30m"))
            ])
    }

    @Test func usageOutsideTheEventDoesNotCount() throws {
        let activity = activity()
        var tracker = ThresholdTracker()
        var ledger = UsageLedger()
        ledger.record(
            try UsageSpan(
                .application(app("editor")), categories: [category("development")],
                start: at("2026-06-10T09:00:00+02:00"), end: at("2026-06-10T11:00:00+02:00")))
        let day = try #require(activity.currentOrNextInterval(at: at("2026-06-10T11:00:00+02:00"), calendar: berlin))
        #expect(tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T11:00:00+02:00")).isEmpty)
    }

    @Test func nextCheckIsWhenUsageCouldFirstReachAPoint() throws {
        let activity = activity()
        var tracker = ThresholdTracker()
        var ledger = UsageLedger()
        let now = at("2026-06-10T09:10:00+02:00")
        let day = try #require(activity.currentOrNextInterval(at: now, calendar: berlin))
        ledger.record(playing(from: "2026-06-10T09:00:00+02:00", minutes: 10))
        // 10 of 30 minutes used, warning at 25: 15 more minutes.
        #expect(tracker.nextCheck(activity, interval: day, ledger: ledger, now: now) == at("2026-06-10T09:25:00+02:00"))
        ledger.record(playing(from: "2026-06-10T09:10:00+02:00", minutes: 16))
        let later = at("2026-06-10T09:26:00+02:00")
        _ = tracker.evaluate(activity, interval: day, ledger: ledger, now: later)
        // Warned; 26 used, threshold at 30: 4 more minutes.
        #expect(
            tracker.nextCheck(activity, interval: day, ledger: ledger, now: later) == at("2026-06-10T09:30:00+02:00"))
        ledger.record(playing(from: "2026-06-10T09:26:00+02:00", minutes: 4))
        _ = tracker.evaluate(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:30:00+02:00"))
        #expect(tracker.nextCheck(activity, interval: day, ledger: ledger, now: at("2026-06-10T09:30:00+02:00")) == nil)
    }
}
