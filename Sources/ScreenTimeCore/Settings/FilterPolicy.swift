/// How web content is filtered (Apple's `WebContentSettings.FilterPolicy`).
///
/// Filters name domains, not tokens, as Apple's do: the filter has to match names in DNS queries.
/// A listed domain covers everything under it.
public enum FilterPolicy: Hashable, Sendable {
    /// Filters nothing.
    case none
    /// Blocks adult content (the shipped adult list) and the given domains, except the exceptions,
    /// which override both.
    case auto(Set<DomainName> = [], except: Set<DomainName> = [])
    /// Blocks the given domains.
    case specific(Set<DomainName>)
    /// Blocks every domain except the exceptions.
    case all(except: Set<DomainName> = [])

    /// Whether this policy blocks `name`. `isAdult` says whether the name is on the adult list.
    public func blocks(_ name: DomainName, isAdult: Bool) -> Bool {
        switch self {
        case .none:
            false
        case .auto(let blocked, let exceptions):
            (isAdult || blocked.contains { name.isWithin($0) }) && !exceptions.contains { name.isWithin($0) }
        case .specific(let blocked):
            blocked.contains { name.isWithin($0) }
        case .all(let exceptions):
            !exceptions.contains { name.isWithin($0) }
        }
    }
}

extension FilterPolicy: Codable {
    private enum CodingKeys: String, CodingKey { case policy, domains, except }
    private enum Policy: String, Codable { case none, auto, specific, all }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let domains = try container.decodeIfPresent(Set<DomainName>.self, forKey: .domains) ?? []
        let except = try container.decodeIfPresent(Set<DomainName>.self, forKey: .except) ?? []
        switch try container.decode(Policy.self, forKey: .policy) {
        case .none: self = .none
        case .auto: self = .auto(domains, except: except)
        case .specific: self = .specific(domains)
        case .all: self = .all(except: except)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .none:
            try container.encode(Policy.none, forKey: .policy)
        case .auto(let domains, let except):
            try container.encode(Policy.auto, forKey: .policy)
            try container.encode(domains.sorted(), forKey: .domains)
            try container.encode(except.sorted(), forKey: .except)
        case .specific(let domains):
            try container.encode(Policy.specific, forKey: .policy)
            try container.encode(domains.sorted(), forKey: .domains)
        case .all(let except):
            try container.encode(Policy.all, forKey: .policy)
            try container.encode(except.sorted(), forKey: .except)
        }
    }
}
