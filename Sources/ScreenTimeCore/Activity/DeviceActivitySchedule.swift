public import FoundationEssentials

/// When an activity is monitored (Apple's `DeviceActivitySchedule`).
///
/// An interval starts at the next moment matching `intervalStart` and ends at the first moment
/// after that matching `intervalEnd`: `{hour: 21}` to `{hour: 7}` is 21:00 to 07:00 the next
/// morning; `{weekday: 2, hour: 8}` to `{weekday: 6, hour: 17}` is Monday 08:00 to Friday 17:00;
/// equal start and end make one whole day (or week, with a weekday). On a day when the clock
/// skips the start time (spring forward) the interval starts at the first moment after the gap;
/// on a day when it repeats (fall back), at the first of the two.
public struct DeviceActivitySchedule: Hashable, Sendable, Codable {
    /// Apple's shortest interval: 15 minutes.
    public static var minimumInterval: TimeInterval { 15 * 60 }
    /// Apple's longest interval: one week.
    public static var maximumInterval: TimeInterval { 7 * 86_400 }

    public var intervalStart: DateComponents
    public var intervalEnd: DateComponents
    /// Whether the schedule recurs; if not, monitoring ends with the first interval.
    public var repeats: Bool
    /// How long before an interval starts or ends, and before an event reaches its threshold, the
    /// warning callbacks come.
    public var warningTime: DateComponents?
    /// Not Apple's: intervals may last a month (the agent's own monthly limits); Apple's longest
    /// is a week.
    public private(set) var monthly = false

    /// The 1st of each month at 00:00 to the next 1st, warned `warningTime` before: the agent's
    /// monthly limits' schedule.
    public static func everyMonth(warningTime: DateComponents? = nil) -> DeviceActivitySchedule {
        var schedule = DeviceActivitySchedule(
            intervalStart: DateComponents(day: 1, hour: 0, minute: 0),
            intervalEnd: DateComponents(day: 1, hour: 0, minute: 0), repeats: true, warningTime: warningTime)
        schedule.monthly = true
        return schedule
    }

    public init(
        intervalStart: DateComponents, intervalEnd: DateComponents, repeats: Bool, warningTime: DateComponents? = nil
    ) {
        // The user's calendar and time zone apply, not ones carried in the components; other
        // fields are kept so that `validate()` can refuse them.
        self.intervalStart = intervalStart.withoutCalendarAndTimeZone
        self.intervalEnd = intervalEnd.withoutCalendarAndTimeZone
        self.repeats = repeats
        self.warningTime = warningTime
    }

    /// Checks the components and the interval's length, with Apple's `MonitoringError` codes:
    /// `invalidDateComponents`, `intervalTooShort` (under 15 minutes), `intervalTooLong` (over a week).
    /// Lengths are measured in UTC, so a schedule is valid or not whatever the time zone.
    public func validate() throws(ScreenTimeCoreError) {
        _ = try nominalLength()
    }

    /// The warning time as a duration; zero when none is set.
    public var warningDuration: TimeInterval {
        warningTime?.durationValue ?? 0
    }

    /// The current interval if one is ongoing at `now`, else the next one (Apple's `nextInterval`);
    /// nil if the components match no date from here on.
    public func nextInterval(at now: Date, calendar: ZonedCalendar) -> DateInterval? {
        guard let length = try? nominalLength() else { return nil }
        // An interval that contains `now` started at most one interval length (plus a DST shift
        // of at most a few hours) ago.
        var cursor = now.addingTimeInterval(-(length + 4 * 3_600))
        var ongoing: DateInterval?
        while let occurrence = occurrence(after: cursor, calendar: calendar) {
            if occurrence.start > now { return ongoing ?? occurrence }
            if occurrence.end > now { ongoing = occurrence }
            cursor = occurrence.start
        }
        return ongoing
    }

    /// The first interval that starts after `date`.
    public func interval(startingAfter date: Date, calendar: ZonedCalendar) -> DateInterval? {
        guard (try? validate()) != nil else { return nil }
        return occurrence(after: date, calendar: calendar)
    }

