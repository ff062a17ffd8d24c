import Foundation
import ScreenTimeCore
import Testing

@Suite struct ActivityProgressTests {
    let berlin = calendar("Europe/Berlin")

    private func activity(
        _ start: DateComponents, _ end: DateComponents, repeats: Bool = true, warning: DateComponents? = nil,
        events: [String: DeviceActivityEvent] = [:], since: Date, weekdays: Set<Int>? = nil
    ) -> MonitoredActivity {
        MonitoredActivity(
            name: try! DeviceActivityName.validated("homework"),
            schedule: DeviceActivitySchedule(
                intervalStart: start, intervalEnd: end, repeats: repeats, warningTime: warning),
            events: Dictionary(
                uniqueKeysWithValues: events.map { (try! DeviceActivityEvent.Name.validated($0.key), $0.value) }),
            monitoringStart: since, weekdays: weekdays)
    }

    /// What a scheduler that sleeps until `nextWake` sees from `from` to `until`: every callback
    /// with the moment it was told, and every wake.
    private func run(
        _ activity: MonitoredActivity, from: Date, until: Date, progress: inout ActivityProgress,
        calendar: ZonedCalendar, ledger: UsageLedger? = nil
    ) -> (told: [(Date, ActivityCallback)], wakes: [Date]) {
        var now = from
        var told: [(Date, ActivityCallback)] = []
        var wakes: [Date] = []
        while now <= until, wakes.count < 1_000 {
            for callback in progress.advance(activity, now: now, calendar: calendar, ledger: ledger) {
                told.append((now, callback))
            }
            guard let next = progress.nextWake(activity, now: now, calendar: calendar, ledger: ledger) else { break }
            #expect(next > now)
            now = next
            wakes.append(next)
        }
        return (told, wakes)
    }

    private func names(_ told: [(Date, ActivityCallback)]) -> [String] {
        told.map { "\($0.1.callback.rawValue)\($0.1.event.map { " " + $0.rawValue } ?? "")" }
    }

