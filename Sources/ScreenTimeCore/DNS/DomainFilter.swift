/// One user's DNS filter: the web shields of an effective policy, turned into lookups by name so
/// that a query is judged in a few hash lookups, without minting a token per query.
///
/// It answers as `EffectivePolicy.webDomainShield` and `webContentFilter` do for the same name
/// (a test holds the two side by side): a shielded domain covers everything under it, a category
/// covers what its list holds, an exception covers everything under it. Names come straight off
/// the wire: labels of any bytes, in any case, so `\000x.example.com` and `WWW.EXAMPLE.COM` are
/// covered by a shield on `example.com`.
public struct DomainFilter: Sendable {
    /// Why a name is shielded.
    public enum Reason: String, Sendable, Codable, CaseIterable {
        /// `shield.webDomains`.
        case domain
        /// `shield.webDomainCategories`: a web category's list holds the name.
        case category
        /// `webContent.blockedByFilter`.
        case filter
        /// A way around the filter, shielded for every filtered user: Firefox's canary domain
        /// (answered NXDOMAIN so that Firefox keeps its DNS-over-HTTPS off) and the names of known
        /// DNS-over-HTTPS servers.
        case bypass
        /// While safe search is on: a search engine's version with no safe host, whose reader can
        /// turn safe search off (`SafeSearch.hasNoSafeVersion`).
        case safeSearch
    }

    public struct Verdict: Hashable, Sendable {
        public var reason: Reason
        /// The stores responsible, sorted; empty for `.bypass` and `.safeSearch`.
        public var stores: [StoreKey]
        /// The category whose list holds the name, for `.category`.
        public var category: ActivityCategoryToken?
    }

    /// Firefox's canary domain: a resolver that answers it NXDOMAIN tells Firefox not to turn on
    /// DNS over HTTPS by itself.
    public static let firefoxCanary = DNSName(validLabels: [Array("use-application-dns".utf8), Array("net".utf8)])

    private enum Categories {
        case all(except: Set<UInt64>)
        case specific([(ActivityCategoryToken, DomainList)], except: Set<UInt64>)
    }

    private enum Filter {
        case auto(blocked: Set<UInt64>, except: Set<UInt64>)
        case specific(Set<UInt64>)
        case all(except: Set<UInt64>)
    }

    private let shieldedDomains: [UInt64: [StoreKey]]
    private let categoryPolicies: [(StoreKey, Categories)]
    private let filters: [(StoreKey, Filter)]
    /// Granted domains (a child asked, a guardian said yes): past the filter.
    private let granted: Set<UInt64>
    private let adultList: DomainList
    private let bypassList: DomainList
    /// The safe versions of search and YouTube, when the policy forces them.
    public let safeSearch: SafeSearchLevel?

    /// Shielded domain tokens without a known name: they cannot be matched against queries.
    public let unnamedDomains: [WebDomainToken]
    /// Shielded categories without a list.
    public let categoriesWithoutList: [ActivityCategoryToken]

    /// - Parameters:
    ///   - names: the domain each web-domain token was minted from (shields and exceptions).
    ///   - categoryLists: each web category's list.
    ///   - adultList: what `.auto` filters besides the domains it names.
    ///   - bypassList: names shielded for every filtered user besides the canary domain.
    public init(
        policy: EffectivePolicy, names: [WebDomainToken: DomainName],
        categoryLists: [ActivityCategoryToken: DomainList], adultList: DomainList,
        bypassList: DomainList = DomainList([DomainName]())
    ) {
        safeSearch = policy.safeSearch
        var unnamed: Set<WebDomainToken> = []
        func hashes(_ tokens: Set<WebDomainToken>) -> Set<UInt64> {
            var result: Set<UInt64> = []
            for token in tokens {
                if let name = names[token] { result.insert(DomainList.hash(of: name)) } else { unnamed.insert(token) }
            }
            return result
        }
        var shielded: [UInt64: [StoreKey]] = [:]
        for (token, stores) in policy.webDomainsShieldedByToken {
            guard let name = names[token] else {
                unnamed.insert(token)
                continue
            }
            shielded[DomainList.hash(of: name), default: []] += stores
        }
        var missingLists: Set<ActivityCategoryToken> = []
        categoryPolicies = policy.webDomainCategoryShields.compactMap { store, policy in
            switch policy {
            case .none:
                return nil
            case .all(let exceptions):
                return (store, .all(except: hashes(exceptions)))
            case .specific(let categories, let exceptions):
                let lists = categories.sorted().compactMap { category -> (ActivityCategoryToken, DomainList)? in
                    guard let list = categoryLists[category] else {
                        missingLists.insert(category)
                        return nil
                    }
                    return (category, list)
                }
                return (store, .specific(lists, except: hashes(exceptions)))
            }
        }
        func hashes(_ domains: Set<DomainName>) -> Set<UInt64> { Set(domains.map(DomainList.hash(of:))) }
        filters = policy.webContentFilters.compactMap { store, policy in
            switch policy {
            case .none: nil
            case .auto(let blocked, let exceptions):
                (store, .auto(blocked: hashes(blocked), except: hashes(exceptions)))
            case .specific(let blocked): (store, .specific(hashes(blocked)))
            case .all(let exceptions): (store, .all(except: hashes(exceptions)))
            }
        }
        shieldedDomains = shielded
        granted = hashes(policy.grantedWebDomains)
        self.adultList = adultList
        self.bypassList = bypassList
        unnamedDomains = unnamed.sorted()
        categoriesWithoutList = missingLists.sorted()
    }

