import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// The time a limit counts: a day's (by day of the week), a week's (Monday to Sunday) or a
/// month's (from the 1st). Each is a monitor of its own, with a store of its own, so that a new
/// day does not lift what the week used up; whichever runs out first holds.
enum LimitPeriod: String, CaseIterable, Sendable {
    case day, week, month

    /// What the monitor's name ends with (the day's has none: names from before stay).
    var suffix: String {
        switch self {
        case .day: ""
        case .week: " (week)"
        case .month: " (month)"
        }
    }

    /// What the store's name ends with.
    var storeSuffix: String {
        switch self {
        case .day: ""
        case .week: "-weekly"
        case .month: "-monthly"
        }
    }

    var schedule: DeviceActivitySchedule {
        switch self {
        case .day: PolicyService.everyDay
        case .week: PolicyService.everyWeek
        case .month: .everyMonth(warningTime: DateComponents(minute: 5))
        }
    }

    /// The screen-time store and login lock of the period.
    var screenTime: (store: StoreKey, lock: StateDatabase.LoginLock.Reason) {
        switch self {
        case .day: (.screenTime, .screenTime)
        case .week: (.weeklyScreenTime, .weeklyScreenTime)
        case .month: (.monthlyScreenTime, .monthlyScreenTime)
        }
    }

    /// `today`, `this week`, `this month`.
    var this: String { self == .day ? "today" : "this \(rawValue)" }
    /// `Today's`, `This week's`, `This month's`.
    var whose: String { self == .day ? "Today's" : "This \(rawValue)'s" }
    /// When it ends: `midnight`, `Monday`, `the 1st`.
    var until: String {
        switch self {
        case .day: "midnight"
        case .week: "Monday"
        case .month: "the 1st"
        }
    }
    /// When the next begins, as a sentence ends: `tomorrow`, `Monday`, `the 1st`.
    var next: String { self == .day ? "tomorrow" : until }

    /// The period of a monitor of the agent's, by its schedule.
    init(_ schedule: DeviceActivitySchedule) {
        self = schedule.monthly ? .month : schedule.intervalStart.weekday != nil ? .week : .day
    }

    /// The period of a store of the agent's limits or screen time, by its name.
    init?(store: StoreName) {
        let name = store.rawValue
        if name.hasSuffix("-monthly") {
            self = .month
        } else if name.hasSuffix("-weekly") {
            self = .week
        } else {
            return nil
        }
    }
}

