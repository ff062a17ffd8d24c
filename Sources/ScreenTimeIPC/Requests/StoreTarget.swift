/// One store of one user.
public struct StoreTarget: Codable, Sendable, Hashable {
    public var user: UserReference?
    public var client: String?
    public var store: String?

    public init(user: UserReference? = nil, client: String? = nil, store: String? = nil) {
        self.user = user
        self.client = client
        self.store = store
    }
}

/// `clear`: every setting of one store goes.
public struct ClearRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "clear"
    public var user: UserReference?
    public var client: String?
    public var store: String?

    public init(_ target: StoreTarget) {
        user = target.user
        client = target.client
        store = target.store
    }

    public var target: StoreTarget { StoreTarget(user: user, client: client, store: store) }
}
