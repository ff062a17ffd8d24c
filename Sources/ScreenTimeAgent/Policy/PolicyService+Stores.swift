import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

// Changing stores.
extension PolicyService {
    func storeKey(_ request: StoreTarget, caller: Caller) throws -> StoreKey {
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

    func shield(_ request: ShieldRequest, caller: Caller, context: RequestContext) throws -> StoreReply {
        let account = try storeOwner(request.target, caller: caller)
        let key = try storeKey(request.target, caller: caller)
        guard !request.isEmpty else {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "nothing to \(request.remove ? "unshield" : "shield"): give --app, --app-category, --domain, --web-category, --service, --selection or (block) --app"
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
        // A service is a category of apps and of domains at once.
        for text in request.services ?? [] {
            let token = try resolver.service(text)
            appCategories.insert(token)
            webCategories.insert(token)
        }

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

    func filter(_ request: FilterRequest, caller: Caller) throws -> StoreReply {
        let account = try storeOwner(request.target, caller: caller)
        let key = try storeKey(request.target, caller: caller)
        guard request.policy != nil || request.safeSearch != nil else {
            throw ScreenTimeIPCError(
                .invalidArgument, "nothing to set: give a filter (auto, specific, all, none) or --safe-search")
        }
        var metadata: Logger.Metadata = [:]
        if let policy = request.policy { metadata["policy"] = "\(policy)" }
        if let choice = request.safeSearch { metadata["safeSearch"] = "\(choice.rawValue)" }
        return try changeStore(account, key, by: caller, action: "web filter set", metadata: metadata) { collection in
            try collection.update(key) { settings in
                if let policy = request.policy { settings.webContent.blockedByFilter = policy == .none ? nil : policy }
                if let choice = request.safeSearch { settings.webContent.safeSearch = choice.level }
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

    func clear(_ request: StoreTarget, caller: Caller) throws -> StoreReply {
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
}
