package import Foundation
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
    private let configuration: AgentConfiguration
    let database: StateDatabase
    let minter: TokenMinter
    let suffixes: PublicSuffixList
    let publisher: PolicyPublisher
    private let domainShield: DomainShield?
    private let processShield: ProcessShield?
    let users: any Accounts
    let logger: Logger
    /// Changes to stores and locks, one at a time, each put in force (shared with the built-in rules).
    let edits: PolicyEdits
    private let systemDataDirectories: [String]
    private let approvals: GuardianApprovals
    /// The launcher (`status` shows it to guardians; it runs report extensions).
    let launcher: ProgramLauncher?
    /// The usage tracker (`report` and the sessions in `status`).
    let usageTracker: UsageTracker?
    /// The activity scheduler (monitors, limits, downtime).
    let scheduler: ActivityScheduler?
    /// What the shield presenter shows: asks, decisions and notices are told to it.
    let shieldEvents: ShieldEvents
    /// What went wrong with each user's shield extensions (in `status`).
    private let shieldProblems: ShieldProblems
    /// The login sessions the PAM hook told of.
    let loginSessions: LoginSessions?

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
    private func enforce() {
        publisher.publish()
    }

    // MARK: who is who

    /// How the control server counts a connecting process: guardians apart (they always find a
    /// slot), everyone else under their uid.
    @Sendable package func admission(_ peer: PeerCredentials) -> ControlServer.Admission {
        // A child's subordinate uids are the child: counted with it.
        let principal = publisher.current.owner(ofKernelUID: peer.uid) ?? peer.uid
        guard let account = try? users.user(uid: peer.uid) else { return .user(principal: principal) }
        return isGuardian(account) ? .guardian : .user(principal: principal)
    }

    /// How a user is authorized (child or individual), if they are.
    func member(of uid: UInt32) throws -> FamilyControlsMember? {
        guard let record = try database.authorization(uid: uid), record.status == .approved else { return nil }
        return record.member
    }

    /// Whether the peer is a guardian (root or the guardian group), for handlers of other services.
    func isGuardian(_ peer: PeerCredentials) -> Bool { (try? caller(peer))?.isGuardian ?? false }

    /// Who sent a request: the extension a channel was given to, else the connecting process.
    func caller(_ context: RequestContext) throws -> Caller {
        guard let authority = context.authority else {
            var caller = try caller(context.peer)
            caller.program = ClientProgram.of(pid: context.peer.pid)
            return caller
        }
        guard let account = try? users.user(uid: authority.uid),
            let record = try database.authorization(uid: authority.uid), record.status == .approved
        else {
            throw ScreenTimeIPCError(.notAuthorized, "the user this extension acts for is no longer authorized")
        }
        return Caller(account: account, role: .extension, authority: try ClientID(authority.client))
    }

    private func caller(_ peer: PeerCredentials) throws -> Caller {
        let account: UserAccount
        do {
            account = try users.user(uid: peer.uid)
        } catch {
            throw ScreenTimeIPCError(.unknownUser, "uid \(peer.uid) is not in the user database")
        }
        if isGuardian(account) { return Caller(account: account, role: .guardian) }
        if let authorization = try database.authorization(uid: account.uid), authorization.status == .approved {
            return Caller(account: account, role: authorization.member == .child ? .child : .individual)
        }
        return Caller(account: account, role: .user)
    }

    private func isGuardian(_ account: UserAccount) -> Bool { Self.isGuardian(account, users, configuration) }

    /// Root, and members of the guardian group.
    private static func isGuardian(
        _ account: UserAccount, _ users: any Accounts, _ configuration: AgentConfiguration
    ) -> Bool {
        if account.uid == 0 { return true }
        guard let gid = users.groupID(named: configuration.guardianGroup) else { return false }
        return users.groupIDs(of: account).contains(gid)
    }

    /// Why an account may not be a child, nil if it may.
    private func adminReason(_ account: UserAccount) -> String? {
        if account.uid == 0 { return "it is root" }
        if isGuardian(account) { return "it is a guardian (a member of \(configuration.guardianGroup))" }
        let groups = users.groupNames(of: account)
        if let admin = configuration.adminGroups.first(where: groups.contains) {
            return "it is a member of \(admin) and could undo every restriction"
        }
        return nil
    }

    func target(_ reference: UserReference?, caller: Caller) throws -> UserAccount {
        guard let reference, !reference.isEmpty else { return caller.account }
        do {
            return try users.user(reference)
        } catch {
            throw ScreenTimeIPCError(.unknownUser, "there is no user '\(reference.prefix(64))' on this computer")
        }
    }

    func summary(_ account: UserAccount) -> UserSummary {
        UserSummary(name: account.name, uid: account.uid)
    }

    // MARK: authorization

    func authorizationReply(_ account: UserAccount) throws -> AuthorizationReply {
        // A record made for another account that had this uid is not this account's.
        let record = try database.authorization(uid: account.uid).flatMap { $0.userName == account.name ? $0 : nil }
        return AuthorizationReply(
            user: summary(account), status: record?.status ?? .notDetermined, member: record?.member,
            showNamesToChild: record?.showNamesToChild ?? false, changedAt: record?.changedAt)
    }

    private func authorize(_ request: AuthorizeRequest, caller: Caller) throws -> AuthorizationReply {
        let account = try target(request.user, caller: caller)
        switch request.member {
        case .individual:
            guard account.uid == caller.account.uid else {
                throw ScreenTimeIPCError(
                    .notAllowed, "only \(account.name) can authorize themself as an individual; a guardian uses --child"
                )
            }
        case .child:
            if let reason = adminReason(account) {
                throw ScreenTimeIPCError(
                    .invalidAccountType, "\(account.name) cannot be authorized as a child: \(reason)")
            }
            if !caller.isGuardian {
                guard account.uid == caller.account.uid else {
                    throw ScreenTimeIPCError(
                        .notAllowed,
                        "only a guardian, or \(account.name) with a guardian's password, can authorize \(account.name)")
                }
                try checkGuardian(request.guardian, asker: caller)
            }
        }
        return try edits.changes.withLock { _ in
            let existing = try database.authorization(uid: account.uid)
            if request.member == .individual, let existing, existing.status == .approved, existing.member == .child {
                throw ScreenTimeIPCError(
                    .authorizationConflict, "\(account.name) is authorized as a child; only a guardian can change that")
            }
            // The uid last held by another name: that account was deleted and this new one given
            // its uid (useradd reuses the lowest free one). Nothing of the old one's is the new
            // one's: its stores, usage and events go, as at a revoke.
            let anotherAccount = existing.map { $0.userName != account.name } ?? false
            let record = StateDatabase.Authorization(
                uid: account.uid, userName: account.name, member: request.member, status: .approved,
                showNamesToChild: request.showNamesToChild
                    ?? (anotherAccount ? nil : existing?.showNamesToChild) ?? false,
                changedAt: Date(), changedByUID: caller.account.uid)
            if anotherAccount { try database.forget(uid: account.uid) }
            try database.save(record)
            if anotherAccount, let existing {
                logger.notice(
                    "a new account on a deleted one's uid: the old account's settings and usage are removed",
                    metadata: ["user": "\(account.name)", "uid": "\(account.uid)", "was": "\(existing.userName)"])
            }
            enforce()
            logger.notice(
                "authorized",
                metadata: [
                    "user": "\(account.name)", "member": "\(request.member.rawValue)", "by": "\(caller.account.name)",
                ])
            return try authorizationReply(account)
        }
    }

    /// A guardian's approval given in a child's session: the named user must be a guardian and
    /// the password right (PAM), asked at the pace `GuardianApprovals` allows the asker.
    func checkGuardian(_ credentials: GuardianCredentials?, asker: Caller) throws {
        guard let credentials, !credentials.user.isEmpty else {
            throw ScreenTimeIPCError(
                .notAllowed, "a guardian must approve: give a guardian's user name and password")
        }
        guard !credentials.password.isEmpty else {
            throw ScreenTimeIPCError(.authorizationCanceled, "no password was given; nothing changed")
        }
        try approvals.approve(
            guardian: String(credentials.user.prefix(64)), password: credentials.password, asker: asker.account.uid,
            askerName: asker.account.name)
    }

    /// A guardian forgets a user the agent no longer enforces for: revoked, or whose account is
    /// gone or now another's (a uid given again). An authorization in force for the account that
    /// has it is revoked first, by name.
    func forget(_ request: ForgetRequest, _ context: RequestContext) throws -> ForgetReply {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian can forget a user") }
        let reference = request.user.trimmingCharacters(in: .whitespaces)
        guard !reference.isEmpty, reference.utf8.count <= 256 else {
            throw ScreenTimeIPCError(.invalidArgument, "name the user to forget (a name or a uid)")
        }
        return try edits.changes.withLock { _ -> ForgetReply in
            let records = try database.authorizations()
            let current = try? users.user(reference)
            let record =
                UInt32(reference).flatMap { uid in records.first { $0.uid == uid } }
                ?? records.first { $0.userName == reference }
                ?? current.flatMap { account in
                    records.first { $0.uid == account.uid }
                }
            guard let record else {
                let uid = UInt32(reference) ?? current?.uid
                guard let uid else {
                    throw ScreenTimeIPCError(.unknownUser, "the agent knows no user '\(reference.prefix(64))'")
                }
                try database.forget(uid: uid)
                return ForgetReply(user: UserSummary(name: current?.name ?? reference, uid: uid), forgotten: false)
            }
            let holder = try? users.user(uid: record.uid)
            if record.status == .approved, holder?.name == record.userName {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "\(record.userName) is authorized; revoke it first (screentime revoke --user \(record.userName))")
            }
            try database.forget(uid: record.uid)
            logger.notice(
                "forgot a user",
                metadata: [
                    "user": "\(record.userName)", "uid": "\(record.uid)", "account": "\(holder?.name ?? "none")",
                    "by": "\(caller.account.name)",
                ])
            enforce()
            return ForgetReply(user: UserSummary(name: record.userName, uid: record.uid), forgotten: true)
        }
    }

    /// A guardian lifts a user's lockout after too many wrong guardian passwords.
    func unlock(_ request: UnlockRequest, _ context: RequestContext) throws -> UnlockReply {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian can lift a lockout") }
        let account = try target(request.user, caller: caller)
        let had = try approvals.unlock(account.uid)
        logger.notice("password lockout lifted", metadata: ["user": "\(account.name)", "by": "\(caller.account.name)"])
        return UnlockReply(user: summary(account), hadFailures: had)
    }

    private func revoke(_ reference: UserReference?, caller: Caller) throws -> AuthorizationReply {
        let account = try target(reference, caller: caller)
        return try edits.changes.withLock { _ in
            guard var record = try database.authorization(uid: account.uid), record.status == .approved else {
                throw ScreenTimeIPCError(
                    .notAuthorized, "\(account.name) is not authorized; there is nothing to revoke")
            }
            switch record.member {
            case .child where !caller.isGuardian:
                throw ScreenTimeIPCError(.notAllowed, "only a guardian can revoke a child's authorization")
            case .individual where !caller.isGuardian && caller.account.uid != account.uid:
                throw ScreenTimeIPCError(
                    .notAllowed, "only \(account.name) or a guardian can revoke this authorization")
            default:
                break
            }
            record.status = .denied
            record.changedAt = Date()
            record.changedByUID = caller.account.uid
            // Revoking removes every setting, as on Apple's devices.
            try database.save(record, clearingStoresAndEvents: true)
            enforce()
            logger.notice("revoked", metadata: ["user": "\(account.name)", "by": "\(caller.account.name)"])
            return try authorizationReply(account)
        }
    }

    // MARK: reading

    private func status(_ reference: UserReference?, caller: Caller) throws -> StatusReply {
        let account = try target(reference, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may read only your own status")
        }
        let authorization = try authorizationReply(account)
        let (collection, updated) = try database.stores(uid: account.uid)
        let stores = collection.stores.keys.sorted().map { key in
            StoreReport(
                client: key.client.rawValue, name: key.name.rawValue, settings: collection[key], updatedAt: updated[key]
            )
        }
        let effective = Self.report(try inForce(collection, uid: account.uid))
        let mayReadNames = Self.mayReadNames(caller, authorization)
        var names = mayReadNames ? try database.tokenNames(Self.tokens(in: stores)) : [:]
        let everyone =
            caller.isGuardian
            ? try database.authorizations().map { record in
                AuthorizationReply(
                    user: UserSummary(name: record.userName, uid: record.uid), status: record.status,
                    member: record.member,
                    showNamesToChild: record.showNamesToChild, changedAt: record.changedAt)
            } : nil
        let domains = authorization.status == .approved ? try domainShield?.report(uid: account.uid) : nil
        if let report = domains, mayReadNames {
            // Names of the domains looked up, and of the categories that shielded them.
            let tokens = Set(report.recentLookups.map(\.token))
            names.merge(try database.tokenNames(tokens)) { old, _ in old }
            for category in Set(report.recentLookups.compactMap(\.category)) where names[category] == nil {
                if let name = domainShield?.categoryName(category) {
                    names[category] = TokenName(kind: .category, identity: name, displayName: name)
                }
            }
        }
        let processes = authorization.status == .approved ? try processShield?.report(uid: account.uid) : nil
        if let report = processes, mayReadNames {
            let tokens = Set(report.frozen.map(\.token) + report.recent.map(\.token))
            names.merge(try database.tokenNames(tokens)) { old, _ in old }
        }
        var reply = StatusReply(
            authorization: authorization, stores: stores, effective: effective, names: names, authorizedUsers: everyone,
            domainShield: domains, processShield: processes)
        reply.passwordFailures = try approvals.failures(account.uid).map {
            PasswordFailuresReport(failures: $0.failures, lastFailure: $0.lastFailure, locked: $0.locked)
        }
        if caller.isGuardian { reply.launcher = launcher?.report }
        if authorization.status == .approved {
            reply.sessions = usageTracker?.sessions(of: account.uid, names: mayReadNames)
            reply.monitors = try? monitorList(account, client: caller.authority, names: mayReadNames).monitors
            if caller.isGuardian || caller.role == .individual {
                let problems = shieldProblems.of(account.uid)
                reply.shieldProblems = problems.isEmpty ? nil : problems
            }
            let pending = try database.timeRequests(uid: account.uid, limit: 50).filter { $0.state == .pending }
            reply.pendingAsks = pending.isEmpty ? nil : pending.count
            let logins = loginSessions?.report(uid: account.uid) ?? []
            reply.logins = logins.isEmpty ? nil : logins
            reply.loginLock = publisher.current.users[account.uid]?.loginLock.map {
                LoginLockReport(reason: $0.reason, until: $0.until, grantedUntil: $0.grantedUntil)
            }
        }
        return reply
    }

    func report(_ request: ReportRequest, _ context: RequestContext) throws -> UsageReport {
        let caller = try caller(context)
        let account = try target(request.user, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may read only your own report")
        }
        let authorization = try authorizationReply(account)
        guard authorization.status == .approved else {
            throw ScreenTimeIPCError(
                .notAuthorized, "\(account.name) is not authorized: no usage is counted for them")
        }
        guard let tracker = usageTracker else {
            throw ScreenTimeIPCError(.unavailable, "usage is not counted by this agent")
        }
        let mayReadNames = Self.mayReadNames(caller, authorization)
        var report: UsageReport
        do {
            report = try tracker.report(request, user: summary(account), names: mayReadNames)
        } catch let error as ScreenTimeIPCError {
            throw error
        } catch {
            throw ScreenTimeIPCError(.internalError, "cannot read the usage: \(error)")
        }
        if let program = request.extension {
            report.rendered = try renderReport(report, with: program)
        }
        return report
    }

    /// A report extension's rendering: run as an extension (10 s, no network), the report on its
    /// standard input, at most 1 MiB of what it prints back.
    private func renderReport(_ report: UsageReport, with program: String) throws -> String {
        if let problem = ExtensionProgram.problem(with: program) {
            throw ScreenTimeIPCError(.invalidArgument, "the report extension cannot be used: \(problem)")
        }
        guard let launcher = launcher, let client = launcher.client,
            let account = launcher.extensionAccount
        else {
            throw ScreenTimeIPCError(
                .unavailable, "the agent cannot start extensions (no launcher or extension account)")
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        let input = Array((try? encoder.encode(report)) ?? Data()) + [10]
        let request = LaunchRequest(
            kind: .extension, program: program,
            environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/"], uid: account.uid,
            gid: account.gid, network: .none,
            limits: .init(
                cpuSeconds: 10, memoryBytes: ExtensionHost.memoryBytes, processes: 64, openFiles: 256, wallSeconds: 10))
        let outcome: ExtensionProcess.Outcome
        do {
            outcome = try ExtensionProcess.run(
                request, launcher: client, input: input, outputLimit: 1 << 20, channel: nil)
        } catch {
            throw ScreenTimeIPCError(.init("extensionFailed"), "the report extension could not start: \(error.message)")
        }
        guard !outcome.flooded, !outcome.timedOut, outcome.status == 0 else {
            let why =
                outcome.flooded
                ? "it wrote more than 1 MiB"
                : outcome.timedOut ? "it ran longer than 10 s" : "it exited with status \(outcome.status ?? -1)"
            throw ScreenTimeIPCError(
                .init("extensionFailed"),
                "the report extension failed: \(why) \(ExtensionHost.printable(outcome.errors))")
        }
        return String(decoding: outcome.output, as: UTF8.self)
    }

    private func catalogue(for account: UserAccount) -> ApplicationCatalogue {
        ApplicationCatalogue(home: account.home, systemDataDirectories: systemDataDirectories)
    }

    /// Guardians, and individuals for themselves, may see names and mint tokens.
    private func requireNameReader(_ account: UserAccount, caller: Caller, what: String) throws {
        guard
            caller.isGuardian
                || ((caller.role == .individual || caller.role == .extension) && account.uid == caller.account.uid)
        else {
            throw ScreenTimeIPCError(.notAllowed, "\(what) is for guardians (and individuals, for themselves)")
        }
    }

    private func applications(_ reference: UserReference?, caller: Caller) throws -> ApplicationsReply {
        let account = try target(reference, caller: caller)
        try requireNameReader(account, caller: caller, what: "the list of applications")
        let reports = catalogue(for: account).listed.map { item in
            ApplicationReport(
                id: item.entry.id, name: item.entry.name, categories: item.entry.categories,
                token: minter.token(for: item.entry.identity).base64, source: item.source)
        }
        return ApplicationsReply(user: summary(account), applications: reports)
    }

    private func categories(_ reference: UserReference?, caller: Caller) throws -> CategoriesReply {
        let account = try target(reference, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may list only your own categories")
        }
        var counts: [String: Int] = Dictionary(uniqueKeysWithValues: Self.mainCategories.map { ($0, 0) })
        for item in catalogue(for: account).listed {
            for name in item.entry.categories { counts[name, default: 0] += 1 }
        }
        var reports: [CategoryReport] = []
        for (name, count) in counts.sorted(by: { $0.key < $1.key }) {
            guard let category = try? CategoryName(name) else { continue }
            reports.append(
                CategoryReport(name: name, kind: "app", token: minter.token(for: category).base64, count: count))
        }
        for name in webCategoryNames() {
            guard let category = try? CategoryName(name) else { continue }
            reports.append(
                CategoryReport(name: name, kind: "web", token: minter.token(for: category).base64, count: nil))
        }
        return CategoriesReply(categories: reports)
    }

    private func webCategoryNames() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: configuration.categoriesDirectory)) ?? []
        return files.filter { $0.hasSuffix(".list") }.map { String($0.dropLast(".list".count)) }.sorted()
    }

    private func token(_ request: TokenRequest, caller: Caller, context: RequestContext) throws -> TokenReply {
        let account = try target(request.user, caller: caller)
        try requireNameReader(account, caller: caller, what: "minting tokens")
        var resolver = Resolver(service: self, account: account)
        let token: String
        let identity: String
        switch request.kind {
        case .app:
            let (app, name) =
                try request.file.map { try resolver.application(file: $0, context: context) }
                ?? resolver.application(request.identity)
            token = app.base64
            identity = name.identity
        case .domain:
            let (domain, name) = try resolver.webDomain(request.identity)
            token = domain.base64
            identity = name.identity
        case .category:
            let category = try CategoryName(request.identity)
            token = minter.token(for: category).base64
            identity = category.name
        }
        return TokenReply(kind: request.kind, identity: identity, token: token)
    }

    // MARK: changing stores

    private func storeKey(_ request: StoreTarget, caller: Caller) throws -> StoreKey {
        StoreKey(
            client: try client(request.client, caller: caller),
            name: try request.store.map { try StoreName($0) } ?? .default)
    }

    /// The client a request acts as: the one it names (the command line's when none), or, for an
    /// extension, its monitor's client only.
    /// A guardian may name any client (the command line's `--client`); anyone else acts as the
    /// program it runs (its file name, as the kernel tells it).
    func client(_ named: String?, caller: Caller) throws -> ClientID {
        if let authority = caller.authority {
            let client = try named.map { try ClientID($0) } ?? authority
            guard client == authority else {
                throw ScreenTimeIPCError(
                    .notAllowed, "an extension of \(authority) may not act as client \(client.rawValue.prefix(64))")
            }
            return client
        }
        let program = caller.program.flatMap { try? ClientID($0.name) } ?? .commandLine
        if let named {
            let client = try ClientID(named)
            guard caller.isGuardian || client == program else {
                throw ScreenTimeIPCError(
                    .notAllowed,
                    "a program acts as its own client (\(program)), not as \(client.rawValue.prefix(64)); guardians may name others"
                )
            }
            return client
        }
        // (Who may change a user's stores at all is decided by role: a guardian, or an individual
        // for themself; a program's name only keeps one client's stores apart from another's.)
        return program
    }

    /// The account whose stores a request changes, checked: a guardian for anyone authorized, an
    /// individual for themself.
    func storeOwner(_ request: StoreTarget, caller: Caller) throws -> UserAccount {
        let account = try target(request.user, caller: caller)
        let record = try database.authorization(uid: account.uid)
        if !caller.isGuardian {
            guard account.uid == caller.account.uid, caller.role == .individual || caller.role == .extension else {
                let why =
                    caller.role == .child && account.uid == caller.account.uid
                    ? "a child's restrictions are changed only by a guardian"
                    : "only a guardian can change \(account.name)'s restrictions"
                throw ScreenTimeIPCError(.notAllowed, why)
            }
        }
        guard let record, record.status == .approved else {
            throw ScreenTimeIPCError(
                .notAuthorized,
                "\(account.name) is not authorized; run 'screentime authorize --child \(account.name)' first")
        }
        return account
    }

    private func shield(_ request: ShieldRequest, caller: Caller, context: RequestContext) throws -> StoreReply {
        let account = try storeOwner(request.target, caller: caller)
        let key = try storeKey(request.target, caller: caller)
        guard !request.isEmpty else {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "nothing to \(request.remove ? "unshield" : "shield"): give --app, --app-category, --domain, --web-category, --selection or (block) --app"
            )
        }
        // Resolve every name before touching the store: one unknown name changes nothing.
        var resolver = Resolver(service: self, account: account)
        var apps = Set(request.selection?.applicationTokens ?? [])
        var appCategories = Set(request.selection?.categoryTokens ?? [])
        var domains = Set(request.selection?.webDomainTokens ?? [])
        var webCategories = Set(request.selection?.categoryTokens ?? [])
        for text in request.applications { apps.insert(try resolver.application(text).0) }
        var blocked = Set<ApplicationToken>()
        for text in request.blockedApplications ?? [] { blocked.insert(try resolver.application(text).0) }
        for file in request.applicationFiles ?? [] {
            apps.insert(try resolver.application(file: file, context: context).0)
        }
        for file in request.blockedApplicationFiles ?? [] {
            blocked.insert(try resolver.application(file: file, context: context).0)
        }
        for text in request.applicationCategories { appCategories.insert(try resolver.applicationCategory(text)) }
        for text in request.webDomains { domains.insert(try resolver.webDomain(text).0) }
        for text in request.webCategories { webCategories.insert(try resolver.webCategory(text)) }

        let action =
            blocked.isEmpty ? (request.remove ? "unshielded" : "shielded") : (request.remove ? "unblocked" : "blocked")
        return try changeStore(account, key, by: caller, action: action, names: resolver.names) { collection in
            try collection.update(key) { settings in
                settings.application.blockedApplications = PolicyEdits.change(
                    settings.application.blockedApplications, blocked, remove: request.remove)
                settings.shield.applications = PolicyEdits.change(
                    settings.shield.applications, apps, remove: request.remove)
                settings.shield.webDomains = PolicyEdits.change(
                    settings.shield.webDomains, domains, remove: request.remove)
                settings.shield.applicationCategories = PolicyEdits.change(
                    settings.shield.applicationCategories, appCategories, remove: request.remove)
                settings.shield.webDomainCategories = PolicyEdits.change(
                    settings.shield.webDomainCategories, webCategories, remove: request.remove)
            }
        }
    }

    private func filter(_ request: FilterRequest, caller: Caller) throws -> StoreReply {
        let account = try storeOwner(request.target, caller: caller)
        let key = try storeKey(request.target, caller: caller)
        return try changeStore(
            account, key, by: caller, action: "web filter set", metadata: ["policy": "\(request.policy)"]
        ) { collection in
            try collection.update(key) { settings in
                settings.webContent.blockedByFilter = request.policy == .none ? nil : request.policy
            }
        }
    }

    func denyInstalls(_ request: DenyInstallsRequest, _ context: RequestContext) throws -> StoreReply {
        let caller = try caller(context)
        let account = try storeOwner(request.target, caller: caller)
        let key = try storeKey(request.target, caller: caller)
        return try changeStore(
            account, key, by: caller, action: request.deny ? "installs denied" : "installs allowed"
        ) { collection in
            try collection.update(key) { settings in
                settings.application.denyAppInstallation = request.deny ? true : nil
            }
        }
    }

    private func clear(_ request: StoreTarget, caller: Caller) throws -> StoreReply {
        let account = try storeOwner(request, caller: caller)
        let key = try storeKey(request, caller: caller)
        return try changeStore(account, key, by: caller, action: "cleared") { $0.clear(key) }
    }

    /// One store change, serialised with every other: read the user's stores, change them, write
    /// the store (and the names it uses), put it in force, log, and reply.
    func changeStore(
        _ account: UserAccount, _ key: StoreKey, by caller: Caller, action: String,
        names: [String: TokenName] = [:], metadata: Logger.Metadata = [:],
        _ change: (inout StoreCollection) throws -> Void
    ) throws -> StoreReply {
        let (collection, now) = try edits.changeStore(
            account, key, by: caller.account.name, action: action, names: names, metadata: metadata, change)
        let store = StoreReport(
            client: key.client.rawValue, name: key.name.rawValue, settings: collection[key], updatedAt: now)
        return StoreReply(
            user: summary(account), store: store, effective: Self.report(try inForce(collection, uid: account.uid)),
            names: try database.tokenNames(Self.tokens(in: [store])))
    }

    // MARK: reports

    /// The policy in force for the user now, grants lifting what they lift: what the shields
    /// enforce, which every reply reports.
    func inForce(_ stores: StoreCollection, uid: UInt32) throws -> EffectivePolicy {
        let now = Date()
        return stores.policyInForce(grants: try database.timeGrants(uid: uid, at: now), at: now)
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

    // MARK: resolving names to tokens

    /// Turns what a guardian typed into tokens, checking each name, and remembers the names.
    struct Resolver {
        let service: PolicyService
        let account: UserAccount
        var names: [String: TokenName] = [:]
        private var loadedCatalogue: ApplicationCatalogue?

        init(service: PolicyService, account: UserAccount) {
            self.service = service
            self.account = account
        }

        mutating func application(_ text: String) throws -> (ApplicationToken, TokenName) {
            let identity: ApplicationIdentity
            let display: String
            if text.hasPrefix("/") {
                // The agent reads no path for a caller (it is root: it could tell whether a file
                // exists, or hash a secret); the caller opens the program and passes it.
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "a program is passed as an open file, not by its path (\(text.prefix(200))); screentime does that")
            } else if text.hasPrefix("snap:") {
                identity = try .snap(name: String(text.dropFirst(5)))
                display = String(text.dropFirst(5))
            } else {
                let catalogue = loadedCatalogue ?? service.catalogue(for: account)
                loadedCatalogue = catalogue
                guard let item = catalogue.entry(id: text) else {
                    let near = catalogue.listed.filter {
                        $0.entry.id.localizedCaseInsensitiveContains(text)
                            || $0.entry.name.localizedCaseInsensitiveContains(text)
                    }.prefix(5).map(\.entry.id)
                    let hint =
                        near.isEmpty
                        ? "; 'screentime apps --user \(account.name)' lists them"
                        : "; did you mean \(near.joined(separator: ", "))?"
                    throw ScreenTimeIPCError(
                        .unknownApplication, "\(account.name) has no application '\(text.prefix(100))' installed\(hint)"
                    )
                }
                identity = item.entry.identity
                display = item.entry.name
            }
            let token = service.minter.token(for: identity)
            let name = TokenName(kind: .app, identity: identity.canonical, displayName: display)
            names[token.base64] = name
            return (token, name)
        }

        /// A program the caller opened and passed: known by the SHA-256 of its contents. Only a
        /// regular file of at most `ExecutableHashes.defaultSizeLimit` bytes, not on FUSE.
        mutating func application(file: FileArgument, context: RequestContext) throws -> (ApplicationToken, TokenName) {
            let fd = try context.descriptor(file)
            let name = String(file.path.split(separator: "/").last ?? Substring(file.path)).prefix(200)
            let identity: ApplicationIdentity
            do {
                try UntrustedFile.check(descriptor: fd, limit: ExecutableHashes.defaultSizeLimit, name: String(name))
                // From the start, whatever the caller read of it already.
                identity = try .executable(
                    sha256: try Files.sha256(descriptor: fd, path: String(name), fromStart: true))
            } catch let error as SystemError {
                throw ScreenTimeIPCError(.unknownApplication, "cannot read the program \(name): \(error.message)")
            }
            let token = service.minter.token(for: identity)
            let tokenName = TokenName(kind: .app, identity: identity.canonical, displayName: String(name))
            names[token.base64] = tokenName
            return (token, tokenName)
        }

        mutating func webDomain(_ text: String) throws -> (WebDomainToken, TokenName) {
            let domain = service.suffixes.webDomain(for: try DomainName(text))
            let token = service.minter.token(for: domain)
            let name = TokenName(kind: .domain, identity: domain.ascii, displayName: domain.unicode)
            names[token.base64] = name
            return (token, name)
        }

        mutating func applicationCategory(_ text: String) throws -> ActivityCategoryToken {
            let category = try CategoryName(text)
            let catalogue = loadedCatalogue ?? service.catalogue(for: account)
            loadedCatalogue = catalogue
            let known = Set(PolicyService.mainCategories.map { $0.lowercased() }).union(
                catalogue.entries.values.flatMap { $0.entry.categories.map { $0.lowercased() } })
            guard known.contains(category.name) else {
                throw ScreenTimeIPCError(
                    .unknownCategory,
                    "'\(text.prefix(64))' is not an app category; 'screentime categories' lists them (Game, Education, …)"
                )
            }
            let token = service.minter.token(for: category)
            names[token.base64] = TokenName(kind: .category, identity: category.name, displayName: text)
            return token
        }

        mutating func webCategory(_ text: String) throws -> ActivityCategoryToken {
            let category = try CategoryName(text)
            guard service.webCategoryNames().contains(category.name) else {
                throw ScreenTimeIPCError(
                    .unknownCategory,
                    "there is no web category '\(text.prefix(64))' (lists are \(service.configuration.categoriesDirectory)/NAME.list)"
                )
            }
            let token = service.minter.token(for: category)
            names[token.base64] = TokenName(kind: .category, identity: category.name, displayName: category.name)
            return token
        }
    }
}

/// The agent's version, reported by `ping`.
public enum AgentVersion {
    public static let current = "0.1.0"
}
