public import Foundation
public import ScreenTimeCore

/// The protocol version this build speaks. A request of another version is refused with
/// `unsupportedVersion`, naming both.
public let protocolVersion = 1

/// Who a request is about: a user name or a numeric uid (as text, `"1001"`). Nil means the caller.
public typealias UserReference = String

/// How a user takes part (Apple's `FamilyControlsMember`).
public enum FamilyControlsMember: String, Codable, Sendable, CaseIterable {
    case child, individual
}

/// Apple's `AuthorizationStatus`.
public enum AuthorizationStatus: String, Codable, Sendable {
    case notDetermined, denied, approved
}

/// A guardian's user name and password, given in the child's session.
public struct GuardianCredentials: Codable, Sendable, Hashable {
    public var user: String
    public var password: String
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// What can be asked of the agent.
public enum Request: Sendable, Hashable {
    case ping
    case status(user: UserReference?)
    case authorize(AuthorizeRequest)
    case revoke(user: UserReference?)
    case applications(user: UserReference?)
    case categories(user: UserReference?)
    case token(TokenRequest)
    case shield(ShieldRequest)
    case clear(StoreRequest)
    case filter(FilterRequest)

    /// The request's kind on the wire.
    public var kind: String {
        switch self {
        case .ping: "ping"
        case .status: "status"
        case .authorize: "authorize"
        case .revoke: "revoke"
        case .applications: "applications"
        case .categories: "categories"
        case .token: "token"
        case .shield: "shield"
        case .clear: "clear"
        case .filter: "filter"
        }
    }
}

public struct AuthorizeRequest: Codable, Sendable, Hashable {
    public var user: UserReference?
    public var member: FamilyControlsMember
    /// Given when a child's session asks for a guardian's approval.
    public var guardian: GuardianCredentials?
    /// Whether the child may see the names of what is shielded (not only tokens). Nil keeps it.
    public var showNamesToChild: Bool?

    public init(
        user: UserReference? = nil, member: FamilyControlsMember, guardian: GuardianCredentials? = nil,
        showNamesToChild: Bool? = nil
    ) {
        self.user = user
        self.member = member
        self.guardian = guardian
        self.showNamesToChild = showNamesToChild
    }
}

public enum TokenKindName: String, Codable, Sendable, CaseIterable {
    case app, domain, category
}

public struct TokenRequest: Codable, Sendable, Hashable {
    public var kind: TokenKindName
    public var identity: String
    public var user: UserReference?

    public init(kind: TokenKindName, identity: String, user: UserReference? = nil) {
        self.kind = kind
        self.identity = identity
        self.user = user
    }
}

/// One store of one user.
public struct StoreRequest: Codable, Sendable, Hashable {
    public var user: UserReference?
    public var client: String?
    public var store: String?

    public init(user: UserReference? = nil, client: String? = nil, store: String? = nil) {
        self.user = user
        self.client = client
        self.store = store
    }
}

/// Sets a store's web-content filter (`webContent.blockedByFilter`); `.none` removes it.
public struct FilterRequest: Codable, Sendable, Hashable {
    public var target: StoreRequest
    public var policy: FilterPolicy

    public init(target: StoreRequest, policy: FilterPolicy) {
        self.target = target
        self.policy = policy
    }
}

/// Adds to (or, with `remove`, takes from) a store's shields. Names are resolved by the agent:
/// `applications` are desktop-entry IDs, Flatpak IDs, `snap:NAME` or an executable's absolute path.
public struct ShieldRequest: Codable, Sendable, Hashable {
    public var target: StoreRequest
    public var applications: [String]
    public var applicationCategories: [String]
    public var webDomains: [String]
    public var webCategories: [String]
    public var selection: FamilyActivitySelection?
    /// Applications that may not run at all (`application.blockedApplications`), named like
    /// `applications`.
    public var blockedApplications: [String]?
    public var remove: Bool

