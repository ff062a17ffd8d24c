/// A POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`), as a TZif file's footer gives what holds
/// after its last transition (RFC 8536, 3.3, with its extensions: hours from -167 to 167 in the
/// rule's times, and a year that is all daylight time).
struct PosixTimeZone: Sendable, Equatable {
    let standard: ZoneInfo.LocalTimeType
    /// Daylight time and when it starts and ends, if the zone has it.
    let daylight: Daylight?

    struct Daylight: Sendable, Equatable {
        let type: ZoneInfo.LocalTimeType
        /// When it starts, in local standard time, and ends, in local daylight time.
        let start: Change
        let end: Change
    }

    /// A day of the year and a time of that day (seconds, which may be negative or past 24 h).
    struct Change: Sendable, Equatable {
        enum Day: Sendable, Equatable {
            /// `Jn`: 1 to 365, February 29 never counted.
            case julianNoLeap(Int)
            /// `n`: 0 to 365, February 29 counted.
            case zeroBased(Int)
            /// `Mm.w.d`: month 1–12, week 1–5 (5: the last), weekday 0–6 (Sunday 0).
            case monthWeekDay(month: Int, week: Int, weekday: Int)
        }
        let day: Day
        let time: Int64

        /// Seconds since 1970, read as UTC, of this change's day in `year` at midnight.
        func dayStart(in year: Int64) -> Int64 {
            let days: Int64
            switch day {
            case .julianNoLeap(let number):
                // March 1 and after are one later in a leap year.
                let leap = CivilDate.isLeap(year) && number >= 60 ? 1 : 0
                days = CivilDate.days(year: year, month: 1, day: 1) + Int64(number - 1 + leap)
            case .zeroBased(let number):
                days = CivilDate.days(year: year, month: 1, day: 1) + Int64(number)
            case .monthWeekDay(let month, let week, let weekday):
                let first = CivilDate.days(year: year, month: Int64(month), day: 1)
                var day = first + Int64((weekday - CivilDate.weekday(days: first) + 7) % 7) + Int64(week - 1) * 7
                let length = CivilDate.daysIn(month: Int64(month), year: year)
                while day >= first + length { day -= 7 }
                days = day
            }
            return days * 86_400
        }
    }

    init(standard: ZoneInfo.LocalTimeType, daylight: Daylight? = nil) {
        self.standard = standard
        self.daylight = daylight
    }

    init(parsing text: String) throws {
        var scanner = RuleScanner(Array(text.utf8))
        let standardName = try scanner.name()
        // POSIX offsets are west of UTC: "CET-1" is one hour east.
        let standardOffset = -(try scanner.time(hourLimit: 24))
        standard = .init(offset: Int32(standardOffset), isDaylightSaving: false, abbreviation: standardName)
        guard !scanner.atEnd else {
            daylight = nil
            return
        }
        let daylightName = try scanner.name()
        var daylightOffset = standardOffset + 3_600
        if let next = scanner.peek, next != UInt8(ascii: ",") {
            daylightOffset = -(try scanner.time(hourLimit: 24))
        }
        let start: Change
        let end: Change
        if scanner.atEnd {
            // No rule given: the United States' since 2007, as glibc and tzcode take it.
            start = Change(day: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7_200)
            end = Change(day: .monthWeekDay(month: 11, week: 1, weekday: 0), time: 7_200)
        } else {
            try scanner.expect(UInt8(ascii: ","))
            start = try scanner.change()
            try scanner.expect(UInt8(ascii: ","))
            end = try scanner.change()
        }
        guard scanner.atEnd else { throw ZoneInfoError("a TZ rule with more after its end: \(text.debugDescription)") }
        daylight = Daylight(
            type: .init(offset: Int32(daylightOffset), isDaylightSaving: true, abbreviation: daylightName),
            start: start, end: end)
    }

    func localTimeType(at instant: Int64) -> ZoneInfo.LocalTimeType {
        guard let daylight else { return standard }
        // The year by standard time; the changes of the years around it decide.
        let year = CivilDate.year(days: CivilDate.floorDivide(instant + Int64(standard.offset), 86_400))
        var inDaylight = false
        var latest = Int64.min
        for candidate in [year - 1, year, year + 1] {
            let starts = daylight.start.dayStart(in: candidate) + daylight.start.time - Int64(standard.offset)
            let ends = daylight.end.dayStart(in: candidate) + daylight.end.time - Int64(daylight.type.offset)
            for (at, daylightFrom) in [(starts, true), (ends, false)] where at <= instant && at >= latest {
                // At the same instant an end and a start (a year all daylight time): daylight.
                if at == latest && !daylightFrom { continue }
                latest = at
                inDaylight = daylightFrom
            }
        }
        return inDaylight ? daylight.type : standard
    }
}

