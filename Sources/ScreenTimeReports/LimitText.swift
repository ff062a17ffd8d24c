public import ScreenTimeIPC

/// A limit's standing in one line: `Games, today: 40 min 00 s of 1 h 00 min, 20 min 00 s left`.
public enum LimitText {
    public static func line(_ limit: UsageReport.LimitStanding) -> String {
        let when = limit.period == "day" ? "today" : "this \(limit.period)"
        var line = "\(limit.name), \(when): "
        if let seconds = limit.limitSeconds {
            line += seconds == 0 ? "nothing allowed" : "\(readable(limit.usedSeconds ?? 0)) of \(readable(seconds))"
            if limit.reached {
                line += ", used up"
            } else if let left = limit.leftSeconds, seconds > 0 {
                line += ", \(readable(left)) left"
            }
        } else {
            line += "no limit today"
        }
        if let allowance = limit.allowance { line += " (\(allowance))" }
        return line
    }
}
