package import FoundationEssentials
package import LinuxSupport
package import Logging
package import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

/// Answers control requests: authorization, stores, the catalogue and tokens, and status.
///
/// Every request is judged by its caller's role (guardian: root or the guardian group; child;
/// individual; any other user) and answered with a reply or a typed error. A change is written to
/// the state database before the reply is made, and a rejected request changes nothing. Changes
/// are serialised; password checks happen outside that lock (PAM may take seconds to refuse).
public final class PolicyService: Sendable {
    let configuration: AgentConfiguration
    let database: StateDatabase
    let minter: TokenMinter
    let suffixes: PublicSuffixList
    let publisher: PolicyPublisher
    let domainShield: DomainShield?
    let processShield: ProcessShield?
    let users: any Accounts
    let logger: Logger
    /// Changes to stores and locks, one at a time, each put in force (shared with the built-in rules).
    let edits: PolicyEdits
    let systemDataDirectories: [String]
    let approvals: GuardianApprovals
    /// The launcher (`status` shows it to guardians; it runs report extensions).
    let launcher: ProgramLauncher?
    /// The usage tracker (`report` and the sessions in `status`).
    let usageTracker: UsageTracker?
    /// The activity scheduler (monitors, limits, downtime).
    let scheduler: ActivityScheduler?
    /// What the shield presenter shows: asks, decisions and notices are told to it.
    let shieldEvents: ShieldEvents
    /// What went wrong with each user's shield extensions (in `status`).
    let shieldProblems: ShieldProblems
    /// The login sessions the PAM hook told of.
    let loginSessions: LoginSessions?
    /// The wall clock of password waits and dashboard sessions (a manual one in tests).
    let now: @Sendable () -> Date

    /// The freedesktop main categories (Desktop Menu Specification): valid app categories even
    /// when no installed application uses them yet.
    static let mainCategories = [
        "AudioVideo", "Audio", "Video", "Development", "Education", "Game", "Graphics", "Network", "Office",
        "Science", "Settings", "System", "Utility",
    ]

    /// - Parameters:
    ///   - launcher, usage, scheduler, logins: the agent's (none in tests that need none: what
    ///     needs one is then refused as unavailable).
    ///   - users: the accounts (the system's; a table in tests).
    ///   - checkPassword: how a guardian's password is checked (PAM; a fake in tests).
    package init(
        configuration: AgentConfiguration, database: StateDatabase, minter: TokenMinter, suffixes: PublicSuffixList,
        publisher: PolicyPublisher, edits: PolicyEdits, domainShield: DomainShield?, processShield: ProcessShield?,
        launcher: ProgramLauncher?, usage: UsageTracker?, scheduler: ActivityScheduler?, logins: LoginSessions?,
        shieldEvents: ShieldEvents, shieldProblems: ShieldProblems, logger: Logger,
        users: any Accounts = UserDirectory(),
        checkPassword: (@Sendable (_ user: String, _ password: String) throws -> Void)? = nil,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.users = users
        self.now = now
        self.launcher = launcher
        self.edits = edits
        self.usageTracker = usage
        self.scheduler = scheduler
        self.loginSessions = logins
        self.publisher = publisher
        self.shieldEvents = shieldEvents
        self.shieldProblems = shieldProblems
        self.processShield = processShield
        self.configuration = configuration
        self.database = database
        self.minter = minter
        self.suffixes = suffixes
        self.domainShield = domainShield
        self.logger = logger
        self.systemDataDirectories = ApplicationCatalogue.systemDataDirectories(
            environment: ProcessInfo.processInfo.environment["XDG_DATA_DIRS"])
        let check =
            checkPassword ?? { user, password in
                try PAMAuthenticator(service: configuration.pamService).check(user: user, password: password)
            }
        self.approvals = GuardianApprovals(database: database, logger: logger, now: now) { name, password in
            guard let guardian = try? users.user(name), Self.isGuardian(guardian, users, configuration) else {
                // Refused as slowly as PAM refuses a guardian's wrong password (its fail delay,
                // about 2 s): how long the answer takes does not tell who the guardians are.
                Threads.sleep(Double.random(in: 2.0...2.6))
                throw ScreenTimeIPCError(.authenticationFailed, "'\(name)' is not a guardian here")
            }
            try check(guardian.name, password)
        }
    }

    // MARK: requests

