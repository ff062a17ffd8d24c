import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

struct Limit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A time limit on apps, categories or domains, by day, week and month: shielded once used up.",
        discussion: """
            screentime limit --user alice --app-category Game --daily 1h
            screentime limit --user alice --app-category Game --daily mon-fri=1h,sat,sun=3h --weekly 8h
            screentime limit --user alice --app-category Game --remove
            screentime limit --user alice --screen-time mon-fri=2h,sat,sun=4h --no-login
            screentime limit --user alice --weekly-screen-time 12h --monthly-screen-time 40h
            screentime limit --user alice --screen-time off
            --daily is the day's time, one figure or by day of the week (mon-fri=1h,sat,sun=3h; a day \
            not named has no limit, a day at 0 has nothing but what a guardian grants); once used up \
            the items are shielded until midnight. --weekly is the week's, Monday to Sunday; once \
            used up they are shielded until Monday; --monthly the month's, until the 1st. Any of \
            them may be set together: whichever runs out first holds. The child is warned 30, 10, \
            5 and 1 minutes before ('screentime lockout --warn' chooses). --screen-time limits the \
            whole day's screen time (every app, site and text login) the same way, \
            --weekly-screen-time and --monthly-screen-time the week's and the month's; once used up \
            every app is shielded but those always allowed ('screentime allow'), and with \
            --no-login the child's sessions are locked and logins refused until then.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (name or uid).") var user: String
    @Option(name: .customLong("app"), help: "A desktop-entry ID or snap:NAME.") var applications: [String] = []
    @Option(name: .customLong("app-category"), help: "A freedesktop category (Game, …).")
    var applicationCategories: [String] = []
    @Option(name: .customLong("domain"), help: "A web domain.") var domains: [String] = []
    @Option(
        name: .customLong("service"),
        help: "A service of the catalogue (tiktok, youtube…): its apps and its sites counted together.")
    var services: [String] = []
    @Option(help: "The day's time: 45m, 1h30m, or by day: mon-fri=1h,sat,sun=3h.") var daily: String?
    @Option(help: "The week's time (Monday to Sunday): 10h.") var weekly: String?
    @Option(help: "The month's time (from the 1st): 40h.") var monthly: String?
    @Option(
        name: .customLong("screen-time"),
        help: ArgumentHelp(
            "The whole day's screen time: 2h, or by day: mon-fri=2h,sat,sun=4h; off removes it (and the week's).",
            valueName: "time"))
    var screenTime: String?
    @Option(
        name: .customLong("weekly-screen-time"),
        help: ArgumentHelp("The whole week's screen time: 12h; off removes it.", valueName: "duration"))
    var weeklyScreenTime: String?
    @Option(
        name: .customLong("monthly-screen-time"),
        help: ArgumentHelp("The whole month's screen time: 60h; off removes it.", valueName: "duration"))
    var monthlyScreenTime: String?
    @Flag(
        name: .customLong("no-login"),
        help: "With --screen-time: once used up, lock the sessions and refuse logins until the period ends.")
    var noLogin = false
    @Option(help: "The store the shield goes in (default: limits).") var store: String?
    @Flag(help: "Remove the limit on exactly these.") var remove = false

    private var isScreenTime: Bool { screenTime != nil || weeklyScreenTime != nil || monthlyScreenTime != nil }

    func validate() throws {
        if isScreenTime {
            guard applications.isEmpty, applicationCategories.isEmpty, domains.isEmpty, services.isEmpty, daily == nil,
                weekly == nil,
                monthly == nil, store == nil, !remove
            else {
                throw ValidationError(
                    "--screen-time is the whole day's time: no --app, --domain, --daily, --weekly, --store or --remove (--screen-time off removes it)"
                )
            }
            let given = [screenTime, weeklyScreenTime, monthlyScreenTime].compactMap { $0 }
            let offs = given.filter { $0 == "off" }
            guard offs.isEmpty || !noLogin else { throw ValidationError("off takes no --no-login") }
            guard offs.isEmpty || given.count == 1 else {
                throw ValidationError(
                    "give --screen-time off (all of them), --weekly-screen-time off or --monthly-screen-time off alone")
            }
            return
        }
        guard !noLogin else { throw ValidationError("--no-login goes with --screen-time") }
        guard !(applications.isEmpty && applicationCategories.isEmpty && domains.isEmpty && services.isEmpty) else {
            throw ValidationError(
                "give what the limit is on: --app, --app-category, --domain or --service, or --screen-time")
        }
        guard remove != (daily != nil || weekly != nil || monthly != nil) else {
            throw ValidationError(
                remove
                    ? "--remove takes no --daily, --weekly or --monthly"
                    : "give the day's time with --daily (45m, mon-fri=1h,sat,sun=3h), or --weekly, --monthly")
        }
    }

    func run() throws {
        let items = ActivityItems(
            applications: applications, applicationCategories: applicationCategories, webDomains: domains,
            services: services)
        var request: LimitRequest
        if isScreenTime {
            let none = ActivityItems(applications: [], applicationCategories: [], webDomains: [])
            if [screenTime, weeklyScreenTime, monthlyScreenTime].contains("off") {
                request = LimitRequest(user: user, items: none, dailySeconds: nil, remove: true, screenTime: true)
                // The week's or the month's alone: said by giving it (its figure is not read).
                if weeklyScreenTime == "off" { request.weeklySeconds = 0 }
                if monthlyScreenTime == "off" { request.monthlySeconds = 0 }
            } else {
                request = LimitRequest(
                    user: user, items: none, dailySeconds: nil, screenTime: true, noLogin: noLogin)
                request.daily = try screenTime.map { try allowance($0, "--screen-time") }
                request.weeklySeconds = try weeklyScreenTime.map { try duration($0, "--weekly-screen-time") }
                request.monthlySeconds = try monthlyScreenTime.map { try duration($0, "--monthly-screen-time") }
            }
        } else {
            request = LimitRequest(user: user, items: items, dailySeconds: nil, store: store, remove: remove)
            request.daily = try daily.map { try allowance($0, "--daily") }
            request.weeklySeconds = try weekly.map { try duration($0, "--weekly") }
            request.monthlySeconds = try monthly.map { try duration($0, "--monthly") }
        }
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print(MonitorText.render(reply), terminator: "")
    }
}

func allowance(_ text: String, _ option: String) throws -> DailyAllowance {
    do {
        return try DailyAllowance.parse(text)
    } catch {
        throw ValidationError("\(option): \(error.message)")
    }
}

struct Allow: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apps and web domains always allowed: usable under downtime and a used-up screen time.",
        discussion: """
            screentime allow --user alice --app org.gnome.Calculator --domain school.example.org
            screentime allow --user alice --remove --app org.gnome.Calculator
            screentime allow --user alice          (the list; a child may read its own)
            A limit on an app itself, and a block, still hold for it; a guardian's lock holds the \
            whole session. The child sees the list in the shield window of downtime and screen time.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (name or uid); default: yourself.") var user: String?
    @Option(name: .customLong("app"), help: "A desktop-entry ID or snap:NAME.") var applications: [String] = []
    @Option(name: .customLong("domain"), help: "A web domain.") var domains: [String] = []
    @Option(name: .customLong("service"), help: "A service of the catalogue: its apps and its sites.")
    var services: [String] = []
    @Flag(help: "Take these off the list.") var remove = false

    func validate() throws {
        guard !remove || !(applications.isEmpty && domains.isEmpty && services.isEmpty) else {
            throw ValidationError("--remove takes --app, --domain or --service")
        }
    }

    func run() throws {
        let reply = try perform(
            connection,
            AlwaysAllowedRequest(
                user: user, applications: applications, webDomains: domains, remove: remove, services: services))
        if output.json { return try printJSON(reply) }
        let apps = reply.applications.map(\.name)
        let sites = reply.webDomains.map(\.name)
        if apps.isEmpty && sites.isEmpty {
            print("nothing is always allowed for \(reply.user.name)")
            return
        }
        print("always allowed for \(reply.user.name):")
        if !apps.isEmpty { print("  apps: \(apps.joined(separator: ", "))") }
        if !sites.isEmpty { print("  web: \(sites.joined(separator: ", "))") }
    }
}

