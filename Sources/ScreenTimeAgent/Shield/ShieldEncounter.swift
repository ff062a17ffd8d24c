import ScreenTimeCore

/// Something the child just met a shield on: an app it started (or brought to the front) that is
/// frozen or refused, or a web domain it looked up. What the shield window shows.
struct ShieldEncounter: Sendable, Hashable {
    enum Kind: String, Sendable {
        case application, webDomain
    }

    var kind: Kind
    /// The authorized user it is for.
    var owner: UInt32
    var token: String
    /// Its name as the child may see it (it just started it, or typed it).
    var name: String
    /// The desktop entry's ID, for an app that has one.
    var identity: String?
    var categories: [String]
    /// The desktop entry's icon (a theme's icon name, or a path under the system's data).
    var icon: String?
    /// The stores that shield it: the first one's client's configuration extension renders it.
    var stores: [StoreKey]
    /// A process of it that is held (for `close`: the app's processes end).
    var pid: Int32?
    /// For a web domain: why its name is refused (a shield on it, its category, the filter).
    var webReason: DomainFilter.Reason? = nil
}
