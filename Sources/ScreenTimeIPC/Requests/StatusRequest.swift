public import FoundationEssentials
public import ScreenTimeCore

/// `status`: a user's authorization, stores, merged policy and what the shields did lately.
public struct StatusRequest: ControlRequest, Hashable {
    public typealias Reply = StatusReply
    public static let kind = "status"
    public var user: UserReference?
    public init(user: UserReference? = nil) { self.user = user }
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
    /// Wrong guardian passwords typed in the user's sessions lately, and whether they locked the
    /// user out; nil when there were none.
    public var passwordFailures: PasswordFailuresReport?
    /// For a guardian: the launcher, which starts extensions and session programs.
    public var launcher: LauncherReport?
    /// The user's graphical sessions the agent reads focus in; nil for a user who is not
    /// authorized.
    public var sessions: [SessionReport]?
    /// The user's monitors (every client's), with how their extensions last ran; nil for a user
    /// who is not authorized.
    public var monitors: [MonitorReport]?
    /// What went wrong lately with the user's shield extensions (guardians and individuals).
    public var shieldProblems: [String]?
    /// Asks for more time waiting for a guardian.
    public var pendingAsks: Int?
    /// The user's login sessions the PAM hook told of (graphical, tty, ssh, su).
    public var logins: [LoginReport]?
    /// Why the user's sessions are locked and logins refused now; nil when they are not.
    public var loginLock: LoginLockReport?
    /// What a guardian always allows the user (names), under downtime and used-up screen time.
    public var alwaysAllowed: [String]?
    /// Where the agent's limits on the user stand now (the day's and the week's).
    public var limits: [UsageReport.LimitStanding]?

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

/// Wrong guardian passwords typed in a user's sessions.
public struct PasswordFailuresReport: Codable, Sendable, Hashable {
    public var failures: Int
    public var lastFailure: Date
    /// Locked out: no password is checked until a guardian runs `screentime unlock`.
    public var locked: Bool

    public init(failures: Int, lastFailure: Date, locked: Bool) {
        self.failures = failures
        self.lastFailure = lastFailure
        self.locked = locked
    }
}

/// The agent's launcher, as a guardian sees it in `status`.
public struct LauncherReport: Codable, Sendable, Hashable {
    /// Its pid while it runs.
    public var pid: Int32?
    /// The account extensions run as; nil when there is none (no extension can start).
    public var extensionAccount: String?
    /// What is wrong, in words; nil when all is well.
    public var problem: String?

    public init(pid: Int32?, extensionAccount: String?, problem: String?) {
        self.pid = pid
        self.extensionAccount = extensionAccount
        self.problem = problem
    }
}
