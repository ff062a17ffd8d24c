/// What a guardian picked: applications, categories and web domains, as tokens.
///
/// The JSON form is stable across versions: the four keys below, token sets as arrays sorted by
/// token, missing keys read as empty, unknown keys ignored — so a selection saved by an older or a
/// newer `screentime pick` still reads.
public struct FamilyActivitySelection: Hashable, Sendable, Codable {
    public var applicationTokens: Set<ApplicationToken>
    public var categoryTokens: Set<ActivityCategoryToken>
    public var webDomainTokens: Set<WebDomainToken>
    /// Whether picking a category means everything in it, including what is installed later.
    public var includeEntireCategory: Bool

    public init(
        applicationTokens: Set<ApplicationToken> = [],
        categoryTokens: Set<ActivityCategoryToken> = [],
        webDomainTokens: Set<WebDomainToken> = [],
        includeEntireCategory: Bool = false
    ) {
        self.applicationTokens = applicationTokens
        self.categoryTokens = categoryTokens
        self.webDomainTokens = webDomainTokens
        self.includeEntireCategory = includeEntireCategory
    }

    /// Nothing picked.
    public var isEmpty: Bool { applicationTokens.isEmpty && categoryTokens.isEmpty && webDomainTokens.isEmpty }

    private enum CodingKeys: String, CodingKey {
        case applicationTokens, categoryTokens, webDomainTokens, includeEntireCategory
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        applicationTokens = try container.decodeIfPresent(Set.self, forKey: .applicationTokens) ?? []
        categoryTokens = try container.decodeIfPresent(Set.self, forKey: .categoryTokens) ?? []
        webDomainTokens = try container.decodeIfPresent(Set.self, forKey: .webDomainTokens) ?? []
        includeEntireCategory = try container.decodeIfPresent(Bool.self, forKey: .includeEntireCategory) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(applicationTokens.sorted(), forKey: .applicationTokens)
        try container.encode(categoryTokens.sorted(), forKey: .categoryTokens)
        try container.encode(webDomainTokens.sorted(), forKey: .webDomainTokens)
        try container.encode(includeEntireCategory, forKey: .includeEntireCategory)
    }
}
