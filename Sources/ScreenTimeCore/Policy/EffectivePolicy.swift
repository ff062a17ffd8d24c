/// The merge of every store in force for one user, most restrictive wins.
///
/// Each store is judged on its own and the answers are joined: a shield set by any store applies,
/// and an exception in one store only narrows that store's own category or filter policy, never a
/// shield set by another store. Every query answers with the stores responsible (sorted), which is
/// what the shield message shows; an empty answer means "not shielded".
///
/// Token sets are indexed once here, so a query costs a few hash lookups plus one pass over the
/// category and filter policies (at most one of each per store).
public struct EffectivePolicy: Sendable {
    private let shieldedApplications: [ApplicationToken: [StoreKey]]
    private let blockedApplications: [ApplicationToken: [StoreKey]]
    private let shieldedWebDomains: [WebDomainToken: [StoreKey]]
    private let applicationCategoryPolicies: [(StoreKey, ActivityCategoryPolicy<Application>)]
    private let webDomainCategoryPolicies: [(StoreKey, ActivityCategoryPolicy<WebDomain>)]
    private let filterPolicies: [(StoreKey, FilterPolicy)]

    /// The stores that deny installing applications.
    public let appInstallationDenied: [StoreKey]
    /// The safe versions of search and YouTube, the strictest any store asks for; nil when none does.
    public let safeSearch: SafeSearchLevel?
    /// Domains a guardian granted for now (or always): no shield and no web-content filter
    /// refuses them, or what is under them.
    public let grantedWebDomains: Set<WebDomainToken>

    /// - Parameters:
    ///   - grantedApplications, grantedWebDomains: tokens whose shields are lifted for now (a
    ///     guardian granted more time): no store's shield applies to them, by token or by
    ///     category. Blocks still do. A granted domain is let past the web-content filter too:
    ///     a child asked for that site, and a guardian said yes.
    public init(
        stores: [StoreKey: StoreSettings], grantedApplications: Set<ApplicationToken> = [],
        grantedWebDomains: Set<WebDomainToken> = []
    ) {
        var shieldedApplications: [ApplicationToken: [StoreKey]] = [:]
        var blockedApplications: [ApplicationToken: [StoreKey]] = [:]
        var shieldedWebDomains: [WebDomainToken: [StoreKey]] = [:]
        var applicationCategoryPolicies: [(StoreKey, ActivityCategoryPolicy<Application>)] = []
        var webDomainCategoryPolicies: [(StoreKey, ActivityCategoryPolicy<WebDomain>)] = []
        var filterPolicies: [(StoreKey, FilterPolicy)] = []
        var appInstallationDenied: [StoreKey] = []
        var safeSearch: SafeSearchLevel?

        for (key, settings) in stores.sorted(by: { $0.key < $1.key }) {
            for token in settings.shield.applications ?? [] where !grantedApplications.contains(token) {
                shieldedApplications[token, default: []].append(key)
            }
            for token in settings.application.blockedApplications ?? [] {
                blockedApplications[token, default: []].append(key)
            }
            for token in settings.shield.webDomains ?? [] where !grantedWebDomains.contains(token) {
                shieldedWebDomains[token, default: []].append(key)
            }
            if let policy = settings.shield.applicationCategories, policy != .none {
                applicationCategoryPolicies.append((key, policy.excepting(grantedApplications)))
            }
            if let policy = settings.shield.webDomainCategories, policy != .none {
                webDomainCategoryPolicies.append((key, policy.excepting(grantedWebDomains)))
            }
            if let policy = settings.webContent.blockedByFilter, policy != .none {
                filterPolicies.append((key, policy))
            }
            if settings.application.denyAppInstallation == true { appInstallationDenied.append(key) }
            if let level = settings.webContent.safeSearch { safeSearch = max(safeSearch ?? level, level) }
        }
        self.shieldedApplications = shieldedApplications
        self.blockedApplications = blockedApplications
        self.shieldedWebDomains = shieldedWebDomains
        self.applicationCategoryPolicies = applicationCategoryPolicies
        self.webDomainCategoryPolicies = webDomainCategoryPolicies
        self.filterPolicies = filterPolicies
        self.appInstallationDenied = appInstallationDenied
        self.safeSearch = safeSearch
        self.grantedWebDomains = grantedWebDomains
    }

