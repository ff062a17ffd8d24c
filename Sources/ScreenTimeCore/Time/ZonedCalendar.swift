public import FoundationEssentials

/// The Gregorian calendar in a zone read by `ZoneInfo`, with no ICU: what the schedules ask of
/// Foundation's `Calendar` (the next date matching components, a date's fields, the start of its
/// day, a day later, the hour, day or week it falls in), with the same answers. It works on the
/// wall clock: a Gregorian calendar in UTC over the dates the zone's clock shows, and `ZoneInfo`
/// between those and instants. A time the clock skips (spring forward) is the first instant after
/// the gap (Foundation's `.nextTime`); a time it shows twice (fall back) is its first (`.first`).
public struct ZonedCalendar: Sendable {
    public let zone: ZoneInfo
    /// The Gregorian calendar in UTC, weeks from Sunday, applied to wall-clock dates.
    var wall: Calendar

    /// The day weeks start on: 1 for Sunday (the default, as `Calendar(identifier: .gregorian)`'s),
    /// 2 for Monday.
    public var firstWeekday: Int {
        get { wall.firstWeekday }
        set { wall.firstWeekday = newValue }
    }

    public init(zone: ZoneInfo) {
        self.zone = zone
        var wall = Calendar(identifier: .gregorian)
        wall.timeZone = TimeZone(secondsFromGMT: 0) ?? wall.timeZone
        wall.firstWeekday = 1
        self.wall = wall
    }

    /// The machine's zone.
    public static func current() -> ZonedCalendar { ZonedCalendar(zone: .current()) }

    /// The date whose UTC reading is what the zone's clock shows at `date`.
    func wallDate(_ date: Date) -> Date {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        return Date(timeIntervalSince1970: TimeInterval(zone.wallClock(at: Int64(whole))) + (seconds - whole))
    }

    /// The first instant whose clock shows `wall` (a UTC reading), or in a gap the first after it.
    func instant(_ wall: Date) -> Date {
        let seconds = wall.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        let first = WallClock(zone: zone).firstInstant(atOrAfterWallClock: Int64(whole))
        return Date(timeIntervalSince1970: TimeInterval(first) + (seconds - whole))
    }

    /// The instants whose clock shows `wall`, earliest first (none in a gap).
    func instants(_ wall: Date) -> [Date] {
        let seconds = wall.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        return zone.instants(atWallClock: Int64(whole)).map {
            Date(timeIntervalSince1970: TimeInterval($0) + (seconds - whole))
        }
    }

    /// The first date after `date` whose clock matches `components` (Foundation's `nextDate` with
    /// `.nextTime`, `.first`, forward): a time the clock shows twice is its first showing, or its
    /// second where the first is past; a time the clock skips is the first instant after the gap
    /// (ICU, with a weekday among the components, answers that only when asked a few days before,
    /// and the next week's when asked a week before).
    public func nextDate(after date: Date, matching components: DateComponents) -> Date? {
        // From a little before (a time shown twice is behind the clock's reading during its
        // second showing); matches not after `date` are passed over.
        var cursor = wallDate(date).addingTimeInterval(-3 * 3_600 - 1)
        for _ in 0..<16 {
            guard
                let found = wall.nextDate(
                    after: cursor, matching: components, matchingPolicy: .nextTime, repeatedTimePolicy: .first,
                    direction: .forward)
            else { return nil }
            let candidates = instants(found)
            if candidates.isEmpty {
                // Skipped by the clock.
                let after = instant(found)
                if after > date { return after }
            } else if let first = candidates.first(where: { $0 > date }) {
                return first
            }
            cursor = found
        }
        return nil
    }

    public func component(_ component: Calendar.Component, from date: Date) -> Int {
        wall.component(component, from: wallDate(date))
    }

    public func dateComponents(_ components: Set<Calendar.Component>, from date: Date) -> DateComponents {
        wall.dateComponents(components, from: wallDate(date))
    }

    public func startOfDay(for date: Date) -> Date {
        instant(wall.startOfDay(for: wallDate(date)))
    }

    public func isDate(_ date: Date, inSameDayAs other: Date) -> Bool {
        wall.isDate(wallDate(date), inSameDayAs: wallDate(other))
    }

    /// `value` days (or weeks) from `date`, at the same time of day on the clock.
    public func date(byAdding component: Calendar.Component, value: Int, to date: Date) -> Date? {
        guard component == .day || component == .weekOfYear else {
            return wall.date(byAdding: component, value: value, to: date)
        }
        return wall.date(byAdding: component, value: value, to: wallDate(date)).map(instant)
    }

    /// The hour, day or week (from Sunday) that `date` falls in: an hour is 60 minutes from its
    /// start; a day and a week run from their first midnight to the next (23 or 25 hours across a
    /// change).
    public func dateInterval(of component: Calendar.Component, for date: Date) -> DateInterval? {
        let shown = wallDate(date)
        switch component {
        case .hour:
            // Back to the hour's start at the offset in force at `date` (as ICU sets the fields
            // below the hour): across Lord Howe's half-hour changes, the hour that holds `date`.
            let intoHour = shown.timeIntervalSince1970 - (shown.timeIntervalSince1970 / 3_600).rounded(.down) * 3_600
            return DateInterval(start: date.addingTimeInterval(-intoHour), duration: 3_600)
        case .day, .weekOfYear:
            guard let unit = wall.dateInterval(of: component, for: shown) else { return nil }
            return DateInterval(start: instant(unit.start), end: instant(unit.end))
        default:
            return nil
        }
    }
}
