import ArgumentParser
import Foundation
import ScreenTimeIPC
import ScreenTimeReports

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What a user had in front: per app, category and web domain, by hour or by day.",
        discussion: """
            Time counts while an app's window is in front in a graphical session and someone uses \
            the keyboard or mouse (the agent's idleTimeout stops the clock). Web domains show how \
            often their names were looked up; the time a browser is in front is the browser's. \
            Days and hours are your time zone's.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (default: you).") var user: String?
    @Flag(help: "Today, by hour (the default).") var today = false
    @Flag(help: "The last seven days, today included, by day.") var week = false
    @Option(help: "The first day (YYYY-MM-DD), with --to.") var from: String?
    @Option(help: "The last day (YYYY-MM-DD), included.") var to: String?
    @Option(help: "Write a page with charts (the day by hour, the week by day, top apps) to this file.")
    var html: String?

    func validate() throws {
        let ways = [today, week, from != nil || to != nil].filter { $0 }.count
        guard ways <= 1 else { throw ValidationError("give one of --today, --week, or --from with --to") }
        guard (from == nil) == (to == nil) else { throw ValidationError("--from and --to go together") }
        if let from, let to {
            let first = try Self.day(from, option: "--from")
            let last = try Self.day(to, option: "--to")
            guard first <= last else { throw ValidationError("--to (\(to)) is before --from (\(from))") }
            guard last.timeIntervalSince(first) <= 365 * 86_400 else {
                throw ValidationError("a report covers at most a year")
            }
        }
    }

    func run() throws {
        let calendar = Calendar.current
        let startOfToday = calendar.startOfDay(for: Date())
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: startOfToday) ?? startOfToday
        var start = startOfToday
        var end = tomorrow
        var segments = ReportRequest.Segments.hourly
        if week {
            start = calendar.date(byAdding: .day, value: -6, to: startOfToday) ?? startOfToday
            segments = .daily
        } else if let from, let to {
            start = try Self.day(from, option: "--from")
            let last = try Self.day(to, option: "--to")
            end = calendar.date(byAdding: .day, value: 1, to: last) ?? last
            if calendar.date(byAdding: .day, value: 1, to: start) != end { segments = .daily }
        }
        let zone = TimeZone.current.identifier
        let reply = try perform(
            connection,
            ReportRequest(user: user, from: start, to: end, segments: segments, timeZone: zone))
        if let html {
            // The page shows the last day of the stretch by hour and the week that ends with it.
            let lastDay = calendar.date(byAdding: .day, value: -1, to: end) ?? start
            let day =
                segments == .hourly
                ? reply
                : try perform(
                    connection,
                    ReportRequest(user: user, from: lastDay, to: end, segments: .hourly, timeZone: zone))
            let weekStart = calendar.date(byAdding: .day, value: -6, to: lastDay) ?? lastDay
            let weekReport =
                week
                ? reply
                : try perform(
                    connection,
                    ReportRequest(user: user, from: weekStart, to: end, segments: .daily, timeZone: zone))
            let page = UsageReportPage(main: reply, day: day, week: weekReport).render()
            do {
                try page.write(toFile: html, atomically: true, encoding: .utf8)
            } catch {
                Terminal.error("screentime: cannot write \(html): \(error.localizedDescription)")
                // sysexits' EX_CANTCREAT: the report was read, the file could not be made.
                throw ExitCode(73)
            }
            if !output.json { print("wrote \(html)") }
        }
        if output.json { return try printJSON(reply) }
        if html == nil { print(ReportText(reply).render(), terminator: "") }
    }

    static func day(_ text: String, option: String) throws -> Date {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            let date = Calendar.current.date(from: DateComponents(year: year, month: month, day: day)),
            Calendar.current.component(.day, from: date) == day
        else { throw ValidationError("\(option) is a day written YYYY-MM-DD, not '\(text.prefix(40))'") }
        return date
    }
}

/// `screentime report` as text.
struct ReportText {
    let report: UsageReport

    init(_ report: UsageReport) { self.report = report }

    func render() -> String {
        var out = ""
        let days = DateFormatter()
        days.dateFormat = "EEE d MMM yyyy"
        let last = report.to.addingTimeInterval(-1)
        let stretch =
            Calendar.current.isDate(report.from, inSameDayAs: last)
            ? days.string(from: report.from) : "\(days.string(from: report.from)) to \(days.string(from: last))"
        out += "Usage of \(report.user.name), \(stretch): \(readable(report.totalSeconds)) in front\n"
        if !report.names { out += "(names are hidden from you: tokens are shown)\n" }
        out += "\nApplications\n"
        if report.applications.isEmpty { out += "  none\n" }
        let width = min(36, report.applications.map { label($0).count }.max() ?? 0)
        for app in report.applications {
            let name = label(app).padding(toLength: max(width, label(app).count), withPad: " ", startingAt: 0)
            let categories = app.categories.map { $0.isEmpty ? "" : "  [\($0.joined(separator: ", "))]" } ?? ""
            out += "  \(name)  \(readable(app.seconds))\(categories)\n"
        }
        if !report.categories.isEmpty {
            out += "\nCategories\n"
            for category in report.categories {
                out += "  \(category.name ?? category.token)  \(readable(category.seconds))\n"
            }
        }
        if let services = report.services, !services.isEmpty {
            out += "\nServices (their apps and their sites)\n"
            for service in services {
                out +=
                    "  \(service.name ?? service.token)  \(readable(service.seconds))"
                    + "  (apps \(readable(service.applicationSeconds)), sites \(readable(service.webSeconds)))\n"
            }
        }
        if !report.webDomains.isEmpty {
            out += "\nWeb domains looked up\n"
            let time = DateFormatter()
            time.dateFormat = "HH:mm"
            for domain in report.webDomains.prefix(30) {
                out +=
                    "  \(domain.domain ?? domain.token)  \(domain.lookups) lookups, "
                    + "first \(time.string(from: domain.firstLookup)), last \(time.string(from: domain.lastLookup))\n"
            }
            if report.webDomains.count > 30 { out += "  … and \(report.webDomains.count - 30) more (--json)\n" }
        }
        if let limits = report.limits, !limits.isEmpty {
            out += "\nLimits now\n"
            for limit in limits { out += "  \(LimitText.line(limit))\n" }
        }
        out += report.segmentation == .hourly ? "\nBy hour\n" : "\nBy day\n"
        let format = DateFormatter()
        format.dateFormat = report.segmentation == .hourly ? "HH:mm" : "EEE d MMM"
        let longest = report.segments.map(\.seconds).max() ?? 0
        for segment in report.segments where segment.seconds > 0 || report.segmentation == .daily {
            let bar = longest > 0 ? String(repeating: "█", count: Int((segment.seconds / longest * 30).rounded())) : ""
            out += "  \(format.string(from: segment.start))  \(bar) \(readable(segment.seconds))\n"
        }
        if report.segmentation == .hourly, report.segments.allSatisfy({ $0.seconds == 0 }) { out += "  nothing\n" }
        return out
    }

    private func label(_ app: UsageReport.Application) -> String {
        switch (app.name, app.id) {
        case (let name?, let id?): "\(name) (\(id))"
        case (let name?, nil): name
        default: app.token
        }
    }
}

/// One limit's standing in a line: `Game, today: 40 min 00 s of 1 h 00 min, 20 min 00 s left (mon-fri=1h,sat,sun=3h)`.