/// Reads the parts of a POSIX TZ rule.
private struct RuleScanner {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { position == bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[position] }
    var text: String { String(decoding: bytes, as: UTF8.self).debugDescription }

    mutating func expect(_ byte: UInt8) throws {
        guard peek == byte else {
            throw ZoneInfoError("expected \"\(Character(Unicode.Scalar(byte)))\" in TZ rule \(text)")
        }
        position += 1
    }

    /// An abbreviation: three or more letters, or `<...>` of letters, digits, `+` and `-`.
    mutating func name() throws -> String {
        let start = position
        if peek == UInt8(ascii: "<") {
            position += 1
            let inner = position
            while let byte = peek, byte != UInt8(ascii: ">") {
                guard byte.isASCIILetterOrDigit || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") else {
                    throw ZoneInfoError("a quoted abbreviation with \(byte) in TZ rule \(text)")
                }
                position += 1
            }
            try expect(UInt8(ascii: ">"))
            guard position - 1 - inner >= 3 else {
                throw ZoneInfoError("an abbreviation shorter than 3 in TZ rule \(text)")
            }
            return String(decoding: bytes[inner..<position - 1], as: UTF8.self)
        }
        while let byte = peek, byte.isASCIILetter { position += 1 }
        guard position - start >= 3 else { throw ZoneInfoError("no abbreviation of 3 letters in TZ rule \(text)") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    mutating func number(limit: Int) throws -> Int {
        let start = position
        var value = 0
        while let byte = peek, byte.isASCIIDigit {
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            guard value <= limit else { throw ZoneInfoError("a number over \(limit) in TZ rule \(text)") }
            position += 1
        }
        guard position > start else { throw ZoneInfoError("expected a number in TZ rule \(text)") }
        return value
    }

    /// `[+-]hh[:mm[:ss]]`, in seconds.
    mutating func time(hourLimit: Int) throws -> Int64 {
        var sign: Int64 = 1
        if let byte = peek, byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") {
            sign = byte == UInt8(ascii: "-") ? -1 : 1
            position += 1
        }
        var seconds = Int64(try number(limit: hourLimit)) * 3_600
        for unit: Int64 in [60, 1] {
            guard peek == UInt8(ascii: ":") else { break }
            position += 1
            seconds += Int64(try number(limit: 59)) * unit
        }
        return sign * seconds
    }

    /// `Jn`, `n` or `Mm.w.d`, then `/time` (02:00 when none).
    mutating func change() throws -> PosixTimeZone.Change {
        let day: PosixTimeZone.Change.Day
        if peek == UInt8(ascii: "J") {
            position += 1
            let number = try number(limit: 365)
            guard number >= 1 else { throw ZoneInfoError("J0 in TZ rule \(text)") }
            day = .julianNoLeap(number)
        } else if peek == UInt8(ascii: "M") {
            position += 1
            let month = try number(limit: 12)
            try expect(UInt8(ascii: "."))
            let week = try number(limit: 5)
            try expect(UInt8(ascii: "."))
            let weekday = try number(limit: 6)
            guard month >= 1, week >= 1 else { throw ZoneInfoError("month or week 0 in TZ rule \(text)") }
            day = .monthWeekDay(month: month, week: week, weekday: weekday)
        } else {
            day = .zeroBased(try number(limit: 365))
        }
        var time: Int64 = 7_200
        if peek == UInt8(ascii: "/") {
            position += 1
            time = try self.time(hourLimit: 167)
        }
        return PosixTimeZone.Change(day: day, time: time)
    }
}

extension UInt8 {
    fileprivate var isASCIIDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
    fileprivate var isASCIILetter: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
    fileprivate var isASCIILetterOrDigit: Bool { isASCIIDigit || isASCIILetter }
}

/// Days since 1970-01-01 and the proleptic Gregorian calendar's dates (after Howard Hinnant's
/// `days_from_civil` and `civil_from_days`).
public enum CivilDate {
    public static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    public static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `value / divisor` rounded toward minus infinity (`divisor` > 0).
    package static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    /// Days since 1970-01-01 of a date (month 1–12, day 1–31).
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shifted = month <= 2 ? year - 1 : year
        let era = floorDivide(shifted, 400)
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day since 1970-01-01.
    public static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func year(days: Int64) -> Int64 { date(days: days).year }

    /// 0 for Sunday to 6 for Saturday (1970-01-01 was a Thursday).
    public static func weekday(days: Int64) -> Int {
        Int((days % 7 + 7 + 4) % 7)
    }
}
