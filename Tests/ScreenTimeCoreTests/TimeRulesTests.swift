import Foundation
import ScreenTimeCore
import Testing

/// Limits by day of the week and by week, grants that add up, and a guardian's lock.
@Suite struct TimeRulesTests {
    let berlin = calendar("Europe/Berlin")

    // MARK: what a guardian writes

    @Test func aDayAllowanceIsReadAsAGuardianWritesIt() throws {
        #expect(try DailyAllowance.parse("1h") == .everyDay(3_600))
        let split = try DailyAllowance.parse("mon-fri=1h,sat,sun=3h")
        #expect(split.seconds == [2: 3_600, 3: 3_600, 4: 3_600, 5: 3_600, 6: 3_600, 7: 10_800, 1: 10_800])
        #expect(split.description == "mon,tue,wed,thu,fri=1h,sat,sun=3h")
        #expect(try DailyAllowance.parse(split.description) == split)
        // Round the weekend, names in full, the words of downtime's --days, and nothing at all.
        #expect(try DailyAllowance.parse("fri-mon=2h").seconds.keys.sorted() == [1, 2, 6, 7])
        #expect(try Weekday.parse("sun-thu") == [1, 2, 3, 4, 5] && Weekday.parse("sat,sun-mon") == [1, 2, 7])
        #expect(try DailyAllowance.parse("Saturday=30m").seconds == [7: 1_800])
        #expect(try DailyAllowance.parse("weekdays=45m,weekend=0").seconds[1] == 0)
        #expect(try DailyAllowance.parse("0") == .everyDay(0))
        #expect(!(try DailyAllowance.parse("weekdays=45m")).isEveryDay)
    }

