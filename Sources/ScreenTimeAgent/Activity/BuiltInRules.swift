import Foundation
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
                account, store, by: agent, action: "limit reached: shielded until midnight",
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
            logger.notice(
                "limit in 5 minutes", metadata: ["user": "\(account.name)", "limit": "\(monitor.activity.name)"])
            let what = monitor.itemNames["limit"]?.joined(separator: ", ") ?? "it"
            // A limit shorter than the warning is warned of at once: with what it has.
            let threshold = monitor.activity.events.values.map(\.thresholdDuration).max() ?? 300
            let minutes = max(1, min(5, Int((threshold / 60).rounded(.up))))
            let left = minutes == 1 ? "1 minute" : "\(minutes) minutes"
            shieldEvents.tell(
                .notice(
                    uid: account.uid, title: "\(left) left today",
                    subtitle: "Today's time for \(what) ends in \(left).",
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
            logger.notice("downtime in 5 minutes", metadata: ["user": "\(account.name)"])
            let subtitle =
                noLogin == true
                ? "Then this session is locked until downtime ends. Save your work."
                : "From then on, only the apps your guardian allowed run."
            shieldEvents.tell(
                .notice(uid: account.uid, title: "Downtime in 5 minutes", subtitle: subtitle, icon: "alarm-symbolic"))
            if noLogin == true {
                logins?.warn(uid: account.uid, "Downtime in 5 minutes. \(subtitle)")
            }
        case (.screenTime(let storeName, let noLogin), .eventDidReachThreshold):
            let store = StoreKey(client: monitor.client, name: storeName)
            if noLogin { try edits.lock(account, .screenTime, until: callback.interval.end) }
            _ = try edits.changeStore(account, store, by: agent, action: "screen time used up: shielded until midnight")
            {
                collection in
                try collection.update(store) { settings in settings.shield.applicationCategories = .all(except: []) }
            }
        case (.screenTime(let storeName, _), .intervalDidStart):
            // A new day: yesterday's shield and lock go.
            let store = StoreKey(client: monitor.client, name: storeName)
            try edits.unlock(account, .screenTime, publish: false)
            _ = try edits.changeStore(account, store, by: agent, action: "a new day's screen time") { $0.clear(store) }
        case (.screenTime(_, let noLogin), .eventWillReachThresholdWarning):
            logger.notice("screen time ends in 5 minutes", metadata: ["user": "\(account.name)"])
            let subtitle =
                noLogin
                ? "Today's screen time ends in 5 minutes; then this session is locked until tomorrow. Save your work."
                : "Today's screen time ends in 5 minutes."
            shieldEvents.tell(
                .notice(uid: account.uid, title: "5 minutes left today", subtitle: subtitle, icon: "alarm-symbolic"))
            if noLogin { logins?.warn(uid: account.uid, subtitle) }
        default:
            break
        }
    }
}
