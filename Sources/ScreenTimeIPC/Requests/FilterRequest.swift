public import ScreenTimeCore

/// Sets a store's web-content filter (`webContent.blockedByFilter`; `.none` removes it) and, or,
/// its safe search (`webContent.safeSearch`).
public struct FilterRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "filter"

    /// `screentime filter --safe-search on|strict|off`.
    public enum SafeSearchChoice: String, Codable, Sendable, Hashable, CaseIterable {
        /// Google, Bing and DuckDuckGo safe; YouTube's Restricted Mode moderate.
        case on
        /// The same, with YouTube's Restricted Mode strict.
        case strict
        case off

        public var level: SafeSearchLevel? {
            switch self {
            case .on: .moderate
            case .strict: .strict
            case .off: nil
            }
        }
    }

    public var target: StoreTarget
    /// The filter; nil leaves it as it is (a request that sets safe search alone).
    public var policy: FilterPolicy?
    /// Safe search; nil leaves it as it is.
    public var safeSearch: SafeSearchChoice?

    public init(target: StoreTarget, policy: FilterPolicy?, safeSearch: SafeSearchChoice? = nil) {
        self.target = target
        self.policy = policy
        self.safeSearch = safeSearch
    }
}
