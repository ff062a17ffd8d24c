import Foundation
import ScreenTimeCore
import Testing

@Suite struct DeviceActivityScheduleTests {
    let berlin = calendar("Europe/Berlin")
    let newYork = calendar("America/New_York")

    private func schedule(
        _ start: DateComponents, _ end: DateComponents, repeats: Bool = true
    ) -> DeviceActivitySchedule {
        DeviceActivitySchedule(intervalStart: start, intervalEnd: end, repeats: repeats)
    }

    // MARK: validation (Apple's MonitoringError codes)

    @Test func fifteenMinutesIsTheShortest() throws {
        try schedule(hm(8, 0), hm(8, 15)).validate()
        #expect(throws: ScreenTimeCoreError.self) { try schedule(hm(8, 0), hm(8, 14)).validate() }
        let error = #expect(throws: ScreenTimeCoreError.self) { try schedule(hm(8, 0), hm(8, 10)).validate() }
        #expect(error?.code == .intervalTooShort)
        #expect(error?.message.contains("10 min") == true)
    }

    @Test func oneWeekIsTheLongest() throws {
        // Monday 08:00 to the next Monday 08:00 is exactly a week.
        try schedule(hm(8, weekday: 2), hm(8, weekday: 2)).validate()
        let tooLong = schedule(
            DateComponents(year: 2030, month: 1, day: 1, hour: 0), DateComponents(year: 2030, month: 1, day: 8, hour: 1)
        )
        #expect(
            throws: ScreenTimeCoreError(
                .intervalTooLong, "the interval lasts 169 h 0 min; it may last at most one week")
        ) {
            try tooLong.validate()
        }
    }

    @Test(arguments: [
        DateComponents(hour: 24), DateComponents(minute: 60), DateComponents(hour: 1, weekday: 8),
        DateComponents(month: 13, day: 1), DateComponents(), DateComponents(hour: 1, weekOfYear: 3),
        DateComponents(hour: -1),
    ])
    func invalidComponents(_ start: DateComponents) {
        let error = #expect(throws: ScreenTimeCoreError.self) { try schedule(start, hm(23)).validate() }
        #expect(error?.code == .invalidDateComponents)
    }

    @Test func componentsThatMatchNoDateAreInvalid() {
        let never = schedule(DateComponents(month: 2, day: 30, hour: 8), hm(9))
        #expect(throws: ScreenTimeCoreError.self) { try never.validate() }
        #expect(never.nextInterval(at: at("2026-01-01T00:00:00Z"), calendar: berlin) == nil)
    }

    @Test func warningTimeMustBeADuration() {
        var withWarning = schedule(hm(8), hm(9))
        withWarning.warningTime = DateComponents(minute: 5)
        #expect((try? withWarning.validate()) != nil)
        #expect(withWarning.warningDuration == 300)
        withWarning.warningTime = DateComponents(weekday: 2)
        #expect(throws: ScreenTimeCoreError.self) { try withWarning.validate() }
    }

    // MARK: nextInterval

    @Test func nextIntervalLaterToday() {
        let daytime = schedule(hm(15, 30), hm(17))
        let interval = daytime.nextInterval(at: at("2026-06-10T09:00:00+02:00"), calendar: berlin)
        #expect(interval == DateInterval(start: at("2026-06-10T15:30:00+02:00"), end: at("2026-06-10T17:00:00+02:00")))
    }

    @Test func currentIntervalWhileOngoing() {
        let daytime = schedule(hm(15, 30), hm(17))
        let interval = daytime.nextInterval(at: at("2026-06-10T16:00:00+02:00"), calendar: berlin)
        #expect(interval?.start == at("2026-06-10T15:30:00+02:00"))
        // At the very end the interval is over and the next one is tomorrow's.
        #expect(
            daytime.nextInterval(at: at("2026-06-10T17:00:00+02:00"), calendar: berlin)?.start
                == at("2026-06-11T15:30:00+02:00"))
        // At the very start it is the current one.
        #expect(
            daytime.nextInterval(at: at("2026-06-10T15:30:00+02:00"), calendar: berlin)?.start
                == at("2026-06-10T15:30:00+02:00"))
    }

    @Test func intervalAcrossMidnight() {
        let bedtime = schedule(hm(21), hm(7))
        let expected = DateInterval(start: at("2026-06-10T21:00:00+02:00"), end: at("2026-06-11T07:00:00+02:00"))
        #expect(bedtime.nextInterval(at: at("2026-06-10T20:00:00+02:00"), calendar: berlin) == expected)
        // Started mid-interval, before and after midnight: the ongoing interval.
        #expect(bedtime.nextInterval(at: at("2026-06-10T22:00:00+02:00"), calendar: berlin) == expected)
        #expect(bedtime.nextInterval(at: at("2026-06-11T06:59:00+02:00"), calendar: berlin) == expected)
        #expect(
            bedtime.nextInterval(at: at("2026-06-11T07:00:00+02:00"), calendar: berlin)?.start
                == at("2026-06-11T21:00:00+02:00"))
    }

    @Test func weekdayInterval() {
        let school = schedule(hm(8, weekday: 2), hm(15, weekday: 6))  // Monday 08:00 to Friday 15:00
        let expected = DateInterval(start: at("2026-06-08T08:00:00+02:00"), end: at("2026-06-12T15:00:00+02:00"))
        #expect(school.nextInterval(at: at("2026-06-10T12:00:00+02:00"), calendar: berlin) == expected)  // Wednesday
        #expect(
            school.nextInterval(at: at("2026-06-13T12:00:00+02:00"), calendar: berlin)?.start
                == at("2026-06-15T08:00:00+02:00"))
        // A weekday start and a daily end: Monday's afternoon only.
        let mondays = schedule(hm(14, weekday: 2), hm(16))
        #expect(
            mondays.nextInterval(at: at("2026-06-10T12:00:00+02:00"), calendar: berlin)
                == DateInterval(start: at("2026-06-15T14:00:00+02:00"), end: at("2026-06-15T16:00:00+02:00")))
    }

    @Test func equalStartAndEndIsAWholeDay() throws {
        let allDay = schedule(hm(0), hm(0))
        try allDay.validate()
        #expect(
            allDay.nextInterval(at: at("2026-06-10T12:00:00+02:00"), calendar: berlin)
                == DateInterval(start: at("2026-06-10T00:00:00+02:00"), end: at("2026-06-11T00:00:00+02:00")))
    }

    @Test func leapDay() {
        let onLeapDay = schedule(DateComponents(month: 2, day: 29, hour: 10), DateComponents(hour: 12))
        let interval = onLeapDay.nextInterval(at: at("2026-01-01T00:00:00Z"), calendar: newYork)
        #expect(interval == DateInterval(start: at("2028-02-29T10:00:00-05:00"), end: at("2028-02-29T12:00:00-05:00")))
        // A daily schedule runs on the leap day like any other.
        let daily = schedule(hm(23, 30), hm(0, 30))
        #expect(
            daily.nextInterval(at: at("2028-02-29T23:45:00-05:00"), calendar: newYork)
                == DateInterval(start: at("2028-02-29T23:30:00-05:00"), end: at("2028-03-01T00:30:00-05:00")))
    }

    @Test func timeZonesGiveLocalTimes() {
        let bedtime = schedule(hm(21), hm(7))
        let now = at("2026-06-10T12:00:00Z")
        #expect(bedtime.nextInterval(at: now, calendar: berlin)?.start == at("2026-06-10T19:00:00Z"))
        #expect(bedtime.nextInterval(at: now, calendar: newYork)?.start == at("2026-06-11T01:00:00Z"))
    }

    // MARK: DST: Berlin springs forward 2026-03-29 02:00→03:00 and falls back 2026-10-25 03:00→02:00;
    // New York springs forward 2026-03-08 02:00→03:00 and falls back 2026-11-01 02:00→01:00.

    @Test func berlinSpringForwardShortensTheNight() {
        let bedtime = schedule(hm(21), hm(7))
        let night = bedtime.nextInterval(at: at("2026-03-28T22:00:00+01:00"), calendar: berlin)
        #expect(night == DateInterval(start: at("2026-03-28T21:00:00+01:00"), end: at("2026-03-29T07:00:00+02:00")))
        #expect(night?.duration.rounded() == TimeInterval(9 * 3_600))
    }

    @Test func berlinSpringForwardSkippedStartBeginsAfterTheGap() {
        // 02:30 does not exist on 2026-03-29: the interval starts when the clock jumps, at 03:00.
        let early = schedule(hm(2, 30), hm(4))
        let interval = early.nextInterval(at: at("2026-03-29T00:00:00+01:00"), calendar: berlin)
        #expect(interval == DateInterval(start: at("2026-03-29T03:00:00+02:00"), end: at("2026-03-29T04:00:00+02:00")))
        // The next day is ordinary again.
        #expect(
            early.nextInterval(at: at("2026-03-29T05:00:00+02:00"), calendar: berlin)?.start
                == at("2026-03-30T02:30:00+02:00"))
    }

    @Test func berlinFallBackLengthensTheNight() {
        let bedtime = schedule(hm(21), hm(7))
        let night = bedtime.nextInterval(at: at("2026-10-24T23:00:00+02:00"), calendar: berlin)
        #expect(night == DateInterval(start: at("2026-10-24T21:00:00+02:00"), end: at("2026-10-25T07:00:00+01:00")))
        #expect(night?.duration.rounded() == TimeInterval(11 * 3_600))
    }

    @Test func berlinFallBackRepeatedStartUsesTheFirst() {
        // 02:30 happens twice on 2026-10-25; the interval starts at the first (summer time).
        let early = schedule(hm(2, 30), hm(4))
        let interval = early.nextInterval(at: at("2026-10-25T00:00:00+02:00"), calendar: berlin)
        #expect(interval?.start == at("2026-10-25T02:30:00+02:00"))
        #expect(interval?.end == at("2026-10-25T04:00:00+01:00"))
    }

    @Test func newYorkSpringForward() {
        let evening = schedule(hm(1, 30), hm(3, 30))
        let interval = evening.nextInterval(at: at("2026-03-08T00:00:00-05:00"), calendar: newYork)
        // 01:30 EST to 03:30 EDT is one hour of real time.
        #expect(interval == DateInterval(start: at("2026-03-08T01:30:00-05:00"), end: at("2026-03-08T03:30:00-04:00")))
        #expect(interval?.duration.rounded() == TimeInterval(3_600))
        let skipped = schedule(hm(2, 15), hm(5))
        #expect(
            skipped.nextInterval(at: at("2026-03-08T00:00:00-05:00"), calendar: newYork)?.start
                == at("2026-03-08T03:00:00-04:00"))
    }

    @Test func newYorkFallBack() {
        let bedtime = schedule(hm(20), hm(6))
        let night = bedtime.nextInterval(at: at("2026-10-31T21:00:00-04:00"), calendar: newYork)
        #expect(night == DateInterval(start: at("2026-10-31T20:00:00-04:00"), end: at("2026-11-01T06:00:00-05:00")))
        #expect(night?.duration.rounded() == TimeInterval(11 * 3_600))
        // During the repeated hour, the ongoing interval is still found.
        #expect(bedtime.nextInterval(at: at("2026-11-01T01:30:00-05:00"), calendar: newYork) == night)
    }

    // MARK: coding

    @Test func codesOnlyScheduleFields() throws {
        var start = hm(21, 30)
        start.timeZone = TimeZone(identifier: "Asia/Tokyo")
        let original = DeviceActivitySchedule(
            intervalStart: start, intervalEnd: hm(7), repeats: true, warningTime: DateComponents(minute: 10))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(original), as: UTF8.self)
        #expect(
            json
                == #"{"intervalEnd":{"hour":7,"minute":0},"intervalStart":{"hour":21,"minute":30},"repeats":true,"warningTime":{"minute":10}}"#
        )
        #expect(try JSONDecoder().decode(DeviceActivitySchedule.self, from: Data(json.utf8)) == original)
    }
}

