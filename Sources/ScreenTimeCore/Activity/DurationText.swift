public import FoundationEssentials

/// Durations as a person writes them — `90s`, `1m`, `45m`, `1h30m`, `2h`, `1d` — for limits,
/// thresholds and warning times, and back again for display.
public enum DurationText {
    /// The longest duration accepted: a week, Apple's longest interval.
    public static var maximum: TimeInterval { 7 * 86_400 }

    /// Parses `[Nd][Nh][Nm][Ns]` (each part at most once, in that order, at least one; spaces
    /// between parts allowed; a bare number means minutes). Throws saying what was wrong.
    public static func parse(_ text: String) throws(ScreenTimeCoreError) -> TimeInterval {
        let trimmed = text.trimmingSpaces().lowercased()
        func invalid(_ why: String) -> ScreenTimeCoreError {
            ScreenTimeCoreError(
                .invalidDuration, "'\(text.prefix(40))' is not a duration (\(why); write it as 90s, 45m, 1h30m or 1d)")
        }
        guard !trimmed.isEmpty else { throw invalid("it is empty") }
        if trimmed.allSatisfy(\.isASCIIDigit) {
            guard trimmed.count <= 6, let minutes = Int(trimmed) else { throw invalid("the number is too large") }
            return try checked(TimeInterval(minutes) * 60, text)
        }
        let units: [(Character, TimeInterval)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]
        var total: TimeInterval = 0
        var digits = ""
        var nextUnit = 0
        var parts = 0
        for character in trimmed {
            if character.isASCIIDigit {
                digits.append(character)
                guard digits.count <= 6 else { throw invalid("a number is too large") }
            } else if character == " " {
                guard digits.isEmpty else { throw invalid("a number has no unit before the space") }
            } else if let index = units.firstIndex(where: { $0.0 == character }) {
                guard !digits.isEmpty, let value = Int(digits) else { throw invalid("'\(character)' has no number") }
                guard index >= nextUnit else { throw invalid("units go from days to seconds, each once") }
                total += TimeInterval(value) * units[index].1
                nextUnit = index + 1
                digits = ""
                parts += 1
            } else {
                throw invalid("'\(character)' is not a unit (d, h, m, s)")
            }
        }
        guard digits.isEmpty else { throw invalid("the last number has no unit") }
        guard parts > 0 else { throw invalid("it has no number") }
        return try checked(total, text)
    }

    private static func checked(_ seconds: TimeInterval, _ text: String) throws(ScreenTimeCoreError) -> TimeInterval {
        guard seconds > 0 else {
            throw ScreenTimeCoreError(.invalidDuration, "'\(text.prefix(40))' is no time at all; give more than 0")
        }
        guard seconds <= maximum else {
            throw ScreenTimeCoreError(.invalidDuration, "'\(text.prefix(40))' is longer than a week")
        }
        return seconds
    }

    /// `1h30m`, `45m`, `90s` → `1m30s`; whole seconds (a fraction is dropped).
    public static func format(_ seconds: TimeInterval) -> String {
        var rest = Int(max(0, seconds))
        guard rest > 0 else { return "0s" }
        var text = ""
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] where rest >= size {
            text += "\(rest / size)\(unit)"
            rest %= size
        }
        return text
    }

    /// The duration as schedule components (`DateComponents(hour: 1, minute: 30)`), as Apple's
    /// thresholds and warning times are given.
    public static func components(_ seconds: TimeInterval) -> DateComponents {
        var rest = Int(max(0, seconds))
        let days = rest / 86_400
        rest %= 86_400
        let hours = rest / 3_600
        rest %= 3_600
        return DateComponents(
            day: days > 0 ? days : nil, hour: hours > 0 ? hours : nil, minute: rest >= 60 ? rest / 60 : nil,
            second: rest % 60 > 0 ? rest % 60 : nil)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
