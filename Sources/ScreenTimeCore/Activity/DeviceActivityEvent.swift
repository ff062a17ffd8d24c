public import FoundationEssentials

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
    /// A threshold that differs by the weekday an interval starts on (the agent's daily limits,
    /// `--daily mon-fri=1h,sat,sun=3h`; a client's with `DailyAllowance.parse`); a day it does
    /// not name has no threshold that interval, a day at 0 reaches the event at once. Not Apple's
    /// (there, one monitor per weekday, with a `weekday` in the schedule's components); when set
    /// it is the threshold, and `threshold` is only its largest.
    public var allowance: DailyAllowance?

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

    /// The threshold for the interval starting at `start`: `allowance`'s for its weekday (nil: none
    /// that day; 0: reached at once), else `thresholdDuration`.
    public func threshold(forIntervalStartingAt start: Date, calendar: ZonedCalendar) -> TimeInterval? {
        guard let allowance else { return thresholdDuration }
        return allowance.seconds[calendar.component(.weekday, from: start)]
    }

    /// What usage counts toward the event.
    public var usageFilter: UsageFilter {
        if allActivity { return .everything }
        return UsageFilter(applications: applications, categories: categories, webDomains: webDomains)
    }

    /// Checks the threshold (a positive duration of at most a week), the allowance's days and
    /// durations, and the token limits.
    public func validate() throws(ScreenTimeCoreError) {
        guard let duration = threshold.durationValue, duration > 0, duration <= DeviceActivitySchedule.maximumInterval
        else {
            throw ScreenTimeCoreError(
                .invalidThreshold,
                "an event's threshold is a duration of days, hours, minutes and seconds above zero and up to a week"
            )
        }
        if let allowance {
            guard !allowance.seconds.isEmpty,
                allowance.seconds.allSatisfy({
                    (1...7).contains($0.key) && $0.value.isFinite
                        && (0...DeviceActivitySchedule.maximumInterval).contains($0.value)
                })
            else {
                throw ScreenTimeCoreError(
                    .invalidThreshold,
                    "an event's allowance gives days 1 (Sunday) to 7 each a duration from 0 up to a week, at least one day"
                )
            }
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
        case applications, categories, webDomains, threshold, includesPastActivity, allActivity, allowance
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        applications = try container.decodeIfPresent(Set.self, forKey: .applications) ?? []
        categories = try container.decodeIfPresent(Set.self, forKey: .categories) ?? []
        webDomains = try container.decodeIfPresent(Set.self, forKey: .webDomains) ?? []
        threshold = try container.decode(CodableComponents.self, forKey: .threshold).components
        includesPastActivity = try container.decodeIfPresent(Bool.self, forKey: .includesPastActivity) ?? false
        allActivity = try container.decodeIfPresent(Bool.self, forKey: .allActivity) ?? false
        allowance = try container.decodeIfPresent(DailyAllowance.self, forKey: .allowance)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(applications.sorted(), forKey: .applications)
        try container.encode(categories.sorted(), forKey: .categories)
        try container.encode(webDomains.sorted(), forKey: .webDomains)
        try container.encode(CodableComponents(threshold), forKey: .threshold)
        try container.encode(includesPastActivity, forKey: .includesPastActivity)
        if allActivity { try container.encode(true, forKey: .allActivity) }
        try container.encodeIfPresent(allowance, forKey: .allowance)
    }
}