    /// Whether the policy shields no web domain, category or content (bypass names still are).
    public var shieldsNothing: Bool { shieldedDomains.isEmpty && categoryPolicies.isEmpty && filters.isEmpty }

    /// The safe host a lookup of `name` is answered with (an alias), when safe search is forced
    /// and the name is a search engine's or YouTube's; a shield on the name comes first.
    public func safeSearchTarget(for name: DNSName) -> DNSName? {
        safeSearch.flatMap { SafeSearch.target(for: name, level: $0) }
    }

    /// Why a name is shielded, or nil if it is not.
    public func verdict(for name: DNSName) -> Verdict? {
        let suffixes = DomainList.suffixHashes(of: name)
        if name.labels.count == 2, name.lowercased == Self.firefoxCanary { return Verdict(reason: .bypass, stores: []) }
        if bypassList.contains(suffixHashes: suffixes) { return Verdict(reason: .bypass, stores: []) }
        if safeSearch != nil, SafeSearch.hasNoSafeVersion(name) { return Verdict(reason: .safeSearch, stores: []) }

        var stores: [StoreKey] = []
        for hash in suffixes { stores += shieldedDomains[hash] ?? [] }
        if !stores.isEmpty { return Verdict(reason: .domain, stores: Self.unique(stores)) }

        var category: ActivityCategoryToken?
        for (store, policy) in categoryPolicies {
            switch policy {
            case .all(let exceptions):
                if !suffixes.contains(where: exceptions.contains) { stores.append(store) }
            case .specific(let lists, let exceptions):
                guard !suffixes.contains(where: exceptions.contains) else { continue }
                if let match = lists.first(where: { $0.1.contains(suffixHashes: suffixes) }) {
                    stores.append(store)
                    category = category ?? match.0
                }
            }
        }
        if !stores.isEmpty { return Verdict(reason: .category, stores: Self.unique(stores), category: category) }

        if !granted.isEmpty, suffixes.contains(where: granted.contains) { return nil }
        var isAdult: Bool?
        for (store, filter) in filters {
            let blocks: Bool
            switch filter {
            case .auto(let blocked, let exceptions):
                if suffixes.contains(where: exceptions.contains) {
                    blocks = false
                } else if suffixes.contains(where: blocked.contains) {
                    blocks = true
                } else {
                    let adult = isAdult ?? adultList.contains(suffixHashes: suffixes)
                    isAdult = adult
                    blocks = adult
                }
            case .specific(let blocked):
                blocks = suffixes.contains(where: blocked.contains)
            case .all(let exceptions):
                blocks = !suffixes.contains(where: exceptions.contains)
            }
            if blocks { stores.append(store) }
        }
        if !stores.isEmpty { return Verdict(reason: .filter, stores: Self.unique(stores)) }
        return nil
    }

    /// The verdict on the first shielded question of a message, nil if none is shielded.
    public func verdict(for message: DNSMessage) -> (question: DNSMessage.Question, verdict: Verdict)? {
        for question in message.questions {
            if let verdict = verdict(for: question.name) { return (question, verdict) }
        }
        return nil
    }

    private static func unique(_ keys: [StoreKey]) -> [StoreKey] {
        keys.count <= 1 ? keys : Array(Set(keys)).sorted()
    }
}
