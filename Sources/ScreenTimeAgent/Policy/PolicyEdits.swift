import FoundationEssentials
import LinuxSupport
package import Logging
import ScreenTimeCore
import Synchronization

/// Changes to a user's stores and login locks, made one at a time (`changes`, held by every
/// change of the policy) and put in force before they return: what the policy service's requests
/// and the built-in rules' reactions both make.
package final class PolicyEdits: Sendable {
    /// Who the built-in rules' changes are by, in the log.
    static let agent = "the agent"

    let database: StateDatabase
    let publisher: PolicyPublisher
    let logger: Logger
    /// Held by every change of the policy (a store, a lock, an authorization, a grant).
    let changes = Mutex(())

    package init(database: StateDatabase, publisher: PolicyPublisher, logger: Logger) {
        self.database = database
        self.publisher = publisher
        self.logger = logger
    }

    /// Changes one store of `account`'s, saves it and publishes the policy; the stores as they are
    /// now, and when.
    func changeStore(
        _ account: UserAccount, _ key: StoreKey, by caller: String, action: String,
        names: [String: TokenName] = [:], metadata: Logger.Metadata = [:],
        _ change: (inout StoreCollection) throws -> Void
    ) throws -> (collection: StoreCollection, at: Date) {
        try changes.withLock { _ in
            var (collection, _) = try database.stores(uid: account.uid)
            try change(&collection)
            let now = Date()
            try database.saveStore(uid: account.uid, key: key, settings: collection[key], names: names, at: now)
            publisher.publish()
            logger.notice(
                "\(action)",
                metadata: metadata.merging(["user": "\(account.name)", "store": "\(key)", "by": "\(caller)"]) { $1 })
            return (collection, now)
        }
    }

    /// Locks a user's sessions and refuses their logins until `until` (a built-in monitor's
    /// reaction; the policy is published by the store change that goes with it).
    func lock(_ account: UserAccount, _ reason: StateDatabase.LoginLock.Reason, until: Date) throws {
        try database.setLoginLock(
            StateDatabase.LoginLock(uid: account.uid, reason: reason, until: until, since: Date()))
        logger.notice(
            "sessions locked and logins refused",
            metadata: ["user": "\(account.name)", "why": "\(reason.rawValue)", "until": "\(until)"])
    }

    func unlock(_ account: UserAccount, _ reason: StateDatabase.LoginLock.Reason, publish: Bool = true) throws {
        guard try database.clearLoginLock(uid: account.uid, reason: reason) else { return }
        logger.notice("login lock lifted", metadata: ["user": "\(account.name)", "why": "\(reason.rawValue)"])
        if publish { publisher.publish() }
    }

    /// What a built-in's store shields, and the login lock it put on, go (it was removed or
    /// replaced): one publication, by the store's change, puts both in force.
    func lift(
        _ account: UserAccount, _ store: StoreKey, _ lock: StateDatabase.LoginLock.Reason, by caller: String,
        action: String
    ) throws {
        try unlock(account, lock, publish: false)
        _ = try changeStore(account, store, by: caller, action: action) { $0.clear(store) }
    }

    /// What a limit shielded goes (it is only there once it was reached today).
    func liftLimit(_ monitor: Monitor, account: UserAccount, by caller: String = PolicyEdits.agent) throws {
        guard case .limit(let shield) = monitor.builtIn else { return }
        let store = StoreKey(client: monitor.client, name: shield.store)
        let (collection, _) = try database.stores(uid: account.uid)
        let settings = collection[store]
        let shielded =
            !(settings.shield.applications ?? []).isDisjoint(with: shield.applications)
            || !(settings.shield.webDomains ?? []).isDisjoint(with: shield.webDomains)
            || !(settings.shield.applicationCategories?.categories ?? []).isDisjoint(with: shield.categories)
        guard shielded else { return }
        _ = try changeStore(
            account, store, by: caller, action: "limit lifted", metadata: ["limit": "\(monitor.activity.name)"]
        ) { collection in
            try collection.update(store) { settings in
                settings.shield.applications = Self.change(
                    settings.shield.applications, shield.applications, remove: true)
                settings.shield.applicationCategories = Self.change(
                    settings.shield.applicationCategories, shield.categories, remove: true)
                settings.shield.webDomains = Self.change(settings.shield.webDomains, shield.webDomains, remove: true)
            }
        }
    }

    static func change<T: Hashable>(_ current: Set<T>?, _ items: Set<T>, remove: Bool) -> Set<T>? {
        guard !items.isEmpty else { return current }
        let result = remove ? (current ?? []).subtracting(items) : (current ?? []).union(items)
        return result.isEmpty ? nil : result
    }

    static func change<Kind>(
        _ current: ActivityCategoryPolicy<Kind>?, _ categories: Set<ActivityCategoryToken>, remove: Bool
    ) -> ActivityCategoryPolicy<Kind>? {
        guard !categories.isEmpty else { return current }
        switch current {
        case .all:
            return current
        case .specific(let shielded, let except):
            let result = remove ? shielded.subtracting(categories) : shielded.union(categories)
            return result.isEmpty && except.isEmpty ? nil : .specific(result, except: except)
        case .some(.none), nil:
            return remove ? current : .specific(categories)
        }
    }
}
