/// The `shield` group of a store (Apple's `ShieldSettings`). Nil means "not set by this store".
public struct ShieldSettings: Hashable, Sendable, Codable {
    public var applications: Set<ApplicationToken>?
    public var applicationCategories: ActivityCategoryPolicy<Application>?
    public var webDomains: Set<WebDomainToken>?
    public var webDomainCategories: ActivityCategoryPolicy<WebDomain>?

    public init(
        applications: Set<ApplicationToken>? = nil,
        applicationCategories: ActivityCategoryPolicy<Application>? = nil,
        webDomains: Set<WebDomainToken>? = nil,
        webDomainCategories: ActivityCategoryPolicy<WebDomain>? = nil
    ) {
        self.applications = applications
        self.applicationCategories = applicationCategories
        self.webDomains = webDomains
        self.webDomainCategories = webDomainCategories
    }
}

/// The `application` group of a store (Apple's `ApplicationSettings`).
public struct ApplicationSettings: Hashable, Sendable, Codable {
    /// Applications that may not run at all (not shielded: refused).
    public var blockedApplications: Set<ApplicationToken>?
    /// Whether installing applications is refused.
    public var denyAppInstallation: Bool?

    public init(blockedApplications: Set<ApplicationToken>? = nil, denyAppInstallation: Bool? = nil) {
        self.blockedApplications = blockedApplications
        self.denyAppInstallation = denyAppInstallation
    }
}

/// The `webContent` group of a store (Apple's `WebContentSettings`).
public struct WebContentSettings: Hashable, Sendable, Codable {
    public var blockedByFilter: FilterPolicy?
    /// The safe versions of search and YouTube, forced at the name (not one of Apple's settings:
    /// Safari's own restrictions do it there).
    public var safeSearch: SafeSearchLevel?

    public init(blockedByFilter: FilterPolicy? = nil, safeSearch: SafeSearchLevel? = nil) {
        self.blockedByFilter = blockedByFilter
        self.safeSearch = safeSearch
    }
}

/// Everything one named store sets (what a `ManagedSettingsStore` holds).
public struct StoreSettings: Hashable, Sendable, Codable {
    /// Apple's limit on the tokens or domains of one setting.
    public static var maximumTokens: Int { 50 }
    /// Apple's limit on the exceptions of one setting.
    public static var maximumExceptions: Int { 50 }

    public var shield: ShieldSettings
    public var application: ApplicationSettings
    public var webContent: WebContentSettings

    public init(
        shield: ShieldSettings = ShieldSettings(),
        application: ApplicationSettings = ApplicationSettings(),
        webContent: WebContentSettings = WebContentSettings()
    ) {
        self.shield = shield
        self.application = application
        self.webContent = webContent
    }

    /// Whether the store sets nothing at all.
    public var isEmpty: Bool { self == StoreSettings() }

    /// Unsets every setting of the store.
    public mutating func clearAllSettings() {
        self = StoreSettings()
    }

    private enum CodingKeys: String, CodingKey { case shield, application, webContent }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        shield = try container.decodeIfPresent(ShieldSettings.self, forKey: .shield) ?? ShieldSettings()
        application =
            try container.decodeIfPresent(ApplicationSettings.self, forKey: .application) ?? ApplicationSettings()
        webContent = try container.decodeIfPresent(WebContentSettings.self, forKey: .webContent) ?? WebContentSettings()
    }

    /// Checks Apple's limits: at most 50 tokens (or domains) and 50 exceptions in each setting.
    /// The error names the setting and its count.
    public func validate() throws(ScreenTimeCoreError) {
        try Self.check(shield.applications?.count, "shield.applications", .tooManyTokens)
        try Self.check(shield.webDomains?.count, "shield.webDomains", .tooManyTokens)
        try Self.check(application.blockedApplications?.count, "application.blockedApplications", .tooManyTokens)
        try Self.check(shield.applicationCategories?.categories.count, "shield.applicationCategories", .tooManyTokens)
        try Self.check(
            shield.applicationCategories?.exceptions.count, "shield.applicationCategories", .tooManyExceptions)
        try Self.check(shield.webDomainCategories?.categories.count, "shield.webDomainCategories", .tooManyTokens)
        try Self.check(shield.webDomainCategories?.exceptions.count, "shield.webDomainCategories", .tooManyExceptions)
        switch webContent.blockedByFilter {
        case .auto(let domains, let except):
            try Self.check(domains.count, "webContent.blockedByFilter", .tooManyTokens)
            try Self.check(except.count, "webContent.blockedByFilter", .tooManyExceptions)
        case .specific(let domains):
            try Self.check(domains.count, "webContent.blockedByFilter", .tooManyTokens)
        case .all(let except):
            try Self.check(except.count, "webContent.blockedByFilter", .tooManyExceptions)
        case .some(.none), nil:
            break
        }
    }

    private static func check(
        _ count: Int?, _ setting: String, _ code: ScreenTimeCoreError.Code
    )
        throws(ScreenTimeCoreError)
    {
        let limit = code == .tooManyExceptions ? maximumExceptions : maximumTokens
        guard let count, count > limit else { return }
        let what = code == .tooManyExceptions ? "exceptions" : "items"
        throw ScreenTimeCoreError(code, "\(setting) has \(count) \(what); a store may hold at most \(limit)")
    }
}

extension ShieldSettings {
    /// Apple's spelling of a category shield's policy: `ShieldSettings.ActivityCategoryPolicy<Application>`.
    public typealias ActivityCategoryPolicy<Kind: TokenKind> = ScreenTimeCore.ActivityCategoryPolicy<Kind>
}
