public import FoundationEssentials

/// One activity a client monitors: its schedule, its events, and when monitoring began (for
/// events that do not include past activity, and for a schedule that does not repeat).
public struct MonitoredActivity: Hashable, Sendable, Codable {
    public var name: DeviceActivityName
    public var schedule: DeviceActivitySchedule
    public var events: [DeviceActivityEvent.Name: DeviceActivityEvent]
    public var monitoringStart: Date
    /// The weekdays (1 = Sunday … 7 = Saturday, as Gregorian `weekday`) on which an interval may
    /// start; nil: every day. Not Apple's (there, one schedule per weekday); the CLI's `--days`.
    public var weekdays: Set<Int>?
    /// Not Apple's: several warnings before an interval starts and before an event's threshold
    /// (the agent's own limits, downtime and screen time: 30, 10, 5 and 1 minutes by default),
    /// each given once, the latest whose moment has come when several have; nil: the schedule's
    /// one `warningTime`.
    public var warnings: [TimeInterval]?

    /// Not Apple's: hours whose use does not count toward this activity's events (a guardian's
    /// free periods: homework time), taken away from what the ledger counts.
    public var freePeriods: [FreePeriod]?

    /// The warnings' lead times, longest first; empty: none.
    public var warningMarks: [TimeInterval] {
        guard let warnings else {
            let one = schedule.warningDuration
            return one > 0 ? [one] : []
        }
        return Set(warnings.filter { $0 > 0 }).sorted(by: >)
    }

    public init(
        name: DeviceActivityName, schedule: DeviceActivitySchedule,
        events: [DeviceActivityEvent.Name: DeviceActivityEvent], monitoringStart: Date, weekdays: Set<Int>? = nil
    ) {
        self.name = name
        self.schedule = schedule
        self.events = events
        self.monitoringStart = monitoringStart
        self.weekdays = weekdays
    }

    /// The interval in force or next at `now`; for a schedule that does not repeat, only the first
    /// interval from the start of monitoring, and nil once it has ended. Intervals starting on a
    /// weekday not in `weekdays` are passed over.
    public func currentOrNextInterval(at now: Date, calendar: ZonedCalendar) -> DateInterval? {
        if schedule.repeats { return firstAllowed(from: schedule.nextInterval(at: now, calendar: calendar), calendar) }
        guard
            let first = firstAllowed(
                from: schedule.nextInterval(at: monitoringStart, calendar: calendar), calendar),
            first.end > now
        else {
            return nil
        }
        return first
    }

    /// The first interval that starts after `date` (and may, by `weekdays`); for a schedule that
    /// does not repeat, only its one interval.
    public func interval(startingAfter date: Date, calendar: ZonedCalendar) -> DateInterval? {
        if !schedule.repeats {
            guard let only = currentOrNextInterval(at: monitoringStart, calendar: calendar), only.start > date else {
                return nil
            }
            return only
        }
        return firstAllowed(from: schedule.interval(startingAfter: date, calendar: calendar), calendar)
    }

    private func firstAllowed(from interval: DateInterval?, _ calendar: ZonedCalendar) -> DateInterval? {
        guard let weekdays, !weekdays.isEmpty else { return interval }
        var candidate = interval
        // Each try moves to the next interval; a week holds at least one start on each weekday
        // for a daily schedule, and a weekly one starts on one weekday only.
        for _ in 0..<16 {
            guard let found = candidate else { return nil }
            if weekdays.contains(calendar.component(.weekday, from: found.start)) { return found }
            candidate = schedule.interval(startingAfter: found.start, calendar: calendar)
        }
        return nil
    }

    private enum CodingKeys: String, CodingKey {
        case name, schedule, events, monitoringStart, weekdays, warnings, freePeriods
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(DeviceActivityName.self, forKey: .name)
        schedule = try container.decode(DeviceActivitySchedule.self, forKey: .schedule)
        events = try container.decode([DeviceActivityEvent.Name: DeviceActivityEvent].self, forKey: .events)
        monitoringStart = try container.decode(Date.self, forKey: .monitoringStart)
        weekdays = try container.decodeIfPresent(Set<Int>.self, forKey: .weekdays)
        warnings = try container.decodeIfPresent([TimeInterval].self, forKey: .warnings)
        freePeriods = try container.decodeIfPresent([FreePeriod].self, forKey: .freePeriods)
    }
}

/// Days of the week as people write them: `mon`, `tue`, … or `monday`; numbered as Gregorian
/// `weekday` (1 = Sunday).
public enum Weekday {
    public static let names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// `mon,tue,fri`, `weekdays` (Monday to Friday), `weekend`, `every day`; throws naming the word
    /// not understood.
    public static func parse(_ text: String) throws(ScreenTimeCoreError) -> Set<Int> {
        var days = Set<Int>()
        for word in text.lowercased().split(whereSeparator: { $0 == "," || $0 == " " }) {
            if word.contains("-") {
                days.formUnion(try range(String(word)))
                continue
            }
            switch word {
            case "weekdays": days.formUnion(2...6)
            case "weekend", "weekends": days.formUnion([1, 7])
            case "daily", "everyday", "all": days.formUnion(1...7)
            default:
                guard word.count >= 3, let index = names.firstIndex(where: { word.hasPrefix($0) }),
                    Self.fullNames[index].hasPrefix(word)
                else {
                    throw ScreenTimeCoreError(
                        .invalidWeekday,
                        "'\(word.prefix(20))' is not a day (write mon, tue, wed, thu, fri, sat, sun, weekdays or weekend)"
                    )
                }
                days.insert(index + 1)
            }
        }
        guard !days.isEmpty else { throw ScreenTimeCoreError(.invalidWeekday, "no day given") }
        return days
    }