struct Free: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Free time: hours whose use counts toward no limit or screen time (homework time).",
        discussion: """
            screentime free --user alice --from 16:00 --to 18:00 --days weekdays --shield-category Game
            screentime free --user alice --name saturday --from 09:00 --to 11:00 --days sat
            screentime free --user alice --off                    (or --name saturday --off)
            While it lasts the child's use counts toward none of the agent's limits (a day's, a \
            week's, screen time's); the categories given are shielded meanwhile. Downtime and a \
            guardian's lock still hold. A child may have several, by --name.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (name or uid).") var user: String
    @Option(help: "A name, for more than one free period.") var name: String?
    @Option(help: "When it starts, HH:MM.") var from: String?
    @Option(help: "When it ends, HH:MM (the next day if earlier).") var to: String?
    @Option(help: "The days it starts on: mon,tue,… or weekdays, weekend (default: every day).") var days: String?
    @Option(name: .customLong("shield-category"), help: "A category shielded while it lasts (Game); repeat for more.")
    var shieldCategories: [String] = []
    @Flag(help: "Remove it.") var off = false

    func validate() throws {
        if off {
            guard from == nil, to == nil, days == nil, shieldCategories.isEmpty else {
                throw ValidationError("--off takes only --user and --name")
            }
        } else {
            guard from != nil, to != nil else { throw ValidationError("give the hours with --from HH:MM --to HH:MM") }
        }
    }

    func run() throws {
        let request = FreeTimeRequest(
            user: user, name: name, from: try from.map { try timeOfDay($0, "--from") },
            to: try to.map { try timeOfDay($0, "--to") }, weekdays: try weekdays(days),
            shieldCategories: shieldCategories, off: off)
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print(MonitorText.render(reply), terminator: "")
    }
}
