import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Monitors (DeviceActivity): starting, stopping and listing a client's monitored activities for a
/// user, and the limits and downtime the agent offers itself, built on the same monitors and
/// stores. The scheduler runs them; a change returns once the scheduler has moved it to now (a
/// downtime set during its hours is in force when the command returns).
extension PolicyService {
    static let limitStore = "limits"
    static let downtimeName = "downtime"
    static let screenTimeName = "screen time"
    static let limitPrefix = "limit: "

    var activityScheduler: ActivityScheduler {
        get throws {
            guard let scheduler else {
                throw ScreenTimeIPCError(.unavailable, "this agent runs no schedules")
            }
            return scheduler
        }
    }

    // MARK: monitors

    func monitorStart(_ request: MonitorStartRequest, _ context: RequestContext) throws -> MonitorReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user, client: request.client), caller: caller)
        let client = try client(request.client, caller: caller)
        let name = try DeviceActivityName.validated(request.name)
        let scheduler = try activityScheduler
        if let existing = scheduler.entry(Monitor.Key(uid: account.uid, client: client, name: name)),
            let builtIn = existing.monitor.builtIn
        {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "'\(name)' is the built-in \(builtIn.name); change it with 'screentime \(builtIn.name)'")
        }
        var resolver = Resolver(service: self, account: account)
        var events: [DeviceActivityEvent.Name: DeviceActivityEvent] = [:]
        var itemNames: [String: [String]] = [:]
        for requested in request.events {
            let eventName = try DeviceActivityEvent.Name.validated(requested.name)
            guard events[eventName] == nil else {
                throw ScreenTimeIPCError(.invalidArgument, "two events are named '\(eventName)'")
            }
            let (event, names, _) = try resolve(
                requested.items, threshold: requested.thresholdSeconds, past: requested.includesPastActivity,
                allowance: requested.allowance, resolver: &resolver, what: "event '\(eventName)'")
            events[eventName] = event
            itemNames[eventName.rawValue] = names
        }
        if let program = request.extension, let problem = ExtensionProgram.problem(with: program) {
            throw ScreenTimeIPCError(.invalidArgument, "the extension cannot be used: \(problem)")
        }
        let weekdays = try request.weekdays.map { days -> Set<Int> in
            guard !days.isEmpty, days.allSatisfy({ (1...7).contains($0) }) else {
                throw ScreenTimeIPCError(.invalidArgument, "weekdays are 1 (Sunday) to 7 (Saturday), at least one")
            }
            return Set(days)
        }
        let monitor = try makeMonitor(
            account: account, client: client, name: name, schedule: request.schedule, events: events,
            weekdays: weekdays, scheduler: scheduler, program: request.extension, builtIn: nil, itemNames: itemNames)
        try scheduler.change { try database.saveMonitor(monitor, names: resolver.names) }
        logger.notice(
            "monitoring started",
            metadata: [
                "user": "\(account.name)", "monitor": "\(client)/\(name)", "by": "\(caller.account.name)",
                "extension": "\(request.extension ?? "none")",
            ])
        let entry = scheduler.entry(monitor.key) ?? ActivityScheduler.Entry(monitor: monitor, progress: .init())
        return MonitorReply(
            user: summary(account), monitor: try monitorReport(entry, names: true, runs: [:]))
    }

    func monitorStop(_ request: MonitorStopRequest, _ context: RequestContext) throws -> MonitorListReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user, client: request.client), caller: caller)
        let client = try client(request.client, caller: caller)
        let scheduler = try activityScheduler
        let mine = scheduler.entries(uid: account.uid).filter { $0.monitor.client == client }
        var keys: [Monitor.Key] = []
        if request.names.isEmpty {
            keys = mine.filter { $0.monitor.builtIn == nil }.map(\.monitor.key)
        } else {
            for text in request.names {
                let name = try DeviceActivityName.validated(text)
                guard let entry = mine.first(where: { $0.monitor.activity.name == name }) else {
                    throw ScreenTimeIPCError(
                        .invalidArgument, "\(client) monitors no activity '\(name)' for \(account.name)")
                }
                if let builtIn = entry.monitor.builtIn {
                    throw ScreenTimeIPCError(
                        .invalidArgument,
                        "'\(name)' is the built-in \(builtIn.name); remove it with 'screentime \(builtIn.name)'")
                }
                keys.append(entry.monitor.key)
            }
        }
        try scheduler.change { try database.deleteMonitors(keys) }
        logger.notice(
            "monitoring stopped",
            metadata: [
                "user": "\(account.name)", "monitors": "\(keys.map(\.name.rawValue))", "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: caller.authority, names: true)
    }

    func monitorList(_ request: MonitorListRequest, _ context: RequestContext) throws -> MonitorListReply {
        let caller = try caller(context)
        let account = try target(request.user, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may list only your own monitors")
        }
        let client =
            request.own == true
            ? try self.client(nil, caller: caller)
            : try request.client.map { try self.client($0, caller: caller) } ?? caller.authority
        let authorization = try authorizationReply(account)
        let names = Self.mayReadNames(caller, authorization)
        return try monitorList(account, client: client, names: names)
    }

    func monitorList(_ account: UserAccount, client: ClientID?, names: Bool) throws -> MonitorListReply {
        let scheduler = try activityScheduler
        let runs = try database.lastRuns(uid: account.uid)
        let entries = scheduler.entries(uid: account.uid).filter { client == nil || $0.monitor.client == client }
        return MonitorListReply(
            user: summary(account), monitors: try entries.map { try monitorReport($0, names: names, runs: runs) },
            timeZone: ZoneInfo.current().identifier)
    }

    // MARK: helpers

    /// Every day from midnight to midnight, warned 5 minutes before: a daily limit's schedule.
    static let everyDay = DeviceActivitySchedule(
        intervalStart: DateComponents(hour: 0, minute: 0), intervalEnd: DateComponents(hour: 0, minute: 0),
        repeats: true, warningTime: DateComponents(minute: 5))

    /// Names to tokens for an event, checked; the names as given, for display.
    func resolve(
        _ items: ActivityItems, threshold: Double, past: Bool, allowance: DailyAllowance? = nil,
        resolver: inout Resolver, what: String
    ) throws -> (event: DeviceActivityEvent, names: [String], shieldDomains: Set<WebDomainToken>) {
        guard !items.isEmpty else {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "\(what) counts nothing: give --app, --app-category, --domain, --web-category or --service")
        }
        guard threshold.isFinite, threshold >= 1 else {
            throw ScreenTimeIPCError(.invalidArgument, "\(what) needs a threshold of at least a second")
        }
        var applications = Set(items.selection?.applicationTokens ?? [])
        var categories = Set(items.selection?.categoryTokens ?? [])
        var domains = Set(items.selection?.webDomainTokens ?? [])
        var shieldDomains = domains
        var names: [String] = []
        for text in items.applications {
            applications.insert(try resolver.application(text).0)
            names.append(text)
        }
        for text in items.applicationCategories {
            categories.insert(try resolver.applicationCategory(text))
            names.append(text)
        }
        for text in items.webCategories {
            categories.insert(try resolver.webCategory(text))
            names.append("web:\(text)")
        }
        for text in items.webDomains {
            // Time is counted per registrable domain (what the DNS filter and connections tell):
            // an event on play.google.com counts google.com's.
            let name = try resolver.webDomain(text).1
            let domain = try DomainName(name.identity)
            domains.insert(minter.token(for: suffixes.registrableDomain(of: domain) ?? domain))
            shieldDomains.insert(minter.token(for: domain))
            names.append(name.identity)
        }
        // A service: its category (its apps, and its domains at the name), its apps by token and
        // its domains by registrable domain, so that app time and web time count together.
        for text in items.services ?? [] {
            let (category, definition) = try resolver.serviceDefinition(text)
            categories.insert(category)
            for application in definition.applications {
                let token = minter.token(for: application)
                applications.insert(token)
                resolver.names[token.base64] = TokenName(
                    kind: .app, identity: application.canonical, displayName: "\(definition.name) app")
            }
            for given in definition.domains {
                // Named, as `--domain` names them: the DNS filter matches a shielded token by its name.
                let domain = suffixes.webDomain(for: given)
                domains.insert(minter.token(for: suffixes.registrableDomain(of: domain) ?? domain))
                let token = minter.token(for: domain)
                shieldDomains.insert(token)
                resolver.names[token.base64] = TokenName(
                    kind: .domain, identity: domain.ascii, displayName: domain.unicode)
            }
            names.append(definition.name)
        }
        if let selection = items.selection, !selection.isEmpty { names.append("a selection") }
        var event = DeviceActivityEvent(
            applications: applications, categories: categories, webDomains: domains,
            threshold: DurationText.components(threshold), includesPastActivity: past)
        event.allowance = allowance
        do {
            try event.validate()
        } catch {
            throw ScreenTimeIPCError(ScreenTimeIPCError.Code(error.code.rawValue), "\(what): \(error.message)")
        }
        return (event, names, shieldDomains)
    }

    /// A monitor, checked as Apple checks one: the schedule, the events, and at most 20
    /// activities per client (and user).
    func makeMonitor(
        account: UserAccount, client: ClientID, name: DeviceActivityName, schedule: DeviceActivitySchedule,
        events: [DeviceActivityEvent.Name: DeviceActivityEvent], weekdays: Set<Int>?, scheduler: ActivityScheduler,
        program: String?, builtIn: Monitor.BuiltIn?, itemNames: [String: [String]]
    ) throws -> Monitor {
        var activities = MonitoredActivities()
        let now = Date()
        // The client's other activities, to count against Apple's limit (their definitions are
        // already checked).
        for entry in scheduler.entries(uid: account.uid)
        where entry.monitor.client == client && entry.monitor.activity.name != name {
            try? activities.startMonitoring(
                entry.monitor.activity.name, during: entry.monitor.activity.schedule,
                at: entry.monitor.activity.monitoringStart)
        }
        try activities.startMonitoring(name, during: schedule, events: events, weekdays: weekdays, at: now)
        guard var activity = activities.activities[name] else {
            throw ScreenTimeIPCError(.internalError, "the activity was not kept")
        }
        // The agent's own rules warn on the child's schedule (30, 10, 5, 1 minutes by default).
        if builtIn != nil { activity.warnings = Self.warnings(try database.warnings(uid: account.uid)) }
        return Monitor(
            uid: account.uid, client: client, activity: activity, program: program, builtIn: builtIn,
            itemNames: itemNames)
    }

    static func limitName(_ items: [String], suffix: String = "") -> String {
        let text = limitPrefix + items.sorted().joined(separator: ", ")
        guard text.count + suffix.count > 120 else { return text + suffix }
        return String(text.prefix(100 - suffix.count)) + "… (\(items.count) items)" + suffix
    }

    /// Monday 00:00 to the next Monday 00:00, warned 5 minutes before: a weekly limit's schedule.
    static let everyWeek = DeviceActivitySchedule(
        intervalStart: DateComponents(hour: 0, minute: 0, weekday: 2),
        intervalEnd: DateComponents(hour: 0, minute: 0, weekday: 2), repeats: true,
        warningTime: DateComponents(minute: 5))

    func monitorReport(
        _ entry: ActivityScheduler.Entry, names: Bool, runs: [Monitor.Key: ExtensionRun]
    ) throws -> MonitorReport {
        let monitor = entry.monitor
        let activity = scheduler?.counted(monitor) ?? monitor.activity
        let now = Date()
        let calendar = ActivityScheduler.systemCalendar()
        let interval = activity.currentOrNextInterval(at: now, calendar: calendar)
        let inInterval = interval.map { $0.start <= now && now < $0.end } ?? false
        var ledger: UsageLedger?
        if inInterval, let interval, !activity.events.isEmpty {
            ledger = try? usageTracker?.usage(uid: monitor.uid, during: interval).ledger
        }
        let events = activity.events.sorted { $0.key < $1.key }.map { eventName, event in
            let today = interval.map { event.threshold(forIntervalStartingAt: $0.start, calendar: calendar) }
            var report = MonitorReport.Event(
                name: eventName.rawValue, thresholdSeconds: (today ?? nil) ?? event.thresholdDuration,
                includesPastActivity: event.includesPastActivity,
                applications: event.applications.sorted().map(\.base64),
                categories: event.categories.sorted().map(\.base64),
                webDomains: event.webDomains.sorted().map(\.base64),
                itemNames: names ? monitor.itemNames[eventName.rawValue] : nil,
                reached: interval.map { entry.progress.thresholds.hasReached(eventName, intervalStart: $0.start) }
                    ?? false,
                usedSeconds: ledger.flatMap { ledger in
                    interval.map {
                        ThresholdTracker.usage(
                            of: event, activity: activity, interval: $0, ledger: ledger, now: now, calendar: calendar)
                    }
                })
            if let allowance = event.allowance {
                report.allowance = allowance.description
                if case .some(nil) = today { report.noThresholdToday = true }
            }
            return report
        }
        // What went wrong names programs and what they printed: for those who may see names.
        let run = runs[monitor.key].map { run in
            MonitorReport.Run(
                callback: run.callback.callback.rawValue, event: run.callback.event?.rawValue, at: run.at,
                outcome: run.outcome.rawValue, problem: names ? run.problem : nil)
        }
        var builtInName = monitor.builtIn?.name
        if case .downtime = monitor.builtIn, names, let allowed = monitor.itemNames["allowed"], !allowed.isEmpty {
            builtInName = "downtime (allowed: \(allowed.joined(separator: ", ")))"
        }
        if case .free = monitor.builtIn, names, let shielded = monitor.itemNames["shielded"], !shielded.isEmpty {
            builtInName = "free time (shielded: \(shielded.joined(separator: ", ")))"
        }
        if let builtIn = monitor.builtIn, builtIn.noLogin {
            builtInName = (builtInName ?? builtIn.name) + ", no login"
        }
        // An agent's limit is named after what it limits: to one not shown names, by count only.
        var name = activity.name.rawValue
        if !names, monitor.client == .agent, name.hasPrefix(Self.limitPrefix) {
            let items = Set(
                activity.events.values.flatMap { event in
                    event.applications.map(\.base64) + event.categories.map(\.base64) + event.webDomains.map(\.base64)
                })
            name = Self.limitPrefix + (items.count == 1 ? "1 item" : "\(items.count) items")
        }
        var report = MonitorReport(
            client: monitor.client.rawValue, name: name, schedule: activity.schedule,
            weekdays: activity.weekdays?.sorted(), events: events, extension: names ? monitor.program : nil,
            builtIn: builtInName, monitoringStart: activity.monitoringStart, currentInterval: interval,
            inInterval: inInterval, lastRun: run)
        report.warnings = activity.warnings.map { _ in activity.warningMarks }
        return report
    }
}