    private static let fullNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    /// `mon-fri`, or `fri-mon` round the weekend: the days from the first to the last, in week order.
    static func range(_ text: String) throws(ScreenTimeCoreError) -> Set<Int> {
        let ends = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard ends.count == 2, !ends[0].contains("-") else {
            throw ScreenTimeCoreError(.invalidWeekday, "'\(text.prefix(20))' is not a range of days (write mon-fri)")
        }
        let from = try parse(ends[0])
        let to = try parse(ends[1])
        guard from.count == 1, to.count == 1, let first = from.first, let last = to.first else {
            throw ScreenTimeCoreError(.invalidWeekday, "'\(text.prefix(20))' is not a range of days (write mon-fri)")
        }
        var days: Set<Int> = [first]
        var day = first
        while day != last {
            day = day % 7 + 1
            days.insert(day)
        }
        return days
    }

    /// `mon,tue,wed` in week order from Monday.
    public static func format(_ days: Set<Int>) -> String {
        [2, 3, 4, 5, 6, 7, 1].filter(days.contains).map { names[$0 - 1] }.joined(separator: ",")
    }
}

/// The activities one client monitors (what `DeviceActivityCenter` keeps), with Apple's limit of
/// 20 per client.
public struct MonitoredActivities: Hashable, Sendable, Codable {
    /// Apple's limit on the activities one client monitors at once.
    public static var maximumActivities: Int { 20 }

    public private(set) var activities: [DeviceActivityName: MonitoredActivity] = [:]

    public init() {}

    /// Starts (or restarts, replacing) monitoring an activity. Checks the schedule, each event and
    /// the limit of 20 activities; nothing changes on error.
    public mutating func startMonitoring(
        _ name: DeviceActivityName, during schedule: DeviceActivitySchedule,
        events: [DeviceActivityEvent.Name: DeviceActivityEvent] = [:], weekdays: Set<Int>? = nil, at now: Date
    ) throws(ScreenTimeCoreError) {
        try schedule.validate()
        for (eventName, event) in events.sorted(by: { $0.key < $1.key }) {
            do {
                try event.validate()
            } catch {
                throw ScreenTimeCoreError(error.code, "event '\(eventName)': \(error.message)")
            }
        }
        if activities[name] == nil, activities.count >= Self.maximumActivities {
            throw ScreenTimeCoreError(
                .excessiveActivities,
                "this client already monitors \(activities.count) activities; at most \(Self.maximumActivities) (stop one first)"
            )
        }
        if let weekdays, weekdays.isEmpty || !weekdays.isSubset(of: 1...7) {
            throw ScreenTimeCoreError(
                .invalidWeekday, "weekdays are numbered 1 (Sunday) to 7, and at least one is given")
        }
        activities[name] = MonitoredActivity(
            name: name, schedule: schedule, events: events, monitoringStart: now, weekdays: weekdays)
    }

    /// Stops monitoring the named activities, or all of them; returns what was stopped.
    @discardableResult
    public mutating func stopMonitoring(_ names: [DeviceActivityName]? = nil) -> [MonitoredActivity] {
        let stopping = names ?? Array(activities.keys)
        return stopping.sorted().compactMap { activities.removeValue(forKey: $0) }
    }
}

/// Hours in which use is not counted toward limits (a guardian's `free` periods): a repeating
/// schedule, on some weekdays or every day.
public struct FreePeriod: Hashable, Sendable, Codable {
    public var schedule: DeviceActivitySchedule
    public var weekdays: Set<Int>?

    public init(schedule: DeviceActivitySchedule, weekdays: Set<Int>? = nil) {
        self.schedule = schedule
        self.weekdays = weekdays
    }

    /// The period's intervals that overlap `window`, clipped to it.
    public func intervals(overlapping window: DateInterval, calendar: ZonedCalendar) -> [DateInterval] {
        let activity = MonitoredActivity(
            name: DeviceActivityName(rawValue: "free"), schedule: schedule, events: [:], monitoringStart: .distantPast,
            weekdays: weekdays)
        var found: [DateInterval] = []
        var next = activity.currentOrNextInterval(at: window.start, calendar: calendar)
        // A week's window holds at most eight of a daily period's; the bound keeps a bad schedule finite.
        for _ in 0..<64 {
            guard let interval = next, interval.start < window.end else { break }
            if let clipped = interval.intersection(with: window), clipped.duration > 0 { found.append(clipped) }
            next = activity.interval(startingAfter: interval.start, calendar: calendar)
        }
        return found
    }

    /// The union of several periods' intervals in `window`, sorted, none overlapping.
    public static func union(
        _ periods: [FreePeriod], in window: DateInterval, calendar: ZonedCalendar
    ) -> [DateInterval] {
        let all = periods.flatMap { $0.intervals(overlapping: window, calendar: calendar) }.sorted {
            $0.start < $1.start
        }
        var merged: [DateInterval] = []
        for interval in all {
            if let last = merged.last, interval.start <= last.end {
                merged[merged.count - 1] = DateInterval(start: last.start, end: max(last.end, interval.end))
            } else {
                merged.append(interval)
            }
        }
        return merged
    }
}
