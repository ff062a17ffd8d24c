import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

struct MonitorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Watch intervals and usage thresholds for a user, and run an extension at each (DeviceActivity).",
        subcommands: [MonitorStart.self, MonitorStop.self, MonitorList.self])
}

/// A time of day as people write it: `21:00`, `7:30`, `7`.
func timeOfDay(_ text: String, _ option: String) throws -> DateComponents {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...2).contains(parts.count), let hour = Int(parts[0]), (0...23).contains(hour),
        parts.count == 1 || (parts[1].count == 2 && Int(parts[1]).map { (0...59).contains($0) } == true)
    else {
        throw ValidationError("\(option) takes a time of day as HH:MM (00:00 to 23:59), not '\(text)'")
    }
    return DateComponents(hour: hour, minute: parts.count == 2 ? Int(parts[1]) ?? 0 : 0)
}

func duration(_ text: String, _ option: String) throws -> Double {
    do {
        return try DurationText.parse(text)
    } catch {
        throw ValidationError("\(option): \(error.message)")
    }
}

func weekdays(_ text: String?) throws -> [Int]? {
    guard let text else { return nil }
    do {
        return try Weekday.parse(text).sorted()
    } catch {
        throw ValidationError("--days: \(error.message)")
    }
}

struct MonitorStart: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Start (or replace) monitoring an activity.",
        discussion: """
            Events follow the schedule's options, each as a group: --event NAME --threshold DURATION, \
            then what it counts (--app ID, --app-category C, --domain D, --web-category C, any number), \
            and --include-past to count use from before monitoring started. For example:

              screentime monitor start school --user alice --from 08:00 --to 15:00 --days weekdays \\
                --repeats --warning 5m --event games --threshold 30m --app-category Game \\
                --extension /usr/local/lib/guardian/monitor

            The extension (a root-owned program no one else may change) gets each callback as JSON on \
            its standard input, runs as the extension account without network, and may change this \
            user's stores of this client with 'screentime shield --store S …'.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The activity's name.") var name: String
    @Option(help: "The user (name or uid; inside an extension, its user).") var user: String?
    @Option(help: "The client the monitor belongs to (default: screentime).") var client: String?
    @Option(help: "When each interval starts, HH:MM.") var from: String
    @Option(help: "When it ends, HH:MM (the next day if earlier than --from).") var to: String
    @Option(help: "The days an interval may start on: mon,tue,… or weekdays, weekend (default: every day).")
    var days: String?
    @Flag(help: "Repeat every day (else only the next interval is watched).") var repeats = false
    @Option(help: "Warn this long before each interval starts and ends, and before each threshold (5m).")
    var warning: String?
    @Option(help: "The extension program to run at each callback (an absolute path).")
    var `extension`: String?
    @Argument(parsing: .allUnrecognized, help: .hidden) var eventOptions: [String] = []

    func validate() throws {
        _ = try events()
    }

    /// The event groups, in the order given.
    func events() throws -> [MonitorEventRequest] {
        var events: [MonitorEventRequest] = []
        var current: (name: String, threshold: Double?, items: ActivityItems, past: Bool)?
        func close() throws {
            guard let group = current else { return }
            guard let threshold = group.threshold else {
                throw ValidationError("--event \(group.name) needs --threshold DURATION")
            }
            guard !group.items.isEmpty else {
                throw ValidationError(
                    "--event \(group.name) counts nothing: give --app, --app-category, --domain or --web-category")
            }
            events.append(
                MonitorEventRequest(
                    name: group.name, items: group.items, thresholdSeconds: threshold, includesPastActivity: group.past)
            )
        }
        var index = 0
        while index < eventOptions.count {
            let option = eventOptions[index]
            if option == "--include-past" {
                guard current != nil else { throw ValidationError("--include-past belongs after an --event NAME") }
                current?.past = true
                index += 1
                continue
            }
            guard index + 1 < eventOptions.count else { throw ValidationError("\(option) needs a value") }
            let value = eventOptions[index + 1]
            index += 2
            switch option {
            case "--event":
                try close()
                current = (value, nil, ActivityItems(), false)
            case "--threshold", "--app", "--app-category", "--domain", "--web-category":
                guard current != nil else { throw ValidationError("\(option) belongs after an --event NAME") }
                switch option {
                case "--threshold": current?.threshold = try duration(value, "--threshold")
                case "--app": current?.items.applications.append(value)
                case "--app-category": current?.items.applicationCategories.append(value)
                case "--domain": current?.items.webDomains.append(value)
                default: current?.items.webCategories.append(value)
                }
            default:
                throw ValidationError("unknown option '\(option)'")
            }
        }
        try close()
        return events
    }

    func run() throws {
        let schedule = DeviceActivitySchedule(
            intervalStart: try timeOfDay(from, "--from"), intervalEnd: try timeOfDay(to, "--to"), repeats: repeats,
            warningTime: try warning.map { DurationText.components(try duration($0, "--warning")) })
        let request = MonitorStartRequest(
            user: user, client: client, name: name, schedule: schedule, weekdays: try weekdays(days),
            events: try events(), extension: `extension`)
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print("monitoring \(reply.monitor.client)/\(reply.monitor.name) for \(reply.user.name)")
        print(MonitorText.render(reply.monitor, timeZone: .current()), terminator: "")
    }
}

struct MonitorStop: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop", abstract: "Stop monitoring activities (all of the client's when none is named).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The activities' names.") var names: [String] = []
    @Option(help: "The user (name or uid; inside an extension, its user).") var user: String?
    @Option(help: "The client the monitors belong to (default: screentime).") var client: String?

    func run() throws {
        let reply = try perform(connection, MonitorStopRequest(user: user, client: client, names: names))
        if output.json { return try printJSON(reply) }
        print(MonitorText.render(reply), terminator: "")
    }
}

struct MonitorList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List a user's monitors, their next interval and events.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (default: you).") var user: String?
    @Option(help: "Only this client's.") var client: String?

    func run() throws {
        let reply = try perform(connection, MonitorListRequest(user: user, client: client))
        if output.json { return try printJSON(reply) }
        print(MonitorText.render(reply), terminator: "")
    }
}

struct Downtime: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Downtime: every app but the allowed ones is shielded during these hours.",
        discussion: """
            screentime downtime --user alice --from 21:00 --to 07:00 --allow org.gnome.Calculator
            screentime downtime --user alice --off
            screentime downtime --user alice --name weekend --from 23:00 --to 08:00 --days fri,sat
            With --name, a child has several downtimes, each with its own hours and days \
            (--off --name NAME removes one). With --no-login, the child's sessions are locked during downtime (a warning comes 5 \
            minutes before) and logins are refused with a message saying until when. A guardian's \
            'screentime grant --user alice --screen-time --minutes 30' lifts it for that long.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (name or uid).") var user: String
    @Option(help: "When it starts, HH:MM.") var from: String?
    @Option(help: "When it ends, HH:MM (the next day if earlier).") var to: String?
    @Option(help: "The days it starts on: mon,tue,… or sun-thu, weekdays, weekend (default: every day).")
    var days: String?
    @Option(help: "A name, for several downtimes (school-nights, weekend).") var name: String?
    @Option(name: .customLong("allow"), help: "An app still allowed (desktop-entry ID); repeat for more.")
    var allowed: [String] = []
    @Flag(help: "End downtime.") var off = false
    @Flag(name: .customLong("no-login"), help: "Lock the sessions and refuse logins during downtime.")
    var noLogin = false

    func validate() throws {
        if off {
            guard from == nil, to == nil, allowed.isEmpty, !noLogin else {
                throw ValidationError("--off takes nothing else")
            }
        } else {
            guard from != nil, to != nil else { throw ValidationError("give the hours: --from HH:MM --to HH:MM") }
        }
    }

    func run() throws {
        var request = DowntimeRequest(
            user: user, from: try from.map { try timeOfDay($0, "--from") },
            to: try to.map { try timeOfDay($0, "--to") },
            weekdays: try weekdays(days), allow: allowed, off: off, noLogin: noLogin)
        request.name = name
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print(MonitorText.render(reply), terminator: "")
    }
}

