public import Foundation

/// Usage to watch for during an activity's intervals (Apple's `DeviceActivityEvent`): the event is
/// reached when the applications, categories and web domains together have been used for
/// `threshold` within one interval.
public struct DeviceActivityEvent: Hashable, Sendable, Codable {
    /// The name of an event (Apple's `DeviceActivityEvent.Name`): 1 to 128 characters, no control
    /// characters, checked as an activity's name is.
    public struct Name: CheckedName {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }

    public var applications: Set<ApplicationToken>
    public var categories: Set<ActivityCategoryToken>
    public var webDomains: Set<WebDomainToken>
    /// The usage that reaches the event, as a duration (`DateComponents(hour: 1, minute: 30)`).
    public var threshold: DateComponents
    /// Whether usage in the interval from before monitoring started counts.
    public var includesPastActivity: Bool
    /// Whether every use counts: any application, web domain and login session, once however
    /// many are in use at once (the whole day's screen time). Not Apple's: the agent's own
    /// screen-time limit uses it; the items above are then empty.
    public var allActivity = false

    public init(
        applications: Set<ApplicationToken> = [],
        categories: Set<ActivityCategoryToken> = [],
        webDomains: Set<WebDomainToken> = [],
        threshold: DateComponents,
        includesPastActivity: Bool = false
    ) {
        self.applications = applications
        self.categories = categories
        self.webDomains = webDomains
        self.threshold = threshold
        self.includesPastActivity = includesPastActivity
    }

    /// The threshold as a duration, after `validate()`.
    public var thresholdDuration: TimeInterval { threshold.durationValue ?? 0 }

    /// What usage counts toward the event.
    public var usageFilter: UsageFilter {
        if allActivity { return .everything }
        return UsageFilter(applications: applications, categories: categories, webDomains: webDomains)
    }

    /// Checks the threshold (a positive duration of at most a week) and the token limits.
    public func validate() throws(ScreenTimeCoreError) {
        guard let duration = threshold.durationValue, duration > 0, duration <= DeviceActivitySchedule.maximumInterval
        else {
            throw ScreenTimeCoreError(
                .invalidThreshold,
                "an event's threshold is a duration of days, hours, minutes and seconds above zero and up to a week"
            )
        }
        for (count, what) in [
            (applications.count, "applications"), (categories.count, "categories"), (webDomains.count, "webDomains"),
        ]
        where count > StoreSettings.maximumTokens {
            throw ScreenTimeCoreError(
                .tooManyTokens,
                "an event's \(what) has \(count) tokens; it may hold at most \(StoreSettings.maximumTokens)"
            )
        }
    }

    private enum CodingKeys: String, CodingKey {
        case applications, categories, webDomains, threshold, includesPastActivity, allActivity
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        applications = try container.decodeIfPresent(Set.self, forKey: .applications) ?? []
        categories = try container.decodeIfPresent(Set.self, forKey: .categories) ?? []
        webDomains = try container.decodeIfPresent(Set.self, forKey: .webDomains) ?? []
        threshold = try container.decode(CodableComponents.self, forKey: .threshold).components
        includesPastActivity = try container.decodeIfPresent(Bool.self, forKey: .includesPastActivity) ?? false
        allActivity = try container.decodeIfPresent(Bool.self, forKey: .allActivity) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(applications.sorted(), forKey: .applications)
        try container.encode(categories.sorted(), forKey: .categories)
        try container.encode(webDomains.sorted(), forKey: .webDomains)
        try container.encode(CodableComponents(threshold), forKey: .threshold)
        try container.encode(includesPastActivity, forKey: .includesPastActivity)
        if allActivity { try container.encode(true, forKey: .allActivity) }
    }
}
