/// One user's application shields, ready to judge processes: the effective policy, the user's
/// installed applications, and tokens minted once per application seen.
///
/// A process is judged by every application it can be taken for (`ApplicationIndex.identities`):
/// blocked if any is blocked, else shielded if any is shielded — by its token, or by its
/// categories when it is a desktop application shown in menus. The most restrictive wins, as
/// between stores.
public struct ApplicationFilter: Sendable {
    public enum Action: String, Sendable, Hashable, Codable {
        /// The process is frozen until the shield is lifted.
        case shield
        /// The application may not run at all (`application.blockedApplications`).
        case block
    }

    public struct Verdict: Sendable, Hashable {
        public var action: Action
        /// The application the verdict is for, and its token.
        public var application: ApplicationIdentity
        public var token: ApplicationToken
        /// The stores responsible.
        public var stores: [StoreKey]
    }

    public let policy: EffectivePolicy
    public let index: ApplicationIndex
    private let minter: TokenMinter
    private let categoryTokens: [ApplicationIdentity: Set<ActivityCategoryToken>]

    /// - Parameter services: the service categories of the apps the service catalogue names
    ///   (`ServiceCatalogue.categoriesByApplication`), added to their own categories (a service's
    ///   app is, like any category's, a desktop application menus list).
    public init(
        policy: EffectivePolicy, index: ApplicationIndex, minter: TokenMinter,
        services: [ApplicationIdentity: Set<CategoryName>] = [:]
    ) {
        self.policy = policy
        self.index = index
        self.minter = minter
        var categoryTokens: [ApplicationIdentity: Set<ActivityCategoryToken>] = [:]
        if !policy.applicationCategoryShields.isEmpty {
            for identity in index.listedIdentities {
                let categories = (index.application(identity)?.categories ?? []).union(services[identity] ?? [])
                categoryTokens[identity] = Set(categories.map(minter.token(for:)))
            }
        }
        self.categoryTokens = categoryTokens
    }

    /// Whether the policy shields or blocks any application at all; when not, no process needs a look.
    public var isEmpty: Bool {
        policy.applicationsShieldedByToken.isEmpty && policy.applicationsBlocked.isEmpty
            && policy.applicationCategoryShields.isEmpty
    }

    /// The indexed programs that are blocked as themselves (by their entry or their content):
    /// their execs can be refused before they run.
    public var blockedPrograms: [String] {
        guard !policy.applicationsBlocked.isEmpty else { return [] }
        return index.programsByPath.values.filter { blocks(path: $0.path, sha256: $0.sha256) }.map(\.path).sorted()
    }

    /// The indexed programs that are shielded or blocked as themselves, with the verdict on each:
    /// the exec gate holds their execs before they run and refuses the child every other open
    /// of them (a loader mapping one, a copy being made).
    public var programVerdicts: [String: Verdict] {
        guard !isEmpty else { return [:] }
        var verdicts: [String: Verdict] = [:]
        for program in index.programsByPath.values {
            let identities = index.identities(
                of: ProcessEvidence(executablePath: program.path, executableHash: program.sha256))
            if let verdict = verdict(for: identities) { verdicts[program.path] = verdict }
        }
        return verdicts
    }

    /// Whether the program at a path, with this content, is blocked as itself (not for what ran it).
    public func blocks(path: String?, sha256: String?) -> Bool { block(path: path, sha256: sha256) != nil }

    /// The block on the program at a path, with this content, as itself; nil if it may run.
    public func block(path: String?, sha256: String?) -> Verdict? {
        let identities = index.identities(of: ProcessEvidence(executablePath: path, executableHash: sha256))
        return verdict(for: identities).flatMap { $0.action == .block ? $0 : nil }
    }

    /// The token of an application, as the policy names it.
    public func token(for identity: ApplicationIdentity) -> ApplicationToken { minter.token(for: identity) }

    /// The verdict on a process taken for these applications (best first); nil lets it run.
    public func verdict(for identities: [ApplicationIdentity]) -> Verdict? {
        var shield: Verdict?
        for identity in identities {
            let token = minter.token(for: identity)
            let blocked = policy.applicationBlock(for: token)
            if !blocked.isEmpty {
                return Verdict(action: .block, application: identity, token: token, stores: blocked)
            }
            guard shield == nil else { continue }
            let stores: [StoreKey]
            if let categories = categoryTokens[identity] {
                stores = policy.applicationShield(for: token, categories: categories)
            } else {
                stores = policy.applicationsShieldedByToken[token] ?? []
            }
            if !stores.isEmpty {
                shield = Verdict(action: .shield, application: identity, token: token, stores: stores)
            }
        }
        return shield
    }
}
