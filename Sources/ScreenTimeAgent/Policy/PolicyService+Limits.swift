import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

// Limits and downtime.
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
            request.items, threshold: request.dailySeconds ?? 60, past: true, resolver: &resolver, what: "the limit")
        let name = try DeviceActivityName.validated(Self.limitName(itemNames))
        let scheduler = try activityScheduler
        let key = Monitor.Key(uid: account.uid, client: .agent, name: name)
        let existing = scheduler.entry(key)
        if request.remove {
            guard let existing else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "\(account.name) has no limit on \(itemNames.joined(separator: ", "))")
            }
            try scheduler.change { try database.deleteMonitors([key]) }
            try edits.liftLimit(existing.monitor, account: account)
            logger.notice("limit removed", metadata: ["user": "\(account.name)", "limit": "\(name)"])
            return try monitorList(account, client: .agent, names: true)
        }
        guard let daily = request.dailySeconds else {
            throw ScreenTimeIPCError(.invalidArgument, "give the day's time with --daily (45m, 1h30m)")
        }
        guard daily >= 60, daily < 86_400 else {
            throw ScreenTimeIPCError(.invalidArgument, "a daily limit is from 1 minute to less than a day")
        }
        let shield = Monitor.LimitShield(
            store: store, applications: event.applications, categories: event.categories, webDomains: shieldDomains)
        let monitor = try makeMonitor(
            account: account, client: .agent, name: name,
            schedule: Self.everyDay,
            events: [try DeviceActivityEvent.Name.validated("limit"): event], weekdays: nil, scheduler: scheduler,
            program: nil, builtIn: .limit(shield), itemNames: ["limit": itemNames])
        // A limit replaced starts over: what the old one shielded is lifted, and the new one,
        // counting the whole day, shields again at once if the day's use is already past it.
        if let existing { try edits.liftLimit(existing.monitor, account: account) }
        try scheduler.change { try database.saveMonitor(monitor, names: resolver.names) }
        logger.notice(
            "limit set",
            metadata: [
                "user": "\(account.name)", "limit": "\(name)", "daily": "\(DurationText.format(daily))",
                "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: .agent, names: true)
    }

    /// The whole day's screen time: every application, web domain and text login counts, once.
    /// Reached, every application is shielded until midnight; with `noLogin`, the child's
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
        let name = try DeviceActivityName.validated(Self.screenTimeName)
        let scheduler = try activityScheduler
        let key = Monitor.Key(uid: account.uid, client: .agent, name: name)
        let store = StoreKey.screenTime
        if request.remove {
            guard scheduler.entry(key) != nil else {
                throw ScreenTimeIPCError(.invalidArgument, "\(account.name) has no screen-time limit")
            }
            try scheduler.change { try database.deleteMonitors([key]) }
            try edits.lift(account, store, .screenTime, by: caller.account.name, action: "screen-time limit removed")
            return try monitorList(account, client: .agent, names: true)
        }
        guard let daily = request.dailySeconds else {
            throw ScreenTimeIPCError(.invalidArgument, "give the day's screen time: --screen-time 2h")
        }
        guard daily >= 60, daily < 86_400 else {
            throw ScreenTimeIPCError(.invalidArgument, "the day's screen time is from 1 minute to less than a day")
        }
        var event = DeviceActivityEvent(
            threshold: DateComponents(second: Int(daily.rounded())), includesPastActivity: true)
        event.allActivity = true
        let monitor = try makeMonitor(
            account: account, client: .agent, name: name,
            schedule: Self.everyDay,
            events: [try DeviceActivityEvent.Name.validated("limit"): event], weekdays: nil, scheduler: scheduler,
            program: nil, builtIn: .screenTime(store: store.name, noLogin: request.noLogin == true),
            itemNames: ["limit": ["screen time"]])
        // Replaced: it starts over, and shields again at once if the day is already past it.
        if scheduler.entry(key) != nil {
            try edits.lift(account, store, .screenTime, by: caller.account.name, action: "screen-time limit replaced")
        }
        try scheduler.change { try database.saveMonitor(monitor, names: [:]) }
        logger.notice(
            "screen-time limit set",
            metadata: [
                "user": "\(account.name)", "daily": "\(DurationText.format(daily))",
                "noLogin": "\(request.noLogin == true)", "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: .agent, names: true)
    }

    func downtime(_ request: DowntimeRequest, _ context: RequestContext) throws -> MonitorListReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user), caller: caller)
        let scheduler = try activityScheduler
        let name = try DeviceActivityName.validated(Self.downtimeName)
        let key = Monitor.Key(uid: account.uid, client: .agent, name: name)
        let store = StoreKey.downtime
        if request.off {
            guard scheduler.entry(key) != nil else {
                throw ScreenTimeIPCError(.invalidArgument, "\(account.name) has no downtime")
            }
            try scheduler.change { try database.deleteMonitors([key]) }
            try edits.lift(account, store, .downtime, by: caller.account.name, action: "downtime ended")
            return try monitorList(account, client: .agent, names: true)
        }
        guard let from = request.from, let to = request.to else {
            throw ScreenTimeIPCError(.invalidArgument, "give the hours with --from HH:MM --to HH:MM")
        }
        for (time, what) in [(from, "--from"), (to, "--to")] {
            guard let hour = time.hour, (0...23).contains(hour), (0...59).contains(time.minute ?? 0) else {
                throw ScreenTimeIPCError(.invalidArgument, "\(what) is a time of day, HH:MM from 00:00 to 23:59")
            }
        }
        var resolver = Resolver(service: self, account: account)
        var allowed = Set<ApplicationToken>()
        var allowedNames: [String] = []
        for text in request.allow {
            allowed.insert(try resolver.application(text).0)
            allowedNames.append(text)
        }
        let weekdays = try request.weekdays.map { days -> Set<Int> in
            guard !days.isEmpty, days.allSatisfy({ (1...7).contains($0) }) else {
                throw ScreenTimeIPCError(.invalidArgument, "weekdays are 1 (Sunday) to 7 (Saturday), at least one")
            }
            return Set(days)
        }
        let schedule = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: from.hour, minute: from.minute ?? 0),
            intervalEnd: DateComponents(hour: to.hour, minute: to.minute ?? 0), repeats: true,
            warningTime: DateComponents(minute: 5))
        let monitor = try makeMonitor(
            account: account, client: .agent, name: name, schedule: schedule, events: [:], weekdays: weekdays,
            scheduler: scheduler, program: nil,
            builtIn: .downtime(store: store.name, allowed: allowed, noLogin: request.noLogin ? true : nil),
            itemNames: ["allowed": allowedNames.sorted()])
        // Replaced: the old hours end now; the new ones start at once if they are in progress.
        if scheduler.entry(key) != nil {
            try edits.lift(account, store, .downtime, by: caller.account.name, action: "downtime replaced")
        }
        try scheduler.change { try database.saveMonitor(monitor, names: resolver.names) }
        logger.notice(
            "downtime set",
            metadata: [
                "user": "\(account.name)", "from": "\(from.hour ?? 0):\(from.minute ?? 0)",
                "to": "\(to.hour ?? 0):\(to.minute ?? 0)", "noLogin": "\(request.noLogin)",
                "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: .agent, names: true)
    }
}