    public init(
        target: StoreRequest, applications: [String] = [], applicationCategories: [String] = [],
        webDomains: [String] = [], webCategories: [String] = [], selection: FamilyActivitySelection? = nil,
        blockedApplications: [String] = [], remove: Bool = false
    ) {
        self.blockedApplications = blockedApplications.isEmpty ? nil : blockedApplications
        self.target = target
        self.applications = applications
        self.applicationCategories = applicationCategories
        self.webDomains = webDomains
        self.webCategories = webCategories
        self.selection = selection
        self.remove = remove
    }

    public var isEmpty: Bool {
        applications.isEmpty && applicationCategories.isEmpty && webDomains.isEmpty && webCategories.isEmpty
            && (selection?.isEmpty ?? true) && (blockedApplications ?? []).isEmpty
    }
}

// MARK: replies

public struct PingReply: Codable, Sendable, Hashable {
    public var agentVersion: String
    public var protocolVersion: Int
    public var callerUID: UInt32
    public var role: String

    public init(agentVersion: String, protocolVersion: Int, callerUID: UInt32, role: String) {
        self.agentVersion = agentVersion
        self.protocolVersion = protocolVersion
        self.callerUID = callerUID
        self.role = role
    }
}

public struct UserSummary: Codable, Sendable, Hashable {
    public var name: String
    public var uid: UInt32
    public init(name: String, uid: UInt32) {
        self.name = name
        self.uid = uid
    }
}

public struct AuthorizationReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var status: AuthorizationStatus
    public var member: FamilyControlsMember?
    public var showNamesToChild: Bool
    public var changedAt: Date?

    public init(
        user: UserSummary, status: AuthorizationStatus, member: FamilyControlsMember?, showNamesToChild: Bool,
        changedAt: Date?
    ) {
        self.user = user
        self.status = status
        self.member = member
        self.showNamesToChild = showNamesToChild
        self.changedAt = changedAt
    }
}

/// What a token stands for, as far as the reader may know.
public struct TokenName: Codable, Sendable, Hashable {
    public var kind: TokenKindName
    public var identity: String
    public var displayName: String

