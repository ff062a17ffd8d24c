/// Which categories a category shield covers (Apple's `ShieldSettings.ActivityCategoryPolicy`).
///
/// `Kind` is what the exceptions are: applications for `shield.applicationCategories`, web
/// domains for `shield.webDomainCategories`.
public enum ActivityCategoryPolicy<Kind: TokenKind>: Hashable, Sendable {
    /// Shields nothing.
    case none
    /// Shields every category, except the listed applications or domains.
    case all(except: Set<Token<Kind>> = [])
    /// Shields the listed categories, except the listed applications or domains.
    case specific(Set<ActivityCategoryToken>, except: Set<Token<Kind>> = [])

    /// Whether an item of these categories is shielded by this policy.
    public func covers(_ item: Token<Kind>, categories: Set<ActivityCategoryToken>) -> Bool {
        switch self {
        case .none: false
        case .all(let exceptions): !exceptions.contains(item)
        case .specific(let shielded, let exceptions):
            !exceptions.contains(item) && !shielded.isDisjoint(with: categories)
        }
    }

    /// The categories a `.specific` policy shields; empty for `.none` and `.all`.
    public var categories: Set<ActivityCategoryToken> {
        if case .specific(let categories, _) = self { return categories }
        return []
    }

    /// The applications or domains excepted from the policy.
    public var exceptions: Set<Token<Kind>> {
        switch self {
        case .none: []
        case .all(let exceptions), .specific(_, let exceptions): exceptions
        }
    }

    /// The same policy with more exceptions (granted tokens).
    public func excepting(_ more: Set<Token<Kind>>) -> Self {
        guard !more.isEmpty else { return self }
        switch self {
        case .none: return .none
        case .all(let exceptions): return .all(except: exceptions.union(more))
        case .specific(let categories, let exceptions): return .specific(categories, except: exceptions.union(more))
        }
    }

    /// The policy's name on the wire and in reports: `none`, `all` or `specific`.
    public var name: String {
        switch self {
        case .none: "none"
        case .all: "all"
        case .specific: "specific"
        }
    }
}

extension ActivityCategoryPolicy: Codable {
    private enum CodingKeys: String, CodingKey { case policy, categories, except }
    private enum Policy: String, Codable { case none, all, specific }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let except = try container.decodeIfPresent(Set<Token<Kind>>.self, forKey: .except) ?? []
        switch try container.decode(Policy.self, forKey: .policy) {
        case .none: self = .none
        case .all: self = .all(except: except)
        case .specific: self = .specific(try container.decode(Set.self, forKey: .categories), except: except)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .none:
            try container.encode(Policy.none, forKey: .policy)
        case .all(let except):
            try container.encode(Policy.all, forKey: .policy)
            try container.encode(except.sorted(), forKey: .except)
        case .specific(let categories, let except):
            try container.encode(Policy.specific, forKey: .policy)
            try container.encode(categories.sorted(), forKey: .categories)
            try container.encode(except.sorted(), forKey: .except)
        }
    }
}