    /// The length of the interval in UTC from a fixed reference (Monday 2001-01-01), checked
    /// against Apple's limits.
    func nominalLength() throws(ScreenTimeCoreError) -> TimeInterval {
        try intervalStart.validateAsSchedulePoint("intervalStart")
        try intervalEnd.validateAsSchedulePoint("intervalEnd")
        if let warningTime {
            guard let warning = warningTime.durationValue, warning <= Self.maximumInterval else {
                throw ScreenTimeCoreError(
                    .invalidDateComponents,
                    "warningTime must be a duration of days, hours, minutes and seconds up to a week"
                )
            }
        }
        let utc = ZonedCalendar(zone: .utc)
        let reference = Date(timeIntervalSinceReferenceDate: -1)
        guard let interval = occurrence(after: reference, calendar: utc) else {
            throw ScreenTimeCoreError(
                .invalidDateComponents,
                "intervalStart and intervalEnd match no date together (\(Self.describe(intervalStart)) to \(Self.describe(intervalEnd)))"
            )
        }
        let length = interval.duration
        if length < Self.minimumInterval {
            throw ScreenTimeCoreError(
                .intervalTooShort,
                "the interval lasts \(Self.minutes(length)); it must last at least 15 minutes"
            )
        }
        if length > (monthly ? 31 * 86_400 : Self.maximumInterval) {
            throw ScreenTimeCoreError(
                .intervalTooLong,
                "the interval lasts \(Self.minutes(length)); it may last at most one week"
            )
        }
        return length
    }

    private func occurrence(after date: Date, calendar: ZonedCalendar) -> DateInterval? {
        guard let start = Self.nextMatch(of: intervalStart, after: date, calendar: calendar),
            let end = Self.nextMatch(of: intervalEnd, after: start, calendar: calendar),
            end > start
        else { return nil }
        return DateInterval(start: start, end: end)
    }

    /// The next moment after `date` matching the components. A time of day that the clock skips
    /// (spring forward) matches the first moment after the gap (`.nextTime`); but a day that does
    /// not exist (February 30, February 29 of a common year) is no match at all, where
    /// Foundation's `.nextTime` would roll it over to March 1 — so the day fields are checked and
    /// the search goes on.
    private static func nextMatch(of components: DateComponents, after date: Date, calendar: ZonedCalendar) -> Date? {
        let dayFields: [Calendar.Component] = [.year, .month, .day, .weekday]
        var cursor = date
        // A calendar date recurs at least every 8 years (February 29); a few tries are plenty.
        for _ in 0..<12 {
            guard
                let candidate = calendar.nextDate(after: cursor, matching: components),
                candidate > cursor
            else { return nil }
            let found = calendar.dateComponents(Set(dayFields), from: candidate)
            if dayFields.allSatisfy({
                components.value(for: $0) == nil || components.value(for: $0) == found.value(for: $0)
            }) {
                return candidate
            }
            cursor = candidate
        }
        return nil
    }

    private static func minutes(_ seconds: TimeInterval) -> String {
        let minutes = Int(seconds / 60)
        return minutes >= 120 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
    }

    private static func describe(_ components: DateComponents) -> String {
        ScheduleField.allCases.compactMap { field in
            components.value(for: field.component).map { "\(field.rawValue) \($0)" }
        }.joined(separator: ", ")
    }

    private enum CodingKeys: String, CodingKey { case intervalStart, intervalEnd, repeats, warningTime, monthly }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        intervalStart = try container.decode(CodableComponents.self, forKey: .intervalStart).components
        intervalEnd = try container.decode(CodableComponents.self, forKey: .intervalEnd).components
        repeats = try container.decode(Bool.self, forKey: .repeats)
        warningTime = try container.decodeIfPresent(CodableComponents.self, forKey: .warningTime)?.components
        monthly = try container.decodeIfPresent(Bool.self, forKey: .monthly) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(CodableComponents(intervalStart), forKey: .intervalStart)
        try container.encode(CodableComponents(intervalEnd), forKey: .intervalEnd)
        try container.encode(repeats, forKey: .repeats)
        try container.encodeIfPresent(warningTime.map(CodableComponents.init), forKey: .warningTime)
        if monthly { try container.encode(true, forKey: .monthly) }
    }
}
