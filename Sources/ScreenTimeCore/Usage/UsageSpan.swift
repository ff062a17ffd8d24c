public import FoundationEssentials

/// What was in use: an application in the foreground, or a web domain in the foreground browser.
public enum UsageSubject: Hashable, Sendable, Codable {
    case application(ApplicationToken)
    case webDomain(WebDomainToken)
}

/// One stretch of foreground use, with the categories of what was used.
public struct UsageSpan: Hashable, Sendable, Codable {
    public let subject: UsageSubject
    public let categories: Set<ActivityCategoryToken>
    public let start: Date
    public let end: Date

    public init(
        _ subject: UsageSubject, categories: Set<ActivityCategoryToken> = [], start: Date, end: Date
    )
        throws(ScreenTimeCoreError)
    {
        guard start.timeIntervalSinceReferenceDate.isFinite, end.timeIntervalSinceReferenceDate.isFinite, end >= start
        else {
            throw ScreenTimeCoreError(.invalidUsageSpan, "a usage span ends at or after its start (\(start) to \(end))")
        }
        self.subject = subject
        self.categories = categories
        self.start = start
        self.end = end
    }

    public var duration: TimeInterval { end.timeIntervalSince(start) }
}

/// Which usage counts: spans of the listed applications or web domains, or of anything in the
/// listed categories. `everything` counts all.
public struct UsageFilter: Hashable, Sendable {
    public static let everything = UsageFilter(matchesEverything: true)

    public var applications: Set<ApplicationToken> = []
    public var categories: Set<ActivityCategoryToken> = []
    public var webDomains: Set<WebDomainToken> = []
    private var matchesEverything = false

    public init(
        applications: Set<ApplicationToken> = [], categories: Set<ActivityCategoryToken> = [],
        webDomains: Set<WebDomainToken> = []
    ) {
        self.applications = applications
        self.categories = categories
        self.webDomains = webDomains
    }

    private init(matchesEverything: Bool) { self.matchesEverything = matchesEverything }

    public func matches(_ span: UsageSpan) -> Bool {
        if matchesEverything { return true }
        switch span.subject {
        case .application(let token): if applications.contains(token) { return true }
        case .webDomain(let token): if webDomains.contains(token) { return true }
        }
        return !categories.isDisjoint(with: span.categories)
    }
}