    func ping(_ request: PingRequest, _ context: RequestContext) throws -> PingReply {
        let caller = try caller(context)
        return PingReply(
            agentVersion: AgentVersion.current, protocolVersion: protocolVersion, callerUID: context.peer.uid,
            role: caller.role)
    }

    func status(_ request: StatusRequest, _ context: RequestContext) throws -> StatusReply {
        try status(request.user, caller: caller(context))
    }

    func authorize(_ request: AuthorizeRequest, _ context: RequestContext) throws -> AuthorizationReply {
        try authorize(request, caller: caller(context))
    }

    func revoke(_ request: RevokeRequest, _ context: RequestContext) throws -> AuthorizationReply {
        try revoke(request.user, caller: caller(context))
    }

    func applications(_ request: ApplicationsRequest, _ context: RequestContext) throws -> ApplicationsReply {
        try applications(request.user, caller: caller(context))
    }

    func categories(_ request: CategoriesRequest, _ context: RequestContext) throws -> CategoriesReply {
        try categories(request.user, caller: caller(context))
    }

    func token(_ request: TokenRequest, _ context: RequestContext) throws -> TokenReply {
        try token(request, caller: caller(context), context: context)
    }

    func shield(_ request: ShieldRequest, _ context: RequestContext) throws -> StoreReply {
        try shield(request, caller: caller(context), context: context)
    }

    func clear(_ request: ClearRequest, _ context: RequestContext) throws -> StoreReply {
        try clear(request.target, caller: caller(context))
    }

    func filter(_ request: FilterRequest, _ context: RequestContext) throws -> StoreReply {
        try filter(request, caller: caller(context))
    }

    /// Puts a saved change in force before the reply is sent: when `screentime shield` returns,
    /// the child's next lookup is already judged by the new policy.
    func enforce() {
        publisher.publish()
    }

    // MARK: reports

    /// The policy in force for the user now, grants lifting what they lift: what the shields
    /// enforce, which every reply reports.
    func inForce(_ stores: StoreCollection, uid: UInt32) throws -> EffectivePolicy {
        let now = Date()
        return stores.policyInForce(
            grants: try database.timeGrants(uid: uid, at: now), alwaysAllowed: try database.alwaysAllowed(uid: uid),
            at: now)
    }

    static func report(_ policy: EffectivePolicy) -> EffectiveReport {
        func shielded<Kind>(_ map: [Token<Kind>: [StoreKey]]) -> [ShieldedToken] {
            map.sorted { $0.key < $1.key }.map {
                ShieldedToken(token: $0.key.base64, stores: $0.value.map(\.description))
            }
        }
        func category<Kind>(_ store: StoreKey, _ policy: ActivityCategoryPolicy<Kind>) -> CategoryShieldReport {
            CategoryShieldReport(
                store: store.description, policy: policy.name, categories: policy.categories.sorted().map(\.base64),
                exceptions: policy.exceptions.sorted().map(\.base64))
        }
        var report = EffectiveReport()
        report.shieldedApplications = shielded(policy.applicationsShieldedByToken)
        report.blockedApplications = shielded(policy.applicationsBlocked)
        report.shieldedWebDomains = shielded(policy.webDomainsShieldedByToken)
        report.applicationCategoryShields = policy.applicationCategoryShields.map { category($0.store, $0.policy) }
        report.webDomainCategoryShields = policy.webDomainCategoryShields.map { category($0.store, $0.policy) }
        report.webContentFilters = policy.webContentFilters.map {
            FilterReport(store: $0.store.description, policy: $0.policy)
        }
        report.appInstallationDeniedBy = policy.appInstallationDenied.map(\.description)
        return report
    }

    /// Every token a store names, for looking their names up.
    static func tokens(in stores: [StoreReport]) -> Set<String> {
        var tokens: Set<String> = []
        for store in stores {
            let shield = store.settings.shield
            tokens.formUnion((shield.applications ?? []).map(\.base64))
            tokens.formUnion((shield.webDomains ?? []).map(\.base64))
            tokens.formUnion((store.settings.application.blockedApplications ?? []).map(\.base64))
            if let policy = shield.applicationCategories {
                tokens.formUnion(policy.categories.map(\.base64))
                tokens.formUnion(policy.exceptions.map(\.base64))
            }
            if let policy = shield.webDomainCategories {
                tokens.formUnion(policy.categories.map(\.base64))
                tokens.formUnion(policy.exceptions.map(\.base64))
            }
        }
        return tokens
    }

}

/// The agent's version, reported by `ping`.
public enum AgentVersion {
    public static let current = "0.1.0"
}
