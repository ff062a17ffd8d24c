public import FoundationEssentials
import ScreenTimeCore

/// Durations as people read them: `1 h 05 min`, `8 min 02 s`, `12 s`.
public func readable(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded())
    let (hours, minutes, rest) = (whole / 3600, whole % 3600 / 60, whole % 60)
    if hours > 0 { return "\(hours) h \(twoDigits(minutes)) min" }
    if minutes > 0 { return "\(minutes) min \(twoDigits(rest)) s" }
    return "\(rest) s"
}

/// Durations in the little room over a chart's bar: `44s`, `12m`, `1h05`.
public func compact(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded())
    if whole < 60 { return "\(whole)s" }
    let minutes = Int((seconds / 60).rounded())
    if minutes < 60 { return "\(minutes)m" }
    return "\(minutes / 60)h\(twoDigits(minutes % 60))"
}
