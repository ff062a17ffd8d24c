public import ScreenTimeCore

/// Sets a store's web-content filter (`webContent.blockedByFilter`); `.none` removes it.
public struct FilterRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "filter"
    public var target: StoreTarget
    public var policy: FilterPolicy

    public init(target: StoreTarget, policy: FilterPolicy) {
        self.target = target
        self.policy = policy
    }
}
