import FoundationEssentials

/// The calendar fields a schedule, a threshold or a warning time may use, and their ranges.
/// Anything else (era, week of year, nanoseconds, …) makes the components invalid.
enum ScheduleField: String, CaseIterable, CodingKey {
    case year, month, day, weekday, hour, minute, second

    var range: ClosedRange<Int> {
        switch self {
        case .year: 1970...9999
        case .month: 1...12
        case .day: 1...31
        case .weekday: 1...7
        case .hour: 0...23
        case .minute, .second: 0...59
        }
    }

    var component: Calendar.Component {
        switch self {
        case .year: .year
        case .month: .month
        case .day: .day
        case .weekday: .weekday
        case .hour: .hour
        case .minute: .minute
        case .second: .second
        }
    }
}

extension DateComponents {
    /// Checks that only schedule fields are set, each within its range, and at least one is.
    /// `calendar` and `timeZone` are ignored: schedules follow the calendar of the user they run for.
    func validateAsSchedulePoint(_ role: String) throws(ScreenTimeCoreError) {
        let unsupported: [(String, Int?)] = [
            ("era", era), ("quarter", quarter), ("weekOfMonth", weekOfMonth), ("weekOfYear", weekOfYear),
            ("yearForWeekOfYear", yearForWeekOfYear), ("weekdayOrdinal", weekdayOrdinal),
            ("nanosecond", nanosecond),
        ]
        if let (field, _) = unsupported.first(where: { $0.1 != nil }) {
            throw ScreenTimeCoreError(
                .invalidDateComponents,
                "\(role) sets \(field); a schedule uses year, month, day, weekday, hour, minute and second only"
            )
        }
        var any = false
        for field in ScheduleField.allCases {
            guard let value = value(for: field.component) else { continue }
            any = true
            guard field.range.contains(value) else {
                throw ScreenTimeCoreError(
                    .invalidDateComponents,
                    "\(role) has \(field.rawValue) \(value); it must be within \(field.range.lowerBound)...\(field.range.upperBound)"
                )
            }
        }
        guard any else {
            throw ScreenTimeCoreError(.invalidDateComponents, "\(role) sets no field (give at least an hour)")
        }
    }

    /// The length these components stand for, as a duration (days, hours, minutes, seconds), for
    /// thresholds and warning times. Nil if another field is set or a value is negative.
    var durationValue: TimeInterval? {
        let unsupported = [
            era, year, month, weekday, quarter, weekOfMonth, weekOfYear, yearForWeekOfYear, weekdayOrdinal,
        ]
        guard unsupported.allSatisfy({ $0 == nil }) else { return nil }
        let parts = [(day, 86_400.0), (hour, 3_600.0), (minute, 60.0), (second, 1.0)]
        guard parts.allSatisfy({ ($0.0 ?? 0) >= 0 }), (nanosecond ?? 0) >= 0 else { return nil }
        return parts.reduce(0) { $0 + Double($1.0 ?? 0) * $1.1 } + Double(nanosecond ?? 0) / 1e9
    }

    /// The same components without a calendar or time zone.
    var withoutCalendarAndTimeZone: DateComponents {
        var copy = self
        copy.calendar = nil
        copy.timeZone = nil
        return copy
    }
}

/// `DateComponents` coded as a plain object of schedule fields (`{"hour":21,"minute":30}`), a
/// form that does not depend on Foundation's own coding of calendars and time zones.
struct CodableComponents: Codable, Hashable {
    var components: DateComponents

    init(_ components: DateComponents) { self.components = components }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ScheduleField.self)
        components = DateComponents()
        for field in ScheduleField.allCases {
            if let value = try container.decodeIfPresent(Int.self, forKey: field) {
                components.setValue(value, for: field.component)
            }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ScheduleField.self)
        for field in ScheduleField.allCases {
            if let value = components.value(for: field.component) { try container.encode(value, forKey: field) }
        }
    }
}