/// Monitors as text.
enum MonitorText {
    static func render(_ reply: MonitorListReply) -> String {
        let zone = (try? ZoneInfo(identifier: reply.timeZone)) ?? .current()
        guard !reply.monitors.isEmpty else { return "\(reply.user.name) has no monitors\n" }
        var out = "Monitors of \(reply.user.name) (times in \(reply.timeZone))\n"
        for monitor in reply.monitors { out += render(monitor, timeZone: zone) }
        return out
    }

    static func render(_ monitor: MonitorReport, timeZone: ZoneInfo) -> String {
        let clock = WallClock(zone: timeZone)
        func when(_ date: Date) -> String { clock.format(date, "EEE d MMM HH:mm") }
        func time(_ components: DateComponents) -> String {
            "\(twoDigits(components.hour ?? 0)):\(twoDigits(components.minute ?? 0))"
        }
        var out = "  \(monitor.client)/\(monitor.name)"
        if let builtIn = monitor.builtIn { out += "  [\(builtIn)]" }
        func day(_ components: DateComponents) -> String {
            if let weekday = components.weekday, (1...7).contains(weekday) {
                return Weekday.names[weekday - 1].capitalized + " "
            }
            return components.day.map { "day \($0) " } ?? ""
        }
        let start = monitor.schedule.intervalStart
        let end = monitor.schedule.intervalEnd
        out += "\n    \(day(start))\(time(start))–\(day(end))\(time(end))"
        if monitor.schedule.monthly {
            out += " every month"
        } else if start.weekday != nil, monitor.schedule.repeats, monitor.weekdays == nil {
            out += " every week"
        } else if monitor.schedule.repeats {
            out += monitor.weekdays.map { " on \(Weekday.format(Set($0)))" } ?? " every day"
        } else {
            out += monitor.weekdays.map { " once, the next \(Weekday.format(Set($0)))" } ?? " once"
        }
        if let warnings = monitor.warnings {
            if !warnings.isEmpty {
                out += ", warnings \(warnings.map { DurationText.format($0) }.joined(separator: ", "))"
            }
        } else if let warning = monitor.schedule.warningTime, let seconds = warning.durationSeconds, seconds > 0 {
            out += ", warning \(DurationText.format(seconds))"
        }
        if let interval = monitor.currentInterval {
            out +=
                monitor.inInterval
                ? "; now, until \(when(interval.end))"
                : "; next \(when(interval.start))–\(when(interval.end))"
        } else {
            out += "; over"
        }
        out += "\n"
        for event in monitor.events {
            let what =
                event.itemNames?.joined(separator: ", ")
                ?? "\(event.applications.count + event.categories.count + event.webDomains.count) items"
            if let allowance = event.allowance {
                let today =
                    event.noThresholdToday == true
                    ? "none today"
                    : event.thresholdSeconds == 0 ? "0 today" : "\(DurationText.format(event.thresholdSeconds)) today"
                out += "    event \(event.name): \(allowance) (\(today)) of \(what)"
            } else {
                out += "    event \(event.name): \(DurationText.format(event.thresholdSeconds)) of \(what)"
            }
            if let used = event.usedSeconds {
                out += " (\(DurationText.format(used)) used"
                if event.noThresholdToday != true, !event.reached {
                    out += ", \(DurationText.format(max(0, event.thresholdSeconds - used))) left"
                }
                out += ")"
            }
            if event.reached { out += " — reached" }
            out += "\n"
        }
        if let program = monitor.extension { out += "    extension \(program)\n" }
        if let run = monitor.lastRun {
            out +=
                "    last: \(run.callback)\(run.event.map { " \($0)" } ?? "") at \(when(run.at)): \(run.outcome)"
            if let problem = run.problem { out += " — \(problem)" }
            out += "\n"
        }
        return out
    }
}

extension DateComponents {
    fileprivate var durationSeconds: Double? {
        let parts = [(day, 86_400.0), (hour, 3_600.0), (minute, 60.0), (second, 1.0)]
        return parts.reduce(0) { $0 + Double($1.0 ?? 0) * $1.1 }
    }
}