    /// Whether no store shields, blocks or filters anything.
    public var isEmpty: Bool {
        shieldedApplications.isEmpty && blockedApplications.isEmpty && shieldedWebDomains.isEmpty
            && applicationCategoryPolicies.isEmpty && webDomainCategoryPolicies.isEmpty && filterPolicies.isEmpty
            && appInstallationDenied.isEmpty && safeSearch == nil
    }

    /// The stores that shield an application, by its token or by one of its categories.
    public func applicationShield(
        for application: ApplicationToken, categories: Set<ActivityCategoryToken>
    )
        -> [StoreKey]
    {
        var keys = shieldedApplications[application] ?? []
        for (key, policy) in applicationCategoryPolicies
        where policy.covers(application, categories: categories) {
            keys.append(key)
        }
        return Self.unique(keys)
    }

    /// The stores that block an application from running at all.
    public func applicationBlock(for application: ApplicationToken) -> [StoreKey] {
        blockedApplications[application] ?? []
    }

    /// The stores that shield a domain. `candidates` are the tokens of the names whose shield
    /// covers it (`PublicSuffixList.shieldCandidates(for:)`, minted); `categories` are the web
    /// categories whose lists hold it.
    public func webDomainShield(
        for candidates: [WebDomainToken], categories: Set<ActivityCategoryToken>
    )
        -> [StoreKey]
    {
        var keys = candidates.flatMap { shieldedWebDomains[$0] ?? [] }
        for (key, policy) in webDomainCategoryPolicies {
            switch policy {
            case .none:
                continue
            case .all(let exceptions):
                if exceptions.isDisjoint(with: candidates) { keys.append(key) }
            case .specific(let shielded, let exceptions):
                if exceptions.isDisjoint(with: candidates), !shielded.isDisjoint(with: categories) { keys.append(key) }
            }
        }
        return Self.unique(keys)
    }

    /// The stores whose web-content filter blocks a name. `isAdult` says whether the name is on the
    /// adult list that `.auto` filters; `candidates` are the tokens of the name and the domains
    /// above it (`PublicSuffixList.shieldCandidates(for:)`, minted): one granted lets it past.
    public func webContentFilter(
        for name: DomainName, isAdult: Bool, candidates: [WebDomainToken] = []
    ) -> [StoreKey] {
        guard grantedWebDomains.isDisjoint(with: candidates) else { return [] }
        return filterPolicies.filter { $0.1.blocks(name, isAdult: isAdult) }.map(\.0)
    }

    /// Every application token shielded by token, with its stores.
    public var applicationsShieldedByToken: [ApplicationToken: [StoreKey]] { shieldedApplications }
    /// Every application token blocked, with its stores.
    public var applicationsBlocked: [ApplicationToken: [StoreKey]] { blockedApplications }
    /// Every web-domain token shielded by token, with its stores.
    public var webDomainsShieldedByToken: [WebDomainToken: [StoreKey]] { shieldedWebDomains }
    /// The category policies for applications in force, by store.
    public var applicationCategoryShields: [(store: StoreKey, policy: ActivityCategoryPolicy<Application>)] {
        applicationCategoryPolicies.map { (store: $0.0, policy: $0.1) }
    }
    /// The category policies for web domains in force, by store.
    public var webDomainCategoryShields: [(store: StoreKey, policy: ActivityCategoryPolicy<WebDomain>)] {
        webDomainCategoryPolicies.map { (store: $0.0, policy: $0.1) }
    }
    /// The web-content filters in force, by store.
    public var webContentFilters: [(store: StoreKey, policy: FilterPolicy)] {
        filterPolicies.map { (store: $0.0, policy: $0.1) }
    }

    private static func unique(_ keys: [StoreKey]) -> [StoreKey] {
        keys.count <= 1 ? keys : Array(Set(keys)).sorted()
    }
}
