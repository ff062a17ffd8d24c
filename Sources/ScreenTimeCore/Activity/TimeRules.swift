public import FoundationEssentials

/// A day's allowance that may differ by day of the week, as a guardian writes it: `1h` (every
/// day), `mon-fri=1h,sat,sun=3h`, `weekdays=45m,weekend=2h`, `sun=0` (nothing but what is
/// granted). A day not named has no limit.
public struct DailyAllowance: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Seconds by Gregorian weekday (1 = Sunday … 7 = Saturday); 0 is an allowance of nothing.
    public private(set) var seconds: [Int: TimeInterval]

    public init(seconds: [Int: TimeInterval]) {
        self.seconds = seconds
    }

    /// The same allowance every day.
    public static func everyDay(_ seconds: TimeInterval) -> DailyAllowance {
        DailyAllowance(seconds: Dictionary(uniqueKeysWithValues: (1...7).map { ($0, seconds) }))
    }

    /// Parses what a guardian wrote; throws naming the part not understood. Each day is given at
    /// most once; a day's time is from 0 to less than a whole day.
    public static func parse(_ text: String) throws(ScreenTimeCoreError) -> DailyAllowance {
        let parts = text.lowercased().split(separator: ",").map { $0.trimmingSpaces() }
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else {
            throw ScreenTimeCoreError(.invalidDuration, "'\(text.prefix(60))' has an empty part")
        }
        // A plain duration: every day.
        if parts.count == 1, !parts[0].contains("="), (try? Weekday.parse(parts[0])) == nil {
            return .everyDay(try allowance(parts[0]))
        }
        var seconds: [Int: TimeInterval] = [:]
        var waiting = Set<Int>()
        for part in parts {
            let sides = part.split(separator: "=", omittingEmptySubsequences: false)
            guard sides.count <= 2 else {
                throw ScreenTimeCoreError(.invalidDuration, "'\(part.prefix(40))' has more than one '='")
            }
            waiting.formUnion(try Weekday.parse(sides[0].trimmingSpaces()))
            guard sides.count == 2 else { continue }
            let time = try allowance(sides[1].trimmingSpaces())
            for day in waiting.sorted() {
                guard seconds[day] == nil else {
                    throw ScreenTimeCoreError(
                        .invalidWeekday, "\(Weekday.names[day - 1]) is given twice in '\(text.prefix(60))'")
                }
                seconds[day] = time
            }
            waiting = []
        }
        guard waiting.isEmpty else {
            throw ScreenTimeCoreError(
                .invalidDuration,
                "\(Weekday.format(waiting)) has no time (write it as \(Weekday.format(waiting))=2h)")
        }
        return DailyAllowance(seconds: seconds)
    }

    /// A day's time: a duration under a day, or `0` / `none` for nothing.
    static func allowance(_ text: String) throws(ScreenTimeCoreError) -> TimeInterval {
        if ["0", "0m", "0h", "0s", "none"].contains(text) { return 0 }
        let seconds = try DurationText.parse(text)
        guard seconds < 86_400 else {
            throw ScreenTimeCoreError(
                .invalidDuration, "'\(text.prefix(40))' is a whole day or more; a day's time is less")
        }
        return seconds
    }

    /// Days with the same allowance together, in week order from Monday.
    public var groups: [(days: Set<Int>, seconds: TimeInterval)] {
        var byTime: [(days: Set<Int>, seconds: TimeInterval)] = []
        for day in [2, 3, 4, 5, 6, 7, 1] {
            guard let time = seconds[day] else { continue }
            if let index = byTime.firstIndex(where: { $0.seconds == time }) {
                byTime[index].days.insert(day)
            } else {
                byTime.append(([day], time))
            }
        }
        return byTime
    }

    /// Whether every day has the same allowance.
    public var isEveryDay: Bool { seconds.count == 7 && Set(seconds.values).count == 1 }

    /// `1h` or `mon-fri=1h,sat,sun=3h` (what `parse` reads back).
    public var description: String {
        if isEveryDay, let time = seconds.values.first { return Self.text(time) }
        return groups.map { "\(Weekday.format($0.days))=\(Self.text($0.seconds))" }.joined(separator: ",")
    }

    static func text(_ seconds: TimeInterval) -> String { seconds == 0 ? "0" : DurationText.format(seconds) }
}