    public init(kind: TokenKindName, identity: String, displayName: String) {
        self.kind = kind
        self.identity = identity
        self.displayName = displayName
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

public struct StatusReply: Codable, Sendable, Hashable {
    public var authorization: AuthorizationReply
    public var stores: [StoreReport]
    public var effective: EffectiveReport
    /// Names of the tokens above, keyed by token (base64); empty where the reader may not see names.
    public var names: [String: TokenName]
    /// For a guardian: every authorized user.
    public var authorizedUsers: [AuthorizationReply]?
    /// How the user's DNS is filtered, and the latest shielded lookups; nil for a user who is not
    /// authorized.
    public var domainShield: DomainShieldReport?
    /// Which of the user's processes are frozen, and what the process shield did lately; nil for
    /// a user who is not authorized.
    public var processShield: ProcessShieldReport?

    public init(
        authorization: AuthorizationReply, stores: [StoreReport], effective: EffectiveReport,
        names: [String: TokenName], authorizedUsers: [AuthorizationReply]?, domainShield: DomainShieldReport? = nil,
        processShield: ProcessShieldReport? = nil
    ) {
        self.processShield = processShield
        self.authorization = authorization
        self.stores = stores
        self.effective = effective
        self.names = names
        self.authorizedUsers = authorizedUsers
        self.domainShield = domainShield
    }
}

/// The DNS filter for one user, as `status` shows it.
public struct DomainShieldReport: Codable, Sendable, Hashable {
    /// Whether the user's DNS goes through the agent's filter now (rules installed, queue read).
    public var filtering: Bool
    /// What keeps the filter from working as it should, in words; empty when all is well.
    public var problems: [String]
    /// The latest shielded lookups, newest first.
    public var recentLookups: [ShieldEventReport]

    public init(filtering: Bool, problems: [String], recentLookups: [ShieldEventReport]) {
        self.filtering = filtering
        self.problems = problems
        self.recentLookups = recentLookups
    }
}

/// The process shield for one user, as `status` shows it.
public struct ProcessShieldReport: Codable, Sendable, Hashable {
    /// Whether the agent hears of the user's processes as they start (proc connector read).
    public var watching: Bool
    /// How shielded processes are held: `cgroup v2 freezer`, `cgroup v1 freezer` or `SIGSTOP`.
    public var method: String
    /// What keeps the shield from working as it should, in words; empty when all is well.
    public var problems: [String]
    /// The user's processes frozen now.
    public var frozen: [FrozenProcessReport]
    /// The latest things done to the user's processes, newest first.
    public var recent: [ApplicationEventReport]
    /// Whether blocked apps' known programs are refused before they run (fanotify), rather than
    /// only killed at exec.
    public var refusesBlockedExecs: Bool?

    public init(
        watching: Bool, method: String, problems: [String], frozen: [FrozenProcessReport],
        recent: [ApplicationEventReport], refusesBlockedExecs: Bool? = nil
    ) {
        self.refusesBlockedExecs = refusesBlockedExecs
        self.watching = watching
        self.method = method
        self.problems = problems
        self.frozen = frozen
        self.recent = recent
    }
}

public struct FrozenProcessReport: Codable, Sendable, Hashable {
    public var pid: Int32
    /// The application token it is frozen for.
    public var token: String
    public var since: Date
    /// The program's name (`comm`), for the reader to recognise it.
    public var command: String

    public init(pid: Int32, token: String, since: Date, command: String) {
        self.pid = pid
        self.token = token
        self.since = since
        self.command = command
    }
}

public struct ApplicationEventReport: Codable, Sendable, Hashable {
    public var time: Date
    public var token: String
    public var pid: Int32
    /// `frozen`, `thawed` or `killed`.
    public var action: String

    public init(time: Date, token: String, pid: Int32, action: String) {
        self.time = time
        self.token = token
        self.pid = pid
        self.action = action
    }
}

/// Shielded lookups of one domain for one reason, counted over a span of time.
public struct ShieldEventReport: Codable, Sendable, Hashable {
    public var first: Date
    public var last: Date
    public var count: Int
    /// The web-domain token of the name looked up (its registrable domain).
    public var token: String
    /// `domain`, `category`, `filter` or `bypass`.
    public var reason: String
    /// The web category whose list held the name, for `category`.
    public var category: String?

    public init(first: Date, last: Date, count: Int, token: String, reason: String, category: String?) {
        self.first = first
        self.last = last
        self.count = count
        self.token = token
        self.reason = reason
        self.category = category
    }
}

public struct ApplicationReport: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var categories: [String]
    public var token: String
    public var source: String

    public init(id: String, name: String, categories: [String], token: String, source: String) {
        self.id = id
        self.name = name
        self.categories = categories
        self.token = token
        self.source = source
    }
}

public struct ApplicationsReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var applications: [ApplicationReport]
    public init(user: UserSummary, applications: [ApplicationReport]) {
        self.user = user
        self.applications = applications
    }
}

public struct CategoryReport: Codable, Sendable, Hashable {
    public var name: String
    /// `app` or `web`.
    public var kind: String
    public var token: String
    /// How many installed applications (or listed domains) it holds, where known.
    public var count: Int?

    public init(name: String, kind: String, token: String, count: Int?) {
        self.name = name
        self.kind = kind
        self.token = token
        self.count = count
    }
}

public struct CategoriesReply: Codable, Sendable, Hashable {
    public var categories: [CategoryReport]
    public init(categories: [CategoryReport]) { self.categories = categories }
}

public struct TokenReply: Codable, Sendable, Hashable {
    public var kind: TokenKindName
    public var identity: String
    public var token: String
    public init(kind: TokenKindName, identity: String, token: String) {
        self.kind = kind
        self.identity = identity
        self.token = token
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
