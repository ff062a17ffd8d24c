public import ScreenTimeCore

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

/// `store.read`: what one store of this client's sets (Apple's reading back a
/// `ManagedSettingsStore`'s settings).
public struct StoreReadRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "store.read"
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

/// `store.write`: one store of this client's set to exactly these settings (Apple's setting a
/// `ManagedSettingsStore`'s properties); an empty one deletes the store. In force when it answers.
public struct StoreWriteRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "store.write"
    public var user: UserReference?
    public var client: String?
    public var store: String?
    public var settings: StoreSettings

    public init(_ target: StoreTarget, settings: StoreSettings) {
        user = target.user
        client = target.client
        store = target.store
        self.settings = settings
    }

    public var target: StoreTarget { StoreTarget(user: user, client: client, store: store) }
}
