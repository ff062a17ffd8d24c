public import FoundationEssentials
import Glibc

/// The wall clock of a zone (`ZoneInfo`): the day and time it shows at an instant, the instants of
/// its days, and dates written in English as the programs print them, with no ICU (what the
/// command line and the shield window did with `Calendar.current` and `DateFormatter`).
public struct WallClock: Sendable {
    public let zone: ZoneInfo

    public init(zone: ZoneInfo) { self.zone = zone }

    /// The machine's (`ZoneInfo.current()`).
    public static func current() -> WallClock { WallClock(zone: .current()) }

    /// What the clock shows at an instant.
    public struct Reading: Sendable, Equatable {
        public let year: Int
        public let month: Int
        public let day: Int
        public let hour: Int
        public let minute: Int
        public let second: Int
        /// 1 for Sunday to 7 for Saturday, as `Calendar`'s `.weekday`.
        public let weekday: Int
    }

    public func reading(_ date: Date) -> Reading {
        let wall = zone.wallClock(at: Int64(date.timeIntervalSince1970.rounded(.down)))
        let days = CivilDate.floorDivide(wall, 86_400)
        let seconds = Int(wall - days * 86_400)
        let civil = CivilDate.date(days: days)
        return Reading(
            year: Int(civil.year), month: Int(civil.month), day: Int(civil.day), hour: seconds / 3_600,
            minute: seconds / 60 % 60, second: seconds % 60, weekday: CivilDate.weekday(days: days) + 1)
    }

    /// The first instant of a day (month 1–12, day 1–31, past the month's end counted on), at or
    /// after its wall-clock midnight: a day that starts in a gap (a zone that moves its clock at
    /// midnight) starts when the clock resumes.
    public func start(year: Int, month: Int, day: Int) -> Date {
        let wall = CivilDate.days(year: Int64(year), month: Int64(month), day: 1) * 86_400 + Int64(day - 1) * 86_400
        return Date(timeIntervalSince1970: TimeInterval(firstInstant(atOrAfterWallClock: wall)))
    }

    /// The start of the day `date` falls in, `adding` days on (23 or 25 hours across a change).
    public func startOfDay(_ date: Date, adding days: Int = 0) -> Date {
        let now = reading(date)
        return start(year: now.year, month: now.month, day: now.day + days)
    }

    /// A date written YYYY-MM-DD that is a real day: its start; nil for "2026-02-30".
    public func day(written text: some StringProtocol) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), day >= 1, Int64(day) <= CivilDate.daysIn(month: Int64(month), year: Int64(year))
        else { return nil }
        return start(year: year, month: month, day: day)
    }

    public func isSameDay(_ first: Date, _ second: Date) -> Bool {
        let one = reading(first)
        let other = reading(second)
        return (one.year, one.month, one.day) == (other.year, other.month, other.day)
    }

    func firstInstant(atOrAfterWallClock wall: Int64) -> Int64 {
        if let first = zone.instants(atWallClock: wall).first { return first }
        // In a gap: the instant the clock jumps, the first it shows past `wall`.
        let before = wall - Int64(zone.offset(at: wall - 86_400))
        var low = before - 86_400
        var high = before + 86_400
        while high - low > 1 {
            let middle = (low + high) / 2
            if zone.wallClock(at: middle) < wall { low = middle } else { high = middle }
        }
        return high
    }

    static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let months = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ]

    /// `date` written by a pattern of `DateFormatter`'s fields, in English: `yyyy`, `MMMM` (November),
    /// `MMM` (Nov), `MM`, `dd`, `d`, `EEEE` (Sunday), `EEE` (Sun), `HH`, `mm`, `ss`; anything else
    /// as it is.
    public func format(_ date: Date, _ pattern: String) -> String {
        let now = reading(date)
        let fields: [(String, () -> String)] = [
            ("yyyy", { String(now.year) }),
            ("MMMM", { Self.months[now.month - 1] }),
            ("MMM", { String(Self.months[now.month - 1].prefix(3)) }),
            ("MM", { twoDigits(now.month) }),
            ("dd", { twoDigits(now.day) }),
            ("d", { String(now.day) }),
            ("EEEE", { Self.weekdays[now.weekday - 1] }),
            ("EEE", { String(Self.weekdays[now.weekday - 1].prefix(3)) }),
            ("HH", { twoDigits(now.hour) }),
            ("mm", { twoDigits(now.minute) }),
            ("ss", { twoDigits(now.second) }),
        ]
        var out = ""
        var rest = Substring(pattern)
        next: while !rest.isEmpty {
            for (field, value) in fields where rest.hasPrefix(field) {
                out += value()
                rest = rest.dropFirst(field.count)
                continue next
            }
            out.append(rest.removeFirst())
        }
        return out
    }
}

/// Words for an error a person reads, after the name of the file it concerns: an error of a file
/// (FoundationEssentials' `CocoaError`, with no `localizedDescription` there) as the system's words
/// for its cause ("No such file or directory").
public func readableError(_ error: any Error) -> String {
    if let error = error as? CocoaError, let cause = error.userInfo["NSUnderlyingError"] as? POSIXError {
        return String(cString: strerror(cause.code.rawValue))
    }
    return "\(error)"
}
