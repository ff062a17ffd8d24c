import FoundationEssentials
package import LinuxSupport
package import Logging
package import ScreenTimeCore

/// What a built-in monitor's callback does (a daily limit, downtime, the day's screen time): the
/// agent's own reactions, run by the scheduler in its step, so that a change is in force when the
/// step that made it owed is done.
package protocol BuiltInReactions: Sendable {
    func react(_ monitor: Monitor, _ callback: ActivityCallback) throws
}

/// The built-in rules: a limit reached shields its items until the next day, downtime shields all
/// but what it allows (and may lock logins), the day's screen time used up shields everything; each
/// warned of 5 minutes before, in the user's sessions and on their terminals.
package final class BuiltInRules: BuiltInReactions {
    private let edits: PolicyEdits
    private let users: any Accounts
    private let shieldEvents: ShieldEvents
    private let logins: LoginSessions?
    private let logger: Logger

    package init(
        edits: PolicyEdits, users: any Accounts, shieldEvents: ShieldEvents, logins: LoginSessions?, logger: Logger
    ) {
        self.edits = edits
        self.users = users
        self.shieldEvents = shieldEvents
        self.logins = logins
        self.logger = logger
    }

    /// The agent's own reaction to a callback of a built-in monitor (run by the scheduler).
    package func react(_ monitor: Monitor, _ callback: ActivityCallback) throws {
        guard let builtIn = monitor.builtIn else { return }
        let account = try users.user(uid: monitor.uid)
        let agent = PolicyEdits.agent
        switch (builtIn, callback.callback) {
        case (.limit(let shield), .eventDidReachThreshold):
            let store = StoreKey(client: monitor.client, name: shield.store)
            _ = try edits.changeStore(
                account, store, by: agent,
                action: "limit reached: shielded until \(LimitPeriod(monitor.activity.schedule).until)",
                metadata: ["limit": "\(monitor.activity.name)"]
            ) { collection in
                try collection.update(store) { settings in
                    settings.shield.applications = PolicyEdits.change(
                        settings.shield.applications, shield.applications, remove: false)
                    settings.shield.applicationCategories = PolicyEdits.change(
                        settings.shield.applicationCategories, shield.categories, remove: false)
                    settings.shield.webDomains = PolicyEdits.change(
                        settings.shield.webDomains, shield.webDomains, remove: false)
                }
            }
        case (.limit, .intervalDidStart):
            // A new day: yesterday's shield goes (if the limit was reached).
            try edits.liftLimit(monitor, account: account, by: agent)
        case (.limit, .eventWillReachThresholdWarning):
            let left = Self.left(monitor, callback)
            logger.notice(
                "limit in \(left)", metadata: ["user": "\(account.name)", "limit": "\(monitor.activity.name)"])
            let what = monitor.itemNames["limit"]?.joined(separator: ", ") ?? "it"
            let period = LimitPeriod(monitor.activity.schedule)
            let words = (period.this, period.whose)
            shieldEvents.tell(
                .notice(
                    uid: account.uid, title: "\(left) left \(words.0)",
                    subtitle: "\(words.1) time for \(what) ends in \(left).",
                    icon: "alarm-symbolic"))
        case (.downtime(let storeName, let allowed, let noLogin), .intervalDidStart):
            let store = StoreKey(client: monitor.client, name: storeName)
            if noLogin == true { try edits.lock(account, .downtime, until: callback.interval.end) }
            _ = try edits.changeStore(account, store, by: agent, action: "downtime started") { collection in
                try collection.update(store) { settings in
                    settings.shield.applicationCategories = .all(except: allowed)
                }
            }
        case (.downtime(let storeName, _, _), .intervalDidEnd):
            let store = StoreKey(client: monitor.client, name: storeName)
            try edits.unlock(account, .downtime, publish: false)
            _ = try edits.changeStore(account, store, by: agent, action: "downtime ended") { $0.clear(store) }
        case (.downtime(_, _, let noLogin), .intervalWillStartWarning):
            let left = Self.minutes(callback.warning ?? callback.interval.start.timeIntervalSinceNow)
            logger.notice("downtime in \(left)", metadata: ["user": "\(account.name)"])
            let subtitle =
                noLogin == true
                ? "Then this session is locked until downtime ends. Save your work."
                : "From then on, only the apps your guardian allowed run."
            shieldEvents.tell(
                .notice(uid: account.uid, title: "Downtime in \(left)", subtitle: subtitle, icon: "alarm-symbolic"))
            if noLogin == true {
                logins?.warn(uid: account.uid, "Downtime in \(left). \(subtitle)")
            }
        case (.screenTime(let storeName, let noLogin), .eventDidReachThreshold):
            let store = StoreKey(client: monitor.client, name: storeName)
            if noLogin { try edits.lock(account, Self.lockReason(storeName), until: callback.interval.end) }
            let until = (LimitPeriod(store: storeName) ?? .day).until
            _ = try edits.changeStore(account, store, by: agent, action: "screen time used up: shielded until \(until)")
            {
                collection in
                try collection.update(store) { settings in settings.shield.applicationCategories = .all(except: []) }
            }
        case (.screenTime(let storeName, _), .intervalDidStart):
            // A new day: yesterday's shield and lock go.
            let store = StoreKey(client: monitor.client, name: storeName)
            try edits.unlock(account, Self.lockReason(storeName), publish: false)
            _ = try edits.changeStore(account, store, by: agent, action: "a new period's screen time") {
                $0.clear(store)
            }
        case (.screenTime(let storeName, let noLogin), .eventWillReachThresholdWarning):
            let left = Self.left(monitor, callback)
            logger.notice("screen time ends in \(left)", metadata: ["user": "\(account.name)"])
            let period = LimitPeriod(store: storeName) ?? .day
            let (whose, when, title) = (period.whose, period.next, "\(left) left \(period.this)")
            let subtitle =
                noLogin
                ? "\(whose) screen time ends in \(left); then this session is locked until \(when). Save your work."
                : "\(whose) screen time ends in \(left)."
            shieldEvents.tell(.notice(uid: account.uid, title: title, subtitle: subtitle, icon: "alarm-symbolic"))
            if noLogin { logins?.warn(uid: account.uid, subtitle) }
        case (.free(let storeName, let shielded), .intervalDidStart):
            try shieldCategories(
                shielded, StoreKey(client: monitor.client, name: storeName), of: account, remove: false)
            let end = WallClock.current().format(callback.interval.end, "HH:mm")
            shieldEvents.tell(
                .notice(
                    uid: account.uid, title: "Free time until \(end)",
                    subtitle: "Time now does not count toward your limits.", icon: "alarm-symbolic"))
        case (.free(let storeName, let shielded), .intervalDidEnd):
            try shieldCategories(shielded, StoreKey(client: monitor.client, name: storeName), of: account, remove: true)
        default:
            break
        }
    }

    /// A free period's categories shielded (or no longer) in its store.
    private func shieldCategories(
        _ categories: Set<ActivityCategoryToken>, _ store: StoreKey, of account: UserAccount, remove: Bool
    ) throws {
        guard !categories.isEmpty else { return }
        let action = remove ? "free time ended" : "free time started"
        _ = try edits.changeStore(account, store, by: PolicyEdits.agent, action: action) { collection in
            try collection.update(store) { settings in
                settings.shield.applicationCategories = PolicyEdits.change(
                    settings.shield.applicationCategories, categories, remove: remove)
            }
        }
    }

    /// How long is left at a threshold's warning, in words: the warning's lead time (5 minutes
    /// for one kept from before there were several), or the whole threshold when it is shorter
    /// (a 1-minute limit is warned of at once, with the minute it has).
    static func left(_ monitor: Monitor, _ callback: ActivityCallback) -> String {
        let event = callback.event.flatMap { monitor.activity.events[$0] } ?? monitor.activity.events.values.first
        let threshold =
            event?.threshold(
                forIntervalStartingAt: callback.interval.start, calendar: ActivityScheduler.systemCalendar())
            ?? 300
        return minutes(min(callback.warning ?? 300, threshold))
    }

    /// `1 minute`, `30 minutes` (rounded up, at least one).
    static func minutes(_ seconds: TimeInterval) -> String {
        let minutes = max(1, Int((seconds / 60).rounded(.up)))
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }

    /// The login lock a screen-time limit puts on, by its store: the day's, week's or month's.
    static func lockReason(_ store: StoreName) -> StateDatabase.LoginLock.Reason {
        (LimitPeriod(store: store) ?? .day).screenTime.lock
    }
}