@Suite struct MonitoredActivitiesTests {
    let now = at("2026-06-10T12:00:00+02:00")
    let daily = DeviceActivitySchedule(intervalStart: hm(0), intervalEnd: hm(0), repeats: true)

    @Test func twentyActivitiesAndTheTwentyFirstIsRefused() throws {
        var activities = MonitoredActivities()
        for index in 0..<20 {
            try activities.startMonitoring(try DeviceActivityName.validated("a\(index)"), during: daily, at: now)
        }
        let error = #expect(throws: ScreenTimeCoreError.self) {
            try activities.startMonitoring(try DeviceActivityName.validated("a20"), during: daily, at: now)
        }
        #expect(error?.code == .excessiveActivities)
        // Restarting an activity already monitored replaces it and is not an extra one.
        try activities.startMonitoring(try DeviceActivityName.validated("a0"), during: daily, at: now)
        #expect(activities.stopMonitoring([try DeviceActivityName.validated("a1")]).count == 1)
        try activities.startMonitoring(try DeviceActivityName.validated("a20"), during: daily, at: now)
        #expect(activities.stopMonitoring().count == 20)
        #expect(activities.activities.isEmpty)
    }

    @Test func badSchedulesAndEventsChangeNothing() throws {
        var activities = MonitoredActivities()
        let short = DeviceActivitySchedule(intervalStart: hm(8), intervalEnd: hm(8, 5), repeats: true)
        #expect(throws: ScreenTimeCoreError.self) {
            try activities.startMonitoring(try DeviceActivityName.validated("x"), during: short, at: now)
        }
        let zero = DeviceActivityEvent(applications: [app("a")], threshold: DateComponents(minute: 0))
        do {
            try activities.startMonitoring(
                try DeviceActivityName.validated("x"), during: daily, events: [try .validated("limit"): zero], at: now)
            Issue.record("a zero threshold was accepted")
        } catch {
            #expect(error.code == .invalidThreshold)
            #expect(error.message.hasPrefix("event 'limit'"))
        }
        #expect(activities.activities.isEmpty)
    }

    @Test func namesAreValidated() {
        #expect(throws: ScreenTimeCoreError.self) { try DeviceActivityName.validated("") }
        #expect(throws: ScreenTimeCoreError.self) { try DeviceActivityName.validated("bad\nname") }
        #expect(throws: ScreenTimeCoreError.self) {
            try DeviceActivityEvent.Name.validated(String(repeating: "x", count: 129))
        }
        #expect((try? DeviceActivityName.validated("Schlafenszeit 🌙")) != nil)
    }

    @Test func aScheduleThatDoesNotRepeatEndsAfterItsFirstInterval() throws {
        let once = DeviceActivitySchedule(intervalStart: hm(15), intervalEnd: hm(17), repeats: false)
        let berlin = calendar("Europe/Berlin")
        let activity = MonitoredActivity(
            name: try DeviceActivityName.validated("once"), schedule: once, events: [:], monitoringStart: now)
        let first = DateInterval(start: at("2026-06-10T15:00:00+02:00"), end: at("2026-06-10T17:00:00+02:00"))
        #expect(activity.currentOrNextInterval(at: now, calendar: berlin) == first)
        #expect(activity.currentOrNextInterval(at: at("2026-06-10T16:00:00+02:00"), calendar: berlin) == first)
        #expect(activity.currentOrNextInterval(at: at("2026-06-10T18:00:00+02:00"), calendar: berlin) == nil)
        var repeating = activity
        repeating.schedule.repeats = true
        #expect(
            repeating.currentOrNextInterval(at: at("2026-06-10T18:00:00+02:00"), calendar: berlin)?.start
                == at("2026-06-11T15:00:00+02:00"))
    }
}
