public import FoundationEssentials
public import ScreenTimeCore

public struct UserSummary: Codable, Sendable, Hashable {
    public var name: String
    public var uid: UInt32
    public init(name: String, uid: UInt32) {
        self.name = name
        self.uid = uid
    }
}

public struct StoreReport: Codable, Sendable, Hashable {
    public var client: String
    public var name: String
    public var settings: StoreSettings
    public var updatedAt: Date?

    public init(client: String, name: String, settings: StoreSettings, updatedAt: Date?) {
        self.client = client
        self.name = name
        self.settings = settings
        self.updatedAt = updatedAt
    }
}

/// A token and the stores behind its shield.
public struct ShieldedToken: Codable, Sendable, Hashable {
    public var token: String
    public var stores: [String]
    public init(token: String, stores: [String]) {
        self.token = token
        self.stores = stores
    }
}

/// The merge of every store, as `status` shows it.
public struct EffectiveReport: Codable, Sendable, Hashable {
    public var shieldedApplications: [ShieldedToken] = []
    public var blockedApplications: [ShieldedToken] = []
    public var shieldedWebDomains: [ShieldedToken] = []
    public var applicationCategoryShields: [CategoryShieldReport] = []
    public var webDomainCategoryShields: [CategoryShieldReport] = []
    public var webContentFilters: [FilterReport] = []
    public var appInstallationDeniedBy: [String] = []

    public init() {}
}

public struct CategoryShieldReport: Codable, Sendable, Hashable {
    public var store: String
    /// `all` or `specific`.
    public var policy: String
    public var categories: [String]
    public var exceptions: [String]

    public init(store: String, policy: String, categories: [String], exceptions: [String]) {
        self.store = store
        self.policy = policy
        self.categories = categories
        self.exceptions = exceptions
    }
}

public struct FilterReport: Codable, Sendable, Hashable {
    public var store: String
    public var policy: FilterPolicy
    public init(store: String, policy: FilterPolicy) {
        self.store = store
        self.policy = policy
    }
}

/// A store after a change, and the user's merged policy.
public struct StoreReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var store: StoreReport
    public var effective: EffectiveReport
    /// Names of the store's tokens (only those who may change a store get this reply).
    public var names: [String: TokenName]

    public init(user: UserSummary, store: StoreReport, effective: EffectiveReport, names: [String: TokenName] = [:]) {
        self.user = user
        self.store = store
        self.effective = effective
        self.names = names
    }
}