    @Test func eachBoundaryIsToldOnceAndTheSchedulerWakesOnlyThere() {
        let since = at("2026-06-10T12:00:00+02:00")
        let evening = activity(hm(21), hm(7), warning: DateComponents(minute: 5), since: since)
        var progress = ActivityProgress()
        let (told, wakes) = run(
            evening, from: since, until: at("2026-06-12T12:00:00+02:00"), progress: &progress, calendar: berlin)
        #expect(
            told.map { $0.0 } == [
                at("2026-06-10T20:55:00+02:00"), at("2026-06-10T21:00:00+02:00"), at("2026-06-11T06:55:00+02:00"),
                at("2026-06-11T07:00:00+02:00"), at("2026-06-11T20:55:00+02:00"), at("2026-06-11T21:00:00+02:00"),
                at("2026-06-12T06:55:00+02:00"), at("2026-06-12T07:00:00+02:00"),
            ])
        #expect(
            names(told) == [
                "intervalWillStartWarning", "intervalDidStart", "intervalWillEndWarning", "intervalDidEnd",
                "intervalWillStartWarning", "intervalDidStart", "intervalWillEndWarning", "intervalDidEnd",
            ])
        // Every wake was a boundary or a warning: no polling in between.
        let moments = Set(told.map { $0.0 })
        #expect(wakes.dropLast().allSatisfy(moments.contains), "\(wakes)")
        #expect(
            told[1].1.interval
                == DateInterval(start: at("2026-06-10T21:00:00+02:00"), end: at("2026-06-11T07:00:00+02:00")))
    }

    @Test func monitoringStartedInsideAnIntervalStartsItAtOnce() {
        let since = at("2026-06-10T22:30:00+02:00")
        let evening = activity(hm(21), hm(7), since: since)
        var progress = ActivityProgress()
        let told = progress.advance(evening, now: since, calendar: berlin, ledger: nil)
        #expect(told.map(\.callback) == [.intervalDidStart])
        #expect(told.first?.interval.start == at("2026-06-10T21:00:00+02:00"))
        // Asked again at once, or a second later: nothing more.
        #expect(progress.advance(evening, now: since, calendar: berlin, ledger: nil).isEmpty)
        #expect(progress.advance(evening, now: since.addingTimeInterval(1), calendar: berlin, ledger: nil).isEmpty)
    }

    @Test func anIntervalThatEndedWhileDownGetsItsEndOnceAndTheOneInProgressItsStart() {
        let since = at("2026-06-10T20:00:00+02:00")
        let evening = activity(hm(21), hm(7), since: since)
        var progress = ActivityProgress()
        #expect(
            progress.advance(evening, now: at("2026-06-10T21:30:00+02:00"), calendar: berlin, ledger: nil).map(
                \.callback) == [.intervalDidStart])
        // Down from 21:30 until 23:00 the next day: the first interval ended at 07:00, the second
        // started at 21:00.
        let back = progress.advance(evening, now: at("2026-06-11T23:00:00+02:00"), calendar: berlin, ledger: nil)
        #expect(back.map(\.callback) == [.intervalDidEnd, .intervalDidStart])
        #expect(back[0].interval.start == at("2026-06-10T21:00:00+02:00"))
        #expect(back[1].interval.start == at("2026-06-11T21:00:00+02:00"))
        // Down for three days: the intervals missed whole get nothing; the last told gets its end.
        let later = progress.advance(evening, now: at("2026-06-15T12:00:00+02:00"), calendar: berlin, ledger: nil)
        #expect(later.map(\.callback) == [.intervalDidEnd])
        #expect(later[0].interval.start == at("2026-06-11T21:00:00+02:00"))
    }

    @Test func aClockSetBackTellsNothingAgainAndAClockSetForwardTellsOnce() {
        let since = at("2026-06-10T20:00:00+02:00")
        let evening = activity(hm(21), hm(7), warning: DateComponents(minute: 10), since: since)
        var progress = ActivityProgress()
        _ = progress.advance(evening, now: at("2026-06-10T21:05:00+02:00"), calendar: berlin, ledger: nil)
        // Set back to before the start, then time passes the start again.
        #expect(progress.advance(evening, now: at("2026-06-10T20:30:00+02:00"), calendar: berlin, ledger: nil).isEmpty)
        #expect(
            progress.nextWake(evening, now: at("2026-06-10T20:55:00+02:00"), calendar: berlin, ledger: nil)!
                > at("2026-06-10T20:55:00+02:00"))
        #expect(progress.advance(evening, now: at("2026-06-10T20:55:00+02:00"), calendar: berlin, ledger: nil).isEmpty)
        #expect(progress.advance(evening, now: at("2026-06-10T21:01:00+02:00"), calendar: berlin, ledger: nil).isEmpty)
        // Set forward past the end and the next start: end, then start, once each.
        let jumped = progress.advance(evening, now: at("2026-06-11T21:30:00+02:00"), calendar: berlin, ledger: nil)
        #expect(jumped.map(\.callback) == [.intervalDidEnd, .intervalDidStart])
        #expect(progress.advance(evening, now: at("2026-06-11T21:30:01+02:00"), calendar: berlin, ledger: nil).isEmpty)
    }

    @Test func aWholeDayScheduleEndsAndStartsAtMidnightAcrossDST() {
        // Daily 00:00 to 00:00 in Berlin across the spring change (29 March 2026: 23 hours).
        let since = at("2026-03-28T12:00:00+01:00")
        let day = activity(hm(0), hm(0), since: since)
        var progress = ActivityProgress()
        let (told, _) = run(
            day, from: since, until: at("2026-03-30T12:00:00+02:00"), progress: &progress, calendar: berlin)
        #expect(
            names(told) == [
                "intervalDidStart", "intervalDidEnd", "intervalDidStart", "intervalDidEnd", "intervalDidStart",
            ])
        #expect(told[2].0 == at("2026-03-29T00:00:00+01:00"))
        #expect(told[2].1.interval.duration == 23 * 3_600)
        #expect(told[4].0 == at("2026-03-30T00:00:00+02:00"))
    }

    @Test func aScheduleStartingInTheSkippedHourStartsAfterTheGap() {
        // 02:30 does not exist on 29 March 2026 in Berlin: the interval starts at 03:00 CEST.
        let since = at("2026-03-29T00:00:00+01:00")
        let night = activity(hm(2, 30), hm(4), since: since)
        var progress = ActivityProgress()
        let (told, _) = run(
            night, from: since, until: at("2026-03-29T05:00:00+02:00"), progress: &progress, calendar: berlin)
        #expect(names(told) == ["intervalDidStart", "intervalDidEnd"])
        #expect(told[0].0 == at("2026-03-29T03:00:00+02:00"))
    }

    @Test func aScheduleThatDoesNotRepeatEndsWithItsFirstInterval() {
        let since = at("2026-06-10T08:00:00+02:00")
        let once = activity(hm(9), hm(10), repeats: false, since: since)
        var progress = ActivityProgress()
        let (told, wakes) = run(
            once, from: since, until: at("2026-06-13T00:00:00+02:00"), progress: &progress, calendar: berlin)
        #expect(names(told) == ["intervalDidStart", "intervalDidEnd"])
        #expect(wakes == [at("2026-06-10T09:00:00+02:00"), at("2026-06-10T10:00:00+02:00")])
    }

    @Test func weekdaysPassOverTheOtherDays() {
        // Wednesday 10 June 2026 to the next Wednesday; school nights Monday to Thursday.
        let since = at("2026-06-10T12:00:00+02:00")
        let schoolNights = activity(hm(21), hm(7), since: since, weekdays: [2, 3, 4, 5])
        var progress = ActivityProgress()
        let (told, _) = run(
            schoolNights, from: since, until: at("2026-06-17T12:00:00+02:00"), progress: &progress, calendar: berlin)
        let starts = told.filter { $0.1.callback == .intervalDidStart }.map { berlin.component(.weekday, from: $0.0) }
        #expect(starts == [4, 5, 2, 3])
    }

    @Test func thresholdsAndTheirWarningsComeOncePerIntervalAtTheEarliestMomentUsageCouldReachThem() throws {
        let since = at("2026-06-10T00:00:00+02:00")
        let games = DeviceActivityEvent(categories: [category("game")], threshold: DateComponents(hour: 1))
        let day = activity(hm(0), hm(0), warning: DateComponents(minute: 5), events: ["games": games], since: since)
        // Two 40-minute stretches of a game, 09:00 and 11:00.
        var ledger = UsageLedger()
        for start in ["2026-06-10T09:00:00+02:00", "2026-06-10T11:00:00+02:00"] {
            ledger.record(
                try UsageSpan(
                    .application(app("org.example.Chess")), categories: [category("game")], start: at(start),
                    end: at(start).addingTimeInterval(40 * 60)))
        }
        var progress = ActivityProgress()
        let (told, wakes) = run(
            day, from: since, until: at("2026-06-10T23:00:00+02:00"), progress: &progress, calendar: berlin,
            ledger: ledger)
        #expect(
            names(told) == ["intervalDidStart", "eventWillReachThresholdWarning games", "eventDidReachThreshold games"])
        // 55 minutes of play were reached at 11:15, the hour at 11:20.
        #expect(told[1].0 == at("2026-06-10T11:15:00+02:00"))
        #expect(told[2].0 == at("2026-06-10T11:20:00+02:00"))
        // While the child may be playing, it wakes at the earliest moments the hour could be
        // reached (each a whole stretch of unused time later): a handful a day, never a poll.
        #expect(wakes.count < 24, "\(wakes)")
        #expect(zip(wakes, wakes.dropFirst()).allSatisfy { $1.timeIntervalSince($0) >= 5 * 60 }, "\(wakes)")
        // While nothing is in front, no threshold can come: only the boundaries wake it.
        var idle = ActivityProgress()
        _ = idle.advance(day, now: at("2026-06-10T08:00:00+02:00"), calendar: berlin, ledger: ledger)
        #expect(
            idle.nextWake(day, now: at("2026-06-10T08:00:00+02:00"), calendar: berlin, ledger: ledger, inUse: false)
                == at("2026-06-10T23:55:00+02:00"))  // the next day's start warning
        // The next day starts afresh.
        let tomorrow = progress.advance(day, now: at("2026-06-11T00:00:00+02:00"), calendar: berlin, ledger: ledger)
        #expect(tomorrow.map(\.callback) == [.intervalDidEnd, .intervalDidStart])
    }

    @Test func progressSurvivesEncodingSoARestartTellsNothingTwice() throws {
        let since = at("2026-06-10T20:00:00+02:00")
        let evening = activity(hm(21), hm(7), warning: DateComponents(minute: 5), since: since)
        var progress = ActivityProgress()
        _ = progress.advance(evening, now: at("2026-06-10T21:00:00+02:00"), calendar: berlin, ledger: nil)
        var restored = try JSONDecoder().decode(ActivityProgress.self, from: JSONEncoder().encode(progress))
        #expect(restored == progress)
        #expect(restored.advance(evening, now: at("2026-06-10T21:00:30+02:00"), calendar: berlin, ledger: nil).isEmpty)
    }
}

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("90s", 90.0), ("1m", 60), ("45m", 2_700), ("1h30m", 5_400), ("2h", 7_200), ("1d", 86_400),
        ("1h 30m", 5_400), ("30", 1_800), ("1H30M", 5_400), ("1d2h3m4s", 93_784),
    ])
    func parses(_ text: String, _ seconds: Double) throws {
        #expect(try DurationText.parse(text) == seconds)
    }

    @Test(arguments: ["", "m", "1x", "30m1h", "1h1h", "0m", "8d", "1.5h", "-1m", "1h30", "9999999s"])
    func refuses(_ text: String) {
        let error = #expect(throws: ScreenTimeCoreError.self) { try DurationText.parse(text) }
        #expect(error?.code == .invalidDuration)
    }

    @Test func formatsAndGivesComponents() {
        #expect(DurationText.format(5_400) == "1h30m")
        #expect(DurationText.format(90) == "1m30s")
        #expect(DurationText.components(5_400) == DateComponents(hour: 1, minute: 30))
        #expect(DurationText.components(5_400).durationSeconds == 5_400)
    }

    @Test func weekdays() throws {
        #expect(try Weekday.parse("mon,tue") == [2, 3])
        #expect(try Weekday.parse("weekdays") == [2, 3, 4, 5, 6])
        #expect(try Weekday.parse("Sat, sunday") == [1, 7])
        #expect(Weekday.format([1, 2, 7]) == "mon,sat,sun")
        #expect(throws: ScreenTimeCoreError.self) { try Weekday.parse("funday") }
        #expect(throws: ScreenTimeCoreError.self) { try Weekday.parse("") }
    }
}

extension DateComponents {
    fileprivate var durationSeconds: Int {
        (day ?? 0) * 86_400 + (hour ?? 0) * 3_600 + (minute ?? 0) * 60 + (second ?? 0)
    }
}
