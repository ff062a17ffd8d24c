/// Every named store of every client for one user: what the agent persists and merges.
///
/// A store that sets nothing is not kept, so clearing a store and removing it are the same thing,
/// and an empty store does not count toward the limit of 50 per client.
public struct StoreCollection: Hashable, Sendable, Codable {
    /// Apple's limit on the named stores of one client.
    public static var maximumStoresPerClient: Int { 50 }

    public private(set) var stores: [StoreKey: StoreSettings]

    public init() { stores = [:] }

    /// Builds a collection, applying each store in order (a later store of the same key wins).
    public init(_ entries: some Sequence<(StoreKey, StoreSettings)>) throws(ScreenTimeCoreError) {
        stores = [:]
        for (key, settings) in entries { try set(settings, for: key) }
    }

    public subscript(key: StoreKey) -> StoreSettings {
        stores[key] ?? StoreSettings()
    }

    /// Replaces one store's settings, checking Apple's limits first; nothing changes on error.
    public mutating func set(_ settings: StoreSettings, for key: StoreKey) throws(ScreenTimeCoreError) {
        try settings.validate()
        guard !settings.isEmpty else {
            stores[key] = nil
            return
        }
        if stores[key] == nil {
            let count = stores.keys.count { $0.client == key.client }
            guard count < Self.maximumStoresPerClient else {
                throw ScreenTimeCoreError(
                    .tooManyStores,
                    "\(key.client) already has \(count) stores; a client may have at most \(Self.maximumStoresPerClient) (clear one first)"
                )
            }
        }
        stores[key] = settings
    }

    /// Changes one store in place, with the same checks as `set`.
    public mutating func update(_ key: StoreKey, _ change: (inout StoreSettings) -> Void) throws(ScreenTimeCoreError) {
        var settings = self[key]
        change(&settings)
        try set(settings, for: key)
    }

    /// Unsets everything in one store (Apple's `clearAllSettings()`).
    public mutating func clear(_ key: StoreKey) {
        stores[key] = nil
    }

    /// Removes every store of a client (its authorization was revoked).
    public mutating func removeAll(of client: ClientID) {
        stores = stores.filter { $0.key.client != client }
    }

    /// The store names a client has in use.
    public func storeNames(of client: ClientID) -> [StoreName] {
        stores.keys.filter { $0.client == client }.map(\.name).sorted()
    }

    /// The merge of all the stores, with no grant (what `policyInForce(grants:at:)` gives with none).
    public var effectivePolicy: EffectivePolicy { EffectivePolicy(stores: stores) }

}
