import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeCore
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
        let clock = WallClock.current()
        let startOfToday = clock.startOfDay(Date())
        var start = startOfToday
        var end = clock.startOfDay(startOfToday, adding: 1)
        var segments = ReportRequest.Segments.hourly
        if week {
            start = clock.startOfDay(startOfToday, adding: -6)
            segments = .daily
        } else if let from, let to {
            start = try Self.day(from, option: "--from")
            let last = try Self.day(to, option: "--to")
            end = clock.startOfDay(last, adding: 1)
            if clock.startOfDay(start, adding: 1) != end { segments = .daily }
        }
        // The agent takes a zone by its name: TZ set to a rule or a file elsewhere is the
        // machine's zone there.
        let zone = clock.zone.isNamed ? clock.zone.identifier : ZoneInfo.current(environment: [:]).identifier
        let reply = try perform(
            connection,
            ReportRequest(user: user, from: start, to: end, segments: segments, timeZone: zone))
        if let html {
            // The page shows the last day of the stretch by hour and the week that ends with it.
            let lastDay = clock.startOfDay(end, adding: -1)
            let day =
                segments == .hourly
                ? reply
                : try perform(
                    connection,
                    ReportRequest(user: user, from: lastDay, to: end, segments: .hourly, timeZone: zone))
            let weekStart = clock.startOfDay(lastDay, adding: -6)
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
                Terminal.error("screentime: cannot write \(html): \(readableError(error))")
                // sysexits' EX_CANTCREAT: the report was read, the file could not be made.
                throw ExitCode(73)
            }
            if !output.json { print("wrote \(html)") }
        }
        if output.json { return try printJSON(reply) }
        if html == nil { print(ReportText(reply).render(), terminator: "") }
    }

    static func day(_ text: String, option: String) throws -> Date {
        guard let date = WallClock.current().day(written: text) else {
            throw ValidationError("\(option) is a day written YYYY-MM-DD, not '\(text.prefix(40))'")
        }
        return date
    }
}

/// `screentime report` as text.
struct ReportText {
    let report: UsageReport

    init(_ report: UsageReport) { self.report = report }

    func render() -> String {
        var out = ""
        let clock = WallClock.current()
        let days = { (date: Date) in clock.format(date, "EEE d MMM yyyy") }
        let last = report.to.addingTimeInterval(-1)
        let stretch =
            clock.isSameDay(report.from, last) ? days(report.from) : "\(days(report.from)) to \(days(last))"
        out += "Usage of \(report.user.name), \(stretch): \(readable(report.totalSeconds)) in front\n"
        if !report.names { out += "(names are hidden from you: tokens are shown)\n" }
        out += "\nApplications\n"
        if report.applications.isEmpty { out += "  none\n" }
        let width = min(36, report.applications.map { label($0).count }.max() ?? 0)
        for app in report.applications {
            let name = padded(label(app), to: width)
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
            let time = { (date: Date) in clock.format(date, "HH:mm") }
            for domain in report.webDomains.prefix(30) {
                out +=
                    "  \(domain.domain ?? domain.token)  \(domain.lookups) lookups, "
                    + "first \(time(domain.firstLookup)), last \(time(domain.lastLookup))\n"
            }
            if report.webDomains.count > 30 { out += "  … and \(report.webDomains.count - 30) more (--json)\n" }
        }
        if let limits = report.limits, !limits.isEmpty {
            out += "\nLimits now\n"
            for limit in limits { out += "  \(LimitText.line(limit))\n" }
        }
        out += report.segmentation == .hourly ? "\nBy hour\n" : "\nBy day\n"
        let pattern = report.segmentation == .hourly ? "HH:mm" : "EEE d MMM"
        let longest = report.segments.map(\.seconds).max() ?? 0
        for segment in report.segments where segment.seconds > 0 || report.segmentation == .daily {
            let bar = longest > 0 ? String(repeating: "█", count: Int((segment.seconds / longest * 30).rounded())) : ""
            out += "  \(clock.format(segment.start, pattern))  \(bar) \(readable(segment.seconds))\n"
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