// Limits: on apps, categories and domains, and on the whole screen time.
extension PolicyService {
    func limit(_ request: LimitRequest, _ context: RequestContext) throws -> MonitorListReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user), caller: caller)
        if request.screenTime == true { return try screenTimeLimit(request, account: account, caller: caller) }
        guard request.noLogin != true else {
            throw ScreenTimeIPCError(.invalidArgument, "--no-login goes with --screen-time (the whole day's time)")
        }
        guard !request.items.isEmpty else {
            throw ScreenTimeIPCError(.invalidArgument, "a limit needs --app, --app-category or --domain")
        }
        let store = try StoreName(request.store ?? Self.limitStore)
        var resolver = Resolver(service: self, account: account)
        let (event, itemNames, shieldDomains) = try resolve(
            request.items, threshold: 60, past: true, resolver: &resolver, what: "the limit")
        let scheduler = try activityScheduler
        var keys: [LimitPeriod: Monitor.Key] = [:]
        for period in LimitPeriod.allCases {
            let name = try DeviceActivityName.validated(Self.limitName(itemNames, suffix: period.suffix))
            keys[period] = Monitor.Key(uid: account.uid, client: .agent, name: name)
        }
        let existing = keys.compactMapValues { scheduler.entry($0) }
        if request.remove {
            guard !existing.isEmpty else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "\(account.name) has no limit on \(itemNames.joined(separator: ", "))")
            }
            try scheduler.change { try database.deleteMonitors(Array(keys.values)) }
            for entry in existing.values { try edits.liftLimit(entry.monitor, account: account) }
            logger.notice(
                "limit removed", metadata: ["user": "\(account.name)", "limit": "\(keys[.day]?.name.rawValue ?? "")"])
            return try monitorList(account, client: .agent, names: true)
        }
        let amounts = try Self.amounts(request, what: "limit")
        var made: [(LimitPeriod, Monitor)] = []
        for period in LimitPeriod.allCases {
            guard let amount = amounts[period], let key = keys[period] else { continue }
            let shield = Monitor.LimitShield(
                store: try StoreName(store.rawValue + period.storeSuffix), applications: event.applications,
                categories: event.categories, webDomains: shieldDomains)
            made.append(
                (
                    period,
                    try makeMonitor(
                        account: account, client: .agent, name: key.name, schedule: period.schedule,
                        events: [try DeviceActivityEvent.Name.validated("limit"): Self.event(event, amount)],
                        weekdays: nil, scheduler: scheduler, program: nil, builtIn: .limit(shield),
                        itemNames: ["limit": itemNames])
                ))
        }
        // A limit replaced starts over: what the old one shielded is lifted, and the new one,
        // counting the whole period, shields again at once if its use is already past it.
        for (period, monitor) in made {
            if let replacing = existing[period] { try edits.liftLimit(replacing.monitor, account: account) }
            try scheduler.change { try database.saveMonitor(monitor, names: resolver.names) }
        }
        logger.notice(
            "limit set",
            metadata: [
                "user": "\(account.name)", "limit": "\(keys[.day]?.name.rawValue ?? "")",
                "amounts": "\(Self.describe(amounts))", "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: .agent, names: true)
    }

    /// The whole screen time: every application, web domain and text login counts, once.
    /// Used up, every application is shielded until the period ends; with `noLogin`, the child's
    /// sessions are locked and logins refused until then too.
    func screenTimeLimit(
        _ request: LimitRequest, account: UserAccount, caller: Caller
    ) throws
        -> MonitorListReply
    {
        guard request.items.isEmpty, request.store == nil else {
            throw ScreenTimeIPCError(
                .invalidArgument, "--screen-time is the whole day's time: it takes no --app, --domain or --store")
        }
        let scheduler = try activityScheduler
        var keys: [LimitPeriod: Monitor.Key] = [:]
        for period in LimitPeriod.allCases {
            let name = try DeviceActivityName.validated(Self.screenTimeName + period.suffix)
            keys[period] = Monitor.Key(uid: account.uid, client: .agent, name: name)
        }
        if request.remove {
            // Which: the week's or the month's alone when one is named (its figure is not read),
            // else all.
            var removing = LimitPeriod.allCases.filter { amountGiven(request, $0) }
            if removing.isEmpty || removing.contains(.day) { removing = LimitPeriod.allCases }
            let present = removing.filter { keys[$0].flatMap(scheduler.entry) != nil }
            guard !present.isEmpty else {
                throw ScreenTimeIPCError(.invalidArgument, "\(account.name) has no such screen-time limit")
            }
            try scheduler.change { try database.deleteMonitors(present.compactMap { keys[$0] }) }
            for period in present {
                try edits.lift(
                    account, period.screenTime.store, period.screenTime.lock, by: caller.account.name,
                    action: "screen-time limit removed")
            }
            return try monitorList(account, client: .agent, names: true)
        }
        let amounts = try Self.amounts(request, what: "screen time")
        var all = DeviceActivityEvent(threshold: DateComponents(second: 60), includesPastActivity: true)
        all.allActivity = true
        var made: [(LimitPeriod, Monitor)] = []
        for period in LimitPeriod.allCases {
            guard let amount = amounts[period], let key = keys[period] else { continue }
            made.append(
                (
                    period,
                    try makeMonitor(
                        account: account, client: .agent, name: key.name, schedule: period.schedule,
                        events: [try DeviceActivityEvent.Name.validated("limit"): Self.event(all, amount)],
                        weekdays: nil, scheduler: scheduler, program: nil,
                        builtIn: .screenTime(store: period.screenTime.store.name, noLogin: request.noLogin == true),
                        itemNames: ["limit": ["screen time" + period.suffix]])
                ))
        }
        for (period, monitor) in made {
            // Replaced: it starts over, and shields again at once if the time is already past it.
            if let key = keys[period], scheduler.entry(key) != nil {
                try edits.lift(
                    account, period.screenTime.store, period.screenTime.lock, by: caller.account.name,
                    action: "screen-time limit replaced")
            }
            try scheduler.change { try database.saveMonitor(monitor, names: [:]) }
        }
        logger.notice(
            "screen-time limit set",
            metadata: [
                "user": "\(account.name)", "amounts": "\(Self.describe(amounts))",
                "noLogin": "\(request.noLogin == true)", "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: .agent, names: true)
    }

    /// What a limit may count in each period, as a request gives it.
    enum Amount: Sendable {
        case daily(DailyAllowance)
        case total(TimeInterval)
    }

    private func amountGiven(_ request: LimitRequest, _ period: LimitPeriod) -> Bool {
        switch period {
        case .day: request.daily != nil || request.dailySeconds != nil
        case .week: request.weeklySeconds != nil
        case .month: request.monthlySeconds != nil
        }
    }

    /// The amounts a request gives, checked: a day's from 1 minute to less than a day (or 0: only
    /// what is granted) on days 1 (Sunday) to 7; a week's and a month's from 1 minute to less than
    /// a week (Apple's longest threshold). At least one.
    static func amounts(_ request: LimitRequest, what: String) throws -> [LimitPeriod: Amount] {
        var amounts: [LimitPeriod: Amount] = [:]
        if let allowance = request.daily ?? request.dailySeconds.map({ DailyAllowance.everyDay($0) }) {
            guard !allowance.seconds.isEmpty,
                allowance.seconds.allSatisfy({
                    (1...7).contains($0.key) && ($0.value == 0 || (60..<86_400).contains($0.value))
                })
            else {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "a day's \(what) is from 1 minute to less than a day (or 0), on days 1 (Sunday) to 7")
            }
            amounts[.day] = .daily(allowance)
        }
        for (period, seconds) in [(LimitPeriod.week, request.weeklySeconds), (.month, request.monthlySeconds)] {
            guard let seconds else { continue }
            guard seconds.isFinite, seconds >= 60, seconds < DeviceActivitySchedule.maximumInterval else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "a \(period.rawValue)'s \(what) is from 1 minute to less than a week")
            }
            amounts[period] = .total(seconds)
        }
        guard !amounts.isEmpty else {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "give the day's time (--daily 45m, mon-fri=1h,sat,sun=3h), the week's (--weekly) or the month's (--monthly)"
            )
        }
        return amounts
    }

    static func describe(_ amounts: [LimitPeriod: Amount]) -> String {
        LimitPeriod.allCases.compactMap { period in
            amounts[period].map { amount in
                switch amount {
                case .daily(let allowance): "day \(allowance)"
                case .total(let seconds): "\(period.rawValue) \(DurationText.format(seconds))"
                }
            }
        }.joined(separator: ", ")
    }

    /// A limit's event for an amount: one threshold as Apple's, or the allowance by day (with a
    /// day at 0, or days that differ); `threshold` is then the largest, to pass Apple's checks.
    static func event(_ event: DeviceActivityEvent, _ amount: Amount) -> DeviceActivityEvent {
        var event = event
        switch amount {
        case .total(let seconds):
            event.threshold = DateComponents(second: Int(seconds.rounded()))
        case .daily(let daily):
            let largest = daily.seconds.values.max() ?? 0
            event.threshold = DateComponents(second: max(1, Int(largest.rounded())))
            event.allowance = daily.isEveryDay && largest > 0 ? nil : daily
        }
        return event
    }
}
