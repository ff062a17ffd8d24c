// Worklog's report extension: the week, by day, as text (it runs with names and no network).
import DeviceActivity
import Foundation

DeviceActivityReportExtension.main { results in
    func duration(_ seconds: Double) -> String {
        let minutes = Int(seconds / 60)
        return minutes >= 60 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
    }
    let formatter = DateFormatter()
    formatter.dateFormat = "EEE d MMM"
    formatter.locale = Locale(identifier: "en_GB")
    formatter.timeZone = TimeZone(identifier: results.timeZone)
    var out = "Worklog, week of \(formatter.string(from: results.from)): \(duration(results.totalSeconds)) in front\n"
    for segment in results.segments where segment.seconds > 0 {
        out += "  \(formatter.string(from: segment.start))  \(duration(segment.seconds))\n"
    }
    out += "Most used:\n"
    for application in results.applications.prefix(5) {
        out += "  \(application.name ?? application.token.prefix(8) + "…")  \(duration(application.seconds))\n"
    }
    for domain in results.webDomains.prefix(5) where (domain.seconds ?? 0) > 0 {
        out += "  \(domain.domain ?? "a site")  \(duration(domain.seconds ?? 0))\n"
    }
    return out
}
