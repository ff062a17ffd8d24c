public import FoundationEssentials

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
    /// The store of the agent's limit on the week's screen time (`limit --screen-time … --weekly`).
    public static let weeklyScreenTime = StoreName(validatedLiteral: "screen-time-weekly")
    /// The store of the agent's limit on the month's screen time.
    public static let monthlyScreenTime = StoreName(validatedLiteral: "screen-time-monthly")
    /// The store of the agent's weekly limits on items (`limit --weekly`): apart from the daily
    /// ones', so that a new day does not lift what the week used up.
    public static let weeklyLimits = StoreName(validatedLiteral: "limits-weekly")
    /// The store of what the agent's free periods shield while they last (`screentime free`).
    public static let freeTime = StoreName(validatedLiteral: "free-time")
}

extension StoreKey {
    /// Whether this is one of the agent's downtime stores: `downtime`, or a named downtime's
    /// `downtime-NAME`.
    public var isDowntime: Bool {
        client == .agent && (name == .downtime || name.rawValue.hasPrefix(StoreName.downtime.rawValue + "-"))
    }

    /// The agent's downtime store.
    public static let downtime = StoreKey(client: .agent, name: .downtime)
    /// The agent's screen-time limit store.
    public static let screenTime = StoreKey(client: .agent, name: .screenTime)
    /// The agent's weekly screen-time limit store.
    public static let weeklyScreenTime = StoreKey(client: .agent, name: .weeklyScreenTime)
    /// The agent's monthly screen-time limit store.
    public static let monthlyScreenTime = StoreKey(client: .agent, name: .monthlyScreenTime)
}

extension StoreCollection {
    /// The policy in force for the user at `now`: every store merged (most restrictive wins), with
    /// what the grants in force at `now` lift — an application's or a domain's shields (blocks stay),
    /// and, for more screen time, the agent's downtime and screen-time stores.
    ///
    /// Apps and domains a guardian always allows are lifted from the agent's downtime and
    /// screen-time stores (not from a limit on them, a guardian's other stores, or a block).
    ///
    /// The one place this is decided: what the shields enforce, what `status` shows and what a
    /// store's reply calls "effective" are all this.
    public func policyInForce(
        grants: [TimeGrant], alwaysAllowed: AlwaysAllowed = AlwaysAllowed(), at now: Date
    ) -> EffectivePolicy {
        var stores = self
        // What a guardian always allows stays usable under downtime and a used-up screen time.
        if !alwaysAllowed.isEmpty {
            let lifted = Set(stores.stores.keys.filter(\.isDowntime)).union([
                .screenTime, .weeklyScreenTime, .monthlyScreenTime,
            ])
            for key in lifted.sorted() where stores.stores[key] != nil {
                try? stores.update(key) { alwaysAllowed.lift(&$0) }
            }
        }
        var applications: Set<ApplicationToken> = []
        var webDomains: Set<WebDomainToken> = []
        for grant in grants where grant.until > now {
            switch grant.scope {
            case .application(let token): applications.insert(token)
            case .webDomain(let token): webDomains.insert(token)
            case .screenTime:
                for key in stores.stores.keys where key.isDowntime { stores.clear(key) }
                stores.clear(.screenTime)
                stores.clear(.weeklyScreenTime)
                stores.clear(.monthlyScreenTime)
            }
        }
        return EffectivePolicy(stores: stores.stores, grantedApplications: applications, grantedWebDomains: webDomains)
    }
}

/// A lock in force on a user's logins and sessions (downtime's or the day's screen time's, with
/// `--no-login`), and until when more screen time a guardian granted lifts it.
public struct LoginLock: Hashable, Sendable {
    /// `downtime`, `screen time`, `weekly screen time` or `guardian`.
    public var reason: String
    /// The reason of a guardian's `lock`, which no grant lifts.
    public static let guardian = "guardian"
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
        // A guardian's own lock: no grant lifts it.
        if let lock = locks.first(where: { $0.reason == Self.guardian && $0.until > now }) {
            return LoginLock(reason: lock.reason, until: lock.until)
        }
        guard let lock = locks.first(where: { $0.until > now }) else { return nil }
        let granted = grants.filter { $0.scope == .screenTime && $0.until > now }.map(\.until).max()
        return LoginLock(reason: lock.reason, until: lock.until, grantedUntil: granted)
    }
}

/// What a guardian always allows a child (a calculator, the school's site, a dictionary): usable
/// under downtime and a used-up screen time, as Apple's Always Allowed.
public struct AlwaysAllowed: Hashable, Sendable {
    public var applications: Set<ApplicationToken>
    public var webDomains: Set<WebDomainToken>

    public init(applications: Set<ApplicationToken> = [], webDomains: Set<WebDomainToken> = []) {
        self.applications = applications
        self.webDomains = webDomains
    }

    public var isEmpty: Bool { applications.isEmpty && webDomains.isEmpty }

    /// A store's shields with these lifted.
    func lift(_ settings: inout StoreSettings) {
        settings.shield.applicationCategories = settings.shield.applicationCategories?.excepting(applications)
        settings.shield.webDomainCategories = settings.shield.webDomainCategories?.excepting(webDomains)
        settings.shield.applications = settings.shield.applications.map { $0.subtracting(applications) }
        settings.shield.webDomains = settings.shield.webDomains.map { $0.subtracting(webDomains) }
    }
}
