import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

// Downtime.
extension PolicyService {
    func downtime(_ request: DowntimeRequest, _ context: RequestContext) throws -> MonitorListReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user), caller: caller)
        let scheduler = try activityScheduler
        // Named, one of several, with a store of its own: one ending does not lift another's.
        let label = try request.name.map { text -> String in
            guard text.count <= 40, (try? StoreName(text)) != nil else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "a downtime's name is 1 to 40 letters, digits and . _ - ('school-nights')")
            }
            return text
        }
        let name = try DeviceActivityName.validated(label.map { "\(Self.downtimeName): \($0)" } ?? Self.downtimeName)
        let key = Monitor.Key(uid: account.uid, client: .agent, name: name)
        let store = try label.map { StoreKey(client: .agent, name: try StoreName("downtime-\($0)")) } ?? .downtime
        if request.off {
            guard scheduler.entry(key) != nil else {
                throw ScreenTimeIPCError(.invalidArgument, "\(account.name) has no \(name.rawValue)")
            }
            try scheduler.change { try database.deleteMonitors([key]) }
            try edits.lift(account, store, .downtime, by: caller.account.name, action: "downtime ended")
            return try monitorList(account, client: .agent, names: true)
        }
        let (from, to) = try Self.hours(request.from, request.to)
        var resolver = Resolver(service: self, account: account)
        var allowed = Set<ApplicationToken>()
        var allowedNames: [String] = []
        for text in request.allow {
            allowed.insert(try resolver.application(text).0)
            allowedNames.append(text)
        }
        let weekdays = try Self.weekdays(request.weekdays)
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

// Free time.
extension PolicyService {
    static let freeTimeName = "free time"
    static let freeTimeStore = StoreName.freeTime

    func freeTime(_ request: FreeTimeRequest, _ context: RequestContext) throws -> MonitorListReply {
        let caller = try caller(context)
        let account = try storeOwner(StoreTarget(user: request.user), caller: caller)
        let scheduler = try activityScheduler
        let label = request.name.map { $0.trimmingSpaces() }
        if let label, label.isEmpty || label.count > 40 || label.unicodeScalars.contains(where: { $0.value < 32 }) {
            throw ScreenTimeIPCError(.invalidArgument, "a free period's name is 1 to 40 characters")
        }
        let name = try DeviceActivityName.validated(label.map { "\(Self.freeTimeName): \($0)" } ?? Self.freeTimeName)
        let key = Monitor.Key(uid: account.uid, client: .agent, name: name)
        let existing = scheduler.entry(key)
        if request.off {
            guard let existing else {
                throw ScreenTimeIPCError(.invalidArgument, "\(account.name) has no \(name.rawValue)")
            }
            try scheduler.change { try database.deleteMonitors([key]) }
            try liftFreeTime(existing.monitor, account: account, by: caller.account.name)
            return try monitorList(account, client: .agent, names: true)
        }
        let (from, to) = try Self.hours(request.from, request.to)
        let weekdays = try Self.weekdays(request.weekdays)
        var resolver = Resolver(service: self, account: account)
        var shielded = Set<ActivityCategoryToken>()
        for text in request.shieldCategories { shielded.insert(try resolver.applicationCategory(text)) }
        let schedule = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: from.hour, minute: from.minute ?? 0),
            intervalEnd: DateComponents(hour: to.hour, minute: to.minute ?? 0), repeats: true)
        let monitor = try makeMonitor(
            account: account, client: .agent, name: name, schedule: schedule, events: [:], weekdays: weekdays,
            scheduler: scheduler, program: nil, builtIn: .free(store: Self.freeTimeStore, shielded: shielded),
            itemNames: ["shielded": request.shieldCategories.sorted()])
        if let existing { try liftFreeTime(existing.monitor, account: account, by: caller.account.name) }
        try scheduler.change { try database.saveMonitor(monitor, names: resolver.names) }
        logger.notice(
            "free time set",
            metadata: [
                "user": "\(account.name)", "name": "\(name)", "from": "\(from.hour ?? 0):\(from.minute ?? 0)",
                "to": "\(to.hour ?? 0):\(to.minute ?? 0)", "by": "\(caller.account.name)",
            ])
        return try monitorList(account, client: .agent, names: true)
    }

    /// What a free period shields goes with it (removed or replaced).
    private func liftFreeTime(_ monitor: Monitor, account: UserAccount, by caller: String) throws {
        guard case .free(let storeName, let shielded) = monitor.builtIn, !shielded.isEmpty else { return }
        let store = StoreKey(client: monitor.client, name: storeName)
        _ = try edits.changeStore(account, store, by: caller, action: "free time removed") { collection in
            try collection.update(store) { settings in
                settings.shield.applicationCategories = PolicyEdits.change(
                    settings.shield.applicationCategories, shielded, remove: true)
            }
        }
    }
}

// What downtime and free time both take.
extension PolicyService {
    /// `--from` and `--to`, given and checked: times of day.
    static func hours(_ from: DateComponents?, _ to: DateComponents?) throws -> (DateComponents, DateComponents) {
        guard let from, let to else {
            throw ScreenTimeIPCError(.invalidArgument, "give the hours with --from HH:MM --to HH:MM")
        }
        for (time, what) in [(from, "--from"), (to, "--to")] {
            guard let hour = time.hour, (0...23).contains(hour), (0...59).contains(time.minute ?? 0) else {
                throw ScreenTimeIPCError(.invalidArgument, "\(what) is a time of day, HH:MM from 00:00 to 23:59")
            }
        }
        return (from, to)
    }

    /// `--days`, checked: weekdays 1 (Sunday) to 7, at least one; nil: every day.
    static func weekdays(_ days: [Int]?) throws -> Set<Int>? {
        try days.map { days in
            guard !days.isEmpty, days.allSatisfy({ (1...7).contains($0) }) else {
                throw ScreenTimeIPCError(.invalidArgument, "weekdays are 1 (Sunday) to 7 (Saturday), at least one")
            }
            return Set(days)
        }
    }
}