    @Test(arguments: [
        ("mon=1h,mon=2h", "given twice"), ("sat", "has no time"), ("mon-fri=1h,sat", "has no time"),
        ("xyz=1h", "not a day"), ("mon=24h", "a whole day"), ("mon=1h=2h", "more than one"), ("mon=,sun=1h", "empty"),
        ("mon-=1h", "no day"), ("", "empty"), ("mon=1x", "not a unit"),
    ])
    func aWrongAllowanceSaysWhatIsWrong(text: String, says: String) {
        #expect {
            try DailyAllowance.parse(text)
        } throws: { error in
            "\(error)".contains(says) || ((error as? ScreenTimeCoreError)?.message.contains(says) ?? false)
        }
    }

    @Test func aGrantsLengthIsReadAsAGuardianWritesIt() throws {
        #expect(try GrantLength.parse("15m") == .minutes(15))
        #expect(try GrantLength.parse("1h") == .minutes(60))
        #expect(try GrantLength.parse("rest-of-day") == .restOfDay)
        #expect(try GrantLength.parse("until 20:30") == .until(hour: 20, minute: 30))
        #expect(try GrantLength.parse("7:05") == .until(hour: 7, minute: 5))
        for wrong in ["24:00", "12:60", "13h", "0", "until", "1:2:3"] {
            #expect(throws: ScreenTimeCoreError.self, "\(wrong)") { try GrantLength.parse(wrong) }
        }
    }

    // MARK: grant arithmetic

    @Test func aGrantAddsToWhatIsLeftOrToTheGrantRunning() {
        let now = at("2026-06-10T16:00:00+02:00")
        let minutes = { (date: Date) in date.timeIntervalSince(now) / 60 }
        // Nothing left, nothing running: from now.
        #expect(minutes(GrantLength.minutes(15).end(at: now, calendar: berlin)) == 15)
        // 10 minutes of the limit left: 15 more give 25.
        #expect(minutes(GrantLength.minutes(15).end(at: now, remaining: 600, calendar: berlin)) == 25)
        // A grant running for 20 more minutes (later than the 10 left): 15 more give 35.
        let running = now.addingTimeInterval(20 * 60)
        #expect(minutes(GrantLength.minutes(15).end(at: now, remaining: 600, current: running, calendar: berlin)) == 35)
        // A grant that ended is no base.
        #expect(
            minutes(GrantLength.minutes(15).end(at: now, current: now.addingTimeInterval(-60), calendar: berlin)) == 15)
        // The rest of the day ends at midnight; until a time, at that time (tomorrow's if passed).
        #expect(GrantLength.restOfDay.end(at: now, calendar: berlin) == at("2026-06-11T00:00:00+02:00"))
        #expect(
            GrantLength.until(hour: 18, minute: 30).end(at: now, calendar: berlin) == at("2026-06-10T18:30:00+02:00"))
        #expect(GrantLength.until(hour: 9, minute: 0).end(at: now, calendar: berlin) == at("2026-06-11T09:00:00+02:00"))
        // They never shorten a grant running longer.
        let late = at("2026-06-11T02:00:00+02:00")
        #expect(GrantLength.restOfDay.end(at: now, current: late, calendar: berlin) == late)
    }

    @Test func theRestOfTheDayEndsAtMidnightAcrossAChangeOfTheClock() {
        // Spring forward: 29 March 2026 has 23 hours; from 01:00 to midnight is 22.
        let spring = at("2026-03-29T01:00:00+01:00")
        #expect(GrantLength.restOfDay.end(at: spring, calendar: berlin) == at("2026-03-30T00:00:00+02:00"))
        #expect(GrantLength.restOfDay.end(at: spring, calendar: berlin).timeIntervalSince(spring) == 22 * 3_600)
        // Fall back: 25 October 2026 has 25 hours; from 01:00 to midnight is 24.
        let fall = at("2026-10-25T01:00:00+02:00")
        #expect(GrantLength.restOfDay.end(at: fall, calendar: berlin).timeIntervalSince(fall) == 24 * 3_600)
        // Until 02:30 on the day it does not exist: the first moment after the gap.
        let night = at("2026-03-29T00:30:00+01:00")
        #expect(
            GrantLength.until(hour: 2, minute: 30).end(at: night, calendar: berlin) == at("2026-03-29T03:00:00+02:00"))
    }

    // MARK: limits by day and by week

    private func span(_ start: String, minutes: Double, of id: String = "org.example.Chess") throws -> UsageSpan {
        try UsageSpan(
            .application(app(id)), categories: [category("game")], start: at(start),
            end: at(start).addingTimeInterval(minutes * 60))
    }

    private func told(
        _ activity: MonitoredActivity, at times: [String], ledger: UsageLedger, progress: inout ActivityProgress
    ) -> [String] {
        times.flatMap { time in
            progress.advance(activity, now: at(time), calendar: berlin, ledger: ledger).map {
                $0.callback.rawValue + ($0.event.map { " \($0)" } ?? "")
            }
        }
    }

    @Test func aDailyLimitByDayReachesEachDayAtItsOwnFigure() throws {
        var games = DeviceActivityEvent(categories: [category("game")], threshold: DateComponents(hour: 3))
        games.allowance = try DailyAllowance.parse("mon-fri=1h,sat=3h")
        let day = MonitoredActivity(
            name: try DeviceActivityName.validated("limit: Game"),
            schedule: DeviceActivitySchedule(
                intervalStart: hm(0), intervalEnd: hm(0), repeats: true, warningTime: DateComponents(minute: 5)),
            events: [try DeviceActivityEvent.Name.validated("limit"): games],
            monitoringStart: at("2026-06-01T00:00:00+02:00"))
        // Friday 12 June and Saturday 13 June 2026: 90 minutes of play each, from 10:00; Sunday too.
        var ledger = UsageLedger()
        for day in ["12", "13", "14"] { ledger.record(try span("2026-06-\(day)T10:00:00+02:00", minutes: 90)) }
        var progress = ActivityProgress()
        // Friday: the hour is reached at 11:00.
        #expect(
            told(
                day, at: ["2026-06-12T10:56:00+02:00", "2026-06-12T11:00:00+02:00"], ledger: ledger, progress: &progress
            )
                == ["intervalDidStart", "eventWillReachThresholdWarning limit", "eventDidReachThreshold limit"])
        // Saturday: 90 minutes are under its 3 hours.
        #expect(
            told(
                day, at: ["2026-06-13T00:00:00+02:00", "2026-06-13T23:00:00+02:00"], ledger: ledger, progress: &progress
            )
                == ["intervalDidEnd", "intervalDidStart"])
        // Sunday is not named: no limit at all, and nothing wakes for one.
        #expect(
            told(
                day, at: ["2026-06-14T00:00:00+02:00", "2026-06-14T23:00:00+02:00"], ledger: ledger, progress: &progress
            )
                == ["intervalDidEnd", "intervalDidStart"])
        #expect(
            progress.nextWake(day, now: at("2026-06-14T12:00:00+02:00"), calendar: berlin, ledger: ledger)
                == at("2026-06-14T23:55:00+02:00"))
    }

    @Test func anAllowanceOfNothingIsReachedAtTheStartOfItsDayWithNoWarning() throws {
        var screen = DeviceActivityEvent(threshold: DateComponents(hour: 2), includesPastActivity: true)
        screen.allActivity = true
        screen.allowance = try DailyAllowance.parse("mon-sat=2h,sun=0")
        let day = MonitoredActivity(
            name: try DeviceActivityName.validated("screen time"),
            schedule: DeviceActivitySchedule(
                intervalStart: hm(0), intervalEnd: hm(0), repeats: true, warningTime: DateComponents(minute: 5)),
            events: [try DeviceActivityEvent.Name.validated("limit"): screen],
            monitoringStart: at("2026-06-01T00:00:00+02:00"))
        var progress = ActivityProgress()
        _ = told(day, at: ["2026-06-13T23:00:00+02:00"], ledger: UsageLedger(), progress: &progress)
        #expect(
            told(day, at: ["2026-06-14T00:00:00+02:00"], ledger: UsageLedger(), progress: &progress)
                == ["intervalDidEnd", "intervalDidStart", "eventDidReachThreshold limit"])
    }

    @Test func aWeeklyBudgetCountsMondayToSundayAndTheTighterRuleWins() throws {
        let games = DeviceActivityEvent(
            categories: [category("game")], threshold: DateComponents(hour: 4), includesPastActivity: true)
        let week = MonitoredActivity(
            name: try DeviceActivityName.validated("limit: Game (week)"),
            schedule: DeviceActivitySchedule(
                intervalStart: hm(0, weekday: 2), intervalEnd: hm(0, weekday: 2), repeats: true,
                warningTime: DateComponents(minute: 5)),
            events: [try DeviceActivityEvent.Name.validated("limit"): games],
            monitoringStart: at("2026-06-01T00:00:00+02:00"))
        var daily = games
        daily.threshold = DateComponents(hour: 1)
        let day = MonitoredActivity(
            name: try DeviceActivityName.validated("limit: Game"),
            schedule: DeviceActivitySchedule(
                intervalStart: hm(0), intervalEnd: hm(0), repeats: true, warningTime: DateComponents(minute: 5)),
            events: [try DeviceActivityEvent.Name.validated("limit"): daily],
            monitoringStart: at("2026-06-01T00:00:00+02:00"))
        // 55 minutes a day from Monday 8 June: under the day's hour each day; the week's four
        // hours are reached on Friday 12 June at 10:20 (4 × 55 = 220 minutes, then 20 more).
        var ledger = UsageLedger()
        for date in ["08", "09", "10", "11", "12", "13"] {
            ledger.record(try span("2026-06-\(date)T10:00:00+02:00", minutes: 55))
        }
        var weekly = ActivityProgress()
        var days = ActivityProgress()
        var weekTold: [String] = []
        var dayTold: [String] = []
        var reachedAt: Date?
        var minute = at("2026-06-08T00:00:00+02:00")
        while minute < at("2026-06-14T00:00:00+02:00") {
            let now = minute
            let fromWeek = weekly.advance(week, now: now, calendar: berlin, ledger: ledger)
            if fromWeek.contains(where: { $0.callback == .eventDidReachThreshold }) { reachedAt = now }
            weekTold += fromWeek.map(\.callback.rawValue)
            dayTold += days.advance(day, now: now, calendar: berlin, ledger: ledger).map(\.callback.rawValue)
            minute = minute.addingTimeInterval(60)
        }
        #expect(reachedAt == at("2026-06-12T10:20:00+02:00"))
        #expect(weekTold.filter { $0 == "eventDidReachThreshold" }.count == 1)
        // The daily limit, an hour, was never reached: the week's is the tighter one here.
        #expect(!dayTold.contains("eventDidReachThreshold"))
        // The next Monday starts the week afresh.
        let monday = weekly.advance(week, now: at("2026-06-15T00:00:00+02:00"), calendar: berlin, ledger: ledger)
        #expect(monday.map(\.callback) == [.intervalDidEnd, .intervalDidStart])
    }

    // MARK: locks and grants in the policy

    @Test func aGuardiansLockIsNotLiftedByAGrantAndScreenTimeGrantsLiftTheWeek() throws {
        let now = at("2026-06-10T16:00:00+02:00")
        let grant = TimeGrant(.screenTime, until: now.addingTimeInterval(1_800))
        let downtime = LoginLock.inForce(
            locks: [("downtime", now.addingTimeInterval(3_600))], grants: [grant], at: now)
        #expect(downtime?.grantedUntil == grant.until)
        let guardian = LoginLock.inForce(
            locks: [("downtime", now.addingTimeInterval(7_200)), ("guardian", now.addingTimeInterval(3_600))],
            grants: [grant], at: now)
        #expect(guardian?.reason == "guardian")
        #expect(guardian?.grantedUntil == nil)

        var stores = StoreCollection()
        let weekend = StoreKey(client: .agent, name: try StoreName("downtime-weekend"))
        #expect(weekend.isDowntime && StoreKey.downtime.isDowntime && !store("downtime-x").isDowntime)
        for key in [StoreKey.screenTime, .weeklyScreenTime, .downtime, weekend] {
            try stores.update(key) { $0.shield.applicationCategories = .all(except: []) }
        }
        #expect(stores.policyInForce(grants: [], at: now).applicationShield(for: app("a"), categories: []).count == 4)
        #expect(stores.policyInForce(grants: [grant], at: now).applicationShield(for: app("a"), categories: []).isEmpty)
    }

    @Test func whatIsAlwaysAllowedRunsThroughDowntimeAndScreenTimeButNotItsOwnLimit() throws {
        let now = at("2026-06-10T21:30:00+02:00")
        let calculator = app("org.gnome.Calculator")
        let school = domain("school.example")
        var stores = StoreCollection()
        for key in [StoreKey.downtime, .screenTime, .weeklyScreenTime] {
            try stores.update(key) {
                $0.shield.applicationCategories = .all(except: [])
                $0.shield.webDomainCategories = .all(except: [])
            }
        }
        let allowed = AlwaysAllowed(applications: [calculator], webDomains: [school])
        let before = stores.policyInForce(grants: [], at: now)
        let after = stores.policyInForce(grants: [], alwaysAllowed: allowed, at: now)
        #expect(before.applicationShield(for: calculator, categories: []).count == 3)
        #expect(after.applicationShield(for: calculator, categories: []).isEmpty)
        #expect(after.webDomainShield(for: [school], categories: []).isEmpty)
        // Everything else stays shielded.
        #expect(after.applicationShield(for: app("org.example.Game"), categories: []).count == 3)
        #expect(after.webDomainShield(for: [domain("games.example")], categories: []).count == 3)
        // A limit on the app itself (its own store), a guardian's shield and a block still hold.
        try stores.update(store("limits", client: "agent")) { $0.shield.applications = [calculator] }
        try stores.update(store("school")) { $0.application.blockedApplications = [calculator] }
        let limited = stores.policyInForce(grants: [], alwaysAllowed: allowed, at: now)
        #expect(limited.applicationShield(for: calculator, categories: []) == [store("limits", client: "agent")])
        #expect(limited.applicationBlock(for: calculator) == [store("school")])
    }

    // MARK: several warnings

    @Test func severalWarningsComeOnceEachAndOnlyTheLatestWhenSeveralAreDueAtOnce() throws {
        var games = DeviceActivityEvent(
            categories: [category("game")], threshold: DateComponents(hour: 1), includesPastActivity: true)
        games.allowance = nil
        var downtime = MonitoredActivity(
            name: try DeviceActivityName.validated("downtime"),
            schedule: DeviceActivitySchedule(
                intervalStart: hm(21), intervalEnd: hm(7), repeats: true, warningTime: DateComponents(minute: 5)),
            events: [:], monitoringStart: at("2026-06-10T12:00:00+02:00"))
        downtime.warnings = [60, 300, 600, 1_800]
        // From 20:00, a minute at a time: 30, 10, 5 and 1 minutes before 21:00, each once.
        var progress = ActivityProgress()
        var told: [(Date, TimeInterval?)] = []
        var wakes: [Date] = []
        var minute = at("2026-06-10T20:00:00+02:00")
        while minute < at("2026-06-10T21:00:00+02:00") {
            told += progress.advance(downtime, now: minute, calendar: berlin, ledger: nil)
                .filter { $0.callback == .intervalWillStartWarning }.map { (minute, $0.warning) }
            if let wake = progress.nextWake(downtime, now: minute, calendar: berlin, ledger: nil) { wakes.append(wake) }
            minute = minute.addingTimeInterval(60)
        }
        #expect(told.map(\.1) == [1_800, 600, 300, 60])
        #expect(
            told.map(\.0) == ["20:30", "20:50", "20:55", "20:59"].map { at("2026-06-10T\($0):00+02:00") })
        // It wakes for each, not every minute.
        #expect(Set(wakes).isSuperset(of: told.map(\.0)))
        // Set 3 minutes before: only the 5 minutes' now, then the minute's.
        var late = ActivityProgress()
        let now = late.advance(downtime, now: at("2026-06-10T20:57:00+02:00"), calendar: berlin, ledger: nil)
        #expect(now.map(\.warning) == [300])
        let last = late.advance(downtime, now: at("2026-06-10T20:59:00+02:00"), calendar: berlin, ledger: nil)
        #expect(last.map(\.warning) == [60])

        // A threshold's: used without a break from 10:00, an hour's limit is warned at 10:30,
        // 10:50, 10:55 and 10:59, and reached at 11:00.
        var day = MonitoredActivity(
            name: try DeviceActivityName.validated("limit: Game"),
            schedule: DeviceActivitySchedule(
                intervalStart: hm(0), intervalEnd: hm(0), repeats: true, warningTime: DateComponents(minute: 5)),
            events: [try DeviceActivityEvent.Name.validated("limit"): games],
            monitoringStart: at("2026-06-10T00:00:00+02:00"))
        day.warnings = [1_800, 600, 300, 60]
        var ledger = UsageLedger()
        ledger.record(try span("2026-06-10T10:00:00+02:00", minutes: 90))
        var limit = ActivityProgress()
        var notices: [(Date, String, TimeInterval?)] = []
        minute = at("2026-06-10T09:59:00+02:00")
        while minute <= at("2026-06-10T11:01:00+02:00") {
            notices += limit.advance(day, now: minute, calendar: berlin, ledger: ledger)
                .filter { $0.event != nil }.map { (minute, $0.callback.rawValue, $0.warning) }
            minute = minute.addingTimeInterval(60)
        }
        #expect(notices.map(\.2) == [1_800, 600, 300, 60, nil])
        #expect(
            notices.map(\.0)
                == ["10:30", "10:50", "10:55", "10:59", "11:00"].map { at("2026-06-10T\($0):00+02:00") })
        #expect(notices.last?.1 == "eventDidReachThreshold")
        // What was told survives encoding (a restart tells nothing twice).
        let copy = try JSONDecoder().decode(ActivityProgress.self, from: JSONEncoder().encode(limit))
        var again = copy
        #expect(again.advance(day, now: at("2026-06-10T11:02:00+02:00"), calendar: berlin, ledger: ledger).isEmpty)
    }

    // MARK: free periods

    @Test func useInAFreePeriodCountsTowardNoLimit() throws {
        var games = DeviceActivityEvent(
            categories: [category("game")], threshold: DateComponents(hour: 1), includesPastActivity: true)
        games.allowance = nil
        var day = MonitoredActivity(
            name: try DeviceActivityName.validated("limit: Game"),
            schedule: DeviceActivitySchedule(intervalStart: hm(0), intervalEnd: hm(0), repeats: true),
            events: [try DeviceActivityEvent.Name.validated("limit"): games],
            monitoringStart: at("2026-06-10T00:00:00+02:00"))
        let homework = FreePeriod(
            schedule: DeviceActivitySchedule(intervalStart: hm(16), intervalEnd: hm(18), repeats: true),
            weekdays: [2, 3, 4, 5, 6])
        // Wednesday 10 June: played 15:30 to 17:30; of it, 16:00 to 17:30 was homework time.
        var ledger = UsageLedger()
        ledger.record(try span("2026-06-10T15:30:00+02:00", minutes: 120))
        let interval = DateInterval(start: at("2026-06-10T00:00:00+02:00"), duration: 86_400)
        let now = at("2026-06-10T20:00:00+02:00")
        #expect(ThresholdTracker.usage(of: games, activity: day, interval: interval, ledger: ledger, now: now) == 7_200)
        day.freePeriods = [homework]
        let counted = ThresholdTracker.usage(
            of: games, activity: day, interval: interval, ledger: ledger, now: now, calendar: berlin)
        #expect(counted == 30 * 60)
        // Two free periods that overlap are taken away once.
        day.freePeriods = [
            homework,
            FreePeriod(schedule: DeviceActivitySchedule(intervalStart: hm(17), intervalEnd: hm(19), repeats: true)),
        ]
        #expect(
            ThresholdTracker.usage(
                of: games, activity: day, interval: interval, ledger: ledger, now: now, calendar: berlin)
                == 30 * 60)
        // Not on a Saturday (13 June): the weekday period does not apply.
        day.freePeriods = [homework]
        var saturday = UsageLedger()
        saturday.record(try span("2026-06-13T16:00:00+02:00", minutes: 60))
        let weekend = DateInterval(start: at("2026-06-13T00:00:00+02:00"), duration: 86_400)
        #expect(
            ThresholdTracker.usage(
                of: games, activity: day, interval: weekend, ledger: saturday, now: at("2026-06-13T20:00:00+02:00"),
                calendar: berlin) == 3_600)
        // The limit is not reached by 17:30 with the free time left out; without it, at 16:30.
        var progress = ActivityProgress()
        let told = progress.advance(day, now: at("2026-06-10T17:30:00+02:00"), calendar: berlin, ledger: ledger)
        #expect(!told.contains { $0.callback == .eventDidReachThreshold })
    }

    @Test func aMonthlyScheduleRunsFromTheFirstToTheFirstAcrossFebruaryAndAChangeOfTheClock() throws {
        let month = DeviceActivitySchedule.everyMonth(warningTime: DateComponents(minute: 5))
        try month.validate()
        #expect(throws: ScreenTimeCoreError.self) {
            try DeviceActivitySchedule(
                intervalStart: DateComponents(day: 1, hour: 0), intervalEnd: DateComponents(day: 1, hour: 0),
                repeats: true
            ).validate()
        }
        let february = try #require(month.nextInterval(at: at("2027-02-14T12:00:00+01:00"), calendar: berlin))
        #expect(february.start == at("2027-02-01T00:00:00+01:00") && february.end == at("2027-03-01T00:00:00+01:00"))
        // March 2027 has 31 days and the spring change: an hour shorter than 31 days.
        let march = try #require(month.interval(startingAfter: february.start, calendar: berlin))
        #expect(march.end == at("2027-04-01T00:00:00+02:00"))
        #expect(march.duration == 31 * 86_400 - 3_600)
        // Kept as it was written: a restart reads a month.
        let decoded = try JSONDecoder().decode(DeviceActivitySchedule.self, from: JSONEncoder().encode(month))
        #expect(decoded == month && decoded.monthly)
    }
}