/// How long a guardian grants more time, or locks a child's sessions, for.
public enum GrantLength: Hashable, Sendable, Codable {
    /// A number of minutes from now (or from the end of a grant running already).
    case minutes(Int)
    /// Until local midnight.
    case restOfDay
    /// Until the next time the clock shows this time of day.
    case until(hour: Int, minute: Int)

    /// `15m`, `1h`, `rest-of-day`, `until 20:30` (or just `20:30`).
    public static func parse(_ text: String) throws(ScreenTimeCoreError) -> GrantLength {
        let trimmed = text.trimmingSpaces().lowercased()
        if ["rest-of-day", "rest of day", "rest-of-today", "today"].contains(trimmed) { return .restOfDay }
        let time = trimmed.hasPrefix("until ") ? String(trimmed.dropFirst(6)) : trimmed
        if time.contains(":") {
            let fields = time.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2,
                fields.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy { ("0"..."9").contains($0) } }),
                let hour = Int(fields[0]), let minute = Int(fields[1]), (0...23).contains(hour),
                (0...59).contains(minute)
            else {
                throw ScreenTimeCoreError(
                    .invalidDuration, "'\(text.prefix(20))' is not a time of day (write it as HH:MM, 00:00 to 23:59)")
            }
            return .until(hour: hour, minute: minute)
        }
        let seconds = try DurationText.parse(trimmed)
        guard seconds >= 60, seconds <= 720 * 60 else {
            throw ScreenTimeCoreError(.invalidDuration, "grant from 1 minute to 12 hours, not '\(text.prefix(20))'")
        }
        return .minutes(Int((seconds / 60).rounded(.up)))
    }

    /// When a grant of this length, made at `now`, ends. It adds to whichever is later of `now`
    /// plus what the child still has (`remaining`) and the end of the grant already running on the
    /// same thing (`current`): granting 15 minutes to a child with 10 left, or with a grant that
    /// ends in 10, gives 25. The rest of the day and a time of day end then, or at the current
    /// grant's end if that is later: a grant never shortens one. Midnight and times of day are on
    /// the wall clock in `calendar`'s time zone (a day of 23 or 25 hours ends at its midnight).
    public func end(at now: Date, remaining: TimeInterval = 0, current: Date? = nil, calendar: ZonedCalendar) -> Date {
        let base = max(now.addingTimeInterval(max(0, remaining)), current ?? now)
        let end: Date
        switch self {
        case .minutes(let minutes):
            return base.addingTimeInterval(TimeInterval(minutes) * 60)
        case .restOfDay:
            end = Self.nextMidnight(after: now, calendar: calendar)
        case .until(let hour, let minute):
            end =
                calendar.nextDate(after: now, matching: DateComponents(hour: hour, minute: minute, second: 0))
                ?? now.addingTimeInterval(86_400)
        }
        return max(end, current ?? end)
    }

    /// The first midnight after `date` in `calendar`'s time zone.
    public static func nextMidnight(after date: Date, calendar: ZonedCalendar) -> Date {
        let today = calendar.startOfDay(for: date)
        return calendar.date(byAdding: .day, value: 1, to: today) ?? date.addingTimeInterval(86_400)
    }

    /// `15 minutes`, `the rest of the day`, `until 20:30`.
    public var description: String {
        switch self {
        case .minutes(let minutes): minutes == 1 ? "1 minute" : "\(minutes) minutes"
        case .restOfDay: "the rest of the day"
        case .until(let hour, let minute): "until " + twoDigits(hour) + ":" + twoDigits(minute)
        }
    }
}
