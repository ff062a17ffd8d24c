public import Foundation

/// Time a guardian granted, in force until `until`: what it lifts.
public struct TimeGrant: Hashable, Sendable {
    public enum Scope: Hashable, Sendable {
        /// The shields on one application (never a block).
        case application(ApplicationToken)
        /// The shields on one web domain (and by its category).
        case webDomain(WebDomainToken)
        /// Downtime's and the day's screen time's shields, with their lock on logins.
        case screenTime
    }

    public var scope: Scope
    public var until: Date

    public init(_ scope: Scope, until: Date) {
        self.scope = scope
        self.until = until
    }
}

extension StoreName {
    /// The store of the agent's downtime (`screentime downtime`).
    public static let downtime = StoreName(validatedLiteral: "downtime")
    /// The store of the agent's limit on the day's screen time (`screentime limit --screen-time`).
    public static let screenTime = StoreName(validatedLiteral: "screen-time")
}

extension StoreKey {
    /// The agent's downtime store.
    public static let downtime = StoreKey(client: .agent, name: .downtime)
    /// The agent's screen-time limit store.
    public static let screenTime = StoreKey(client: .agent, name: .screenTime)
}

extension StoreCollection {
    /// The policy in force for the user at `now`: every store merged (most restrictive wins), with
    /// what the grants in force at `now` lift — an application's or a domain's shields (blocks stay),
    /// and, for more screen time, the agent's downtime and screen-time stores.
    ///
    /// The one place this is decided: what the shields enforce, what `status` shows and what a
    /// store's reply calls "effective" are all this.
    public func policyInForce(grants: [TimeGrant], at now: Date) -> EffectivePolicy {
        var stores = self
        var applications: Set<ApplicationToken> = []
        var webDomains: Set<WebDomainToken> = []
        for grant in grants where grant.until > now {
            switch grant.scope {
            case .application(let token): applications.insert(token)
            case .webDomain(let token): webDomains.insert(token)
            case .screenTime:
                stores.clear(.downtime)
                stores.clear(.screenTime)
            }
        }
        return EffectivePolicy(stores: stores.stores, grantedApplications: applications, grantedWebDomains: webDomains)
    }
}

/// A lock in force on a user's logins and sessions (downtime's or the day's screen time's, with
/// `--no-login`), and until when more screen time a guardian granted lifts it.
public struct LoginLock: Hashable, Sendable {
    /// `downtime` or `screen time`.
    public var reason: String
    public var until: Date
    /// While this is after now, the lock is lifted (logins go through, sessions thaw).
    public var grantedUntil: Date?

    public init(reason: String, until: Date, grantedUntil: Date? = nil) {
        self.reason = reason
        self.until = until
        self.grantedUntil = grantedUntil
    }

    /// The lock in force at `now`: the first of `locks` (as they are kept: the one that ends
    /// last first) that has not ended, with the latest screen-time grant still running.
    public static func inForce(
        locks: [(reason: String, until: Date)], grants: [TimeGrant], at now: Date
    ) -> LoginLock? {
        guard let lock = locks.first(where: { $0.until > now }) else { return nil }
        let granted = grants.filter { $0.scope == .screenTime && $0.until > now }.map(\.until).max()
        return LoginLock(reason: lock.reason, until: lock.until, grantedUntil: granted)
    }
}
