import ScreenTimeClient
public import ScreenTimeCore
import ScreenTimeIPC

/// An opaque token for an application, web domain or category (Apple's `Token<T>`).
public typealias Token = ScreenTimeCore.Token
/// An application's token (Apple's `ApplicationToken`).
public typealias ApplicationToken = ScreenTimeCore.ApplicationToken
/// A web domain's token (Apple's `WebDomainToken`).
public typealias WebDomainToken = ScreenTimeCore.WebDomainToken
/// A category's token (Apple's `ActivityCategoryToken`).
public typealias ActivityCategoryToken = ScreenTimeCore.ActivityCategoryToken
/// Everything one store sets, as a value.
public typealias StoreSettings = ScreenTimeCore.StoreSettings

/// An application (Apple's `Application`): on Linux its bundle identifier is its desktop-entry ID
/// (`org.gnome.Chess`, a Flatpak ID, or `snap:NAME`).
public struct Application: Hashable, Sendable {
    public let bundleIdentifier: String?
    public let token: ApplicationToken?
    public let localizedDisplayName: String?

    /// The application with this desktop-entry ID; its token is asked of the agent (guardians,
    /// and individuals for themselves, may ask), nil when it cannot be had.
    public init(bundleIdentifier: String, user: String? = nil, socket: String? = nil) {
        self.bundleIdentifier = bundleIdentifier
        let reply = try? ScreenTimeClient(socket: socket).send(
            TokenRequest(kind: .app, identity: bundleIdentifier, user: user))
        token = reply.flatMap { try? ApplicationToken(base64: $0.token) }
        localizedDisplayName = nil
    }

    /// An application known by its token alone (what a selection or a monitor gives).
    public init(token: ApplicationToken, bundleIdentifier: String? = nil, localizedDisplayName: String? = nil) {
        self.token = token
        self.bundleIdentifier = bundleIdentifier
        self.localizedDisplayName = localizedDisplayName
    }
}

/// A web domain (Apple's `WebDomain`): the name as written covers every name under it.
public struct WebDomain: Hashable, Sendable {
    public let domain: String?
    public let token: WebDomainToken?

    /// The domain; its token is asked of the agent, nil when it cannot be had.
    public init(domain: String, socket: String? = nil) {
        self.domain = domain
        let reply = try? ScreenTimeClient(socket: socket).send(TokenRequest(kind: .domain, identity: domain))
        token = reply.flatMap { try? WebDomainToken(base64: $0.token) }
    }

    public init(token: WebDomainToken, domain: String? = nil) {
        self.token = token
        self.domain = domain
    }
}

/// An app or web category (Apple's `ActivityCategory`): a freedesktop category (`Game`) or a web
/// category list's name.
public struct ActivityCategory: Hashable, Sendable {
    public let token: ActivityCategoryToken?
    public let localizedDisplayName: String?

    public init(token: ActivityCategoryToken, localizedDisplayName: String? = nil) {
        self.token = token
        self.localizedDisplayName = localizedDisplayName
    }

    /// The category with this name; its token is asked of the agent.
    public init(named name: String, socket: String? = nil) {
        localizedDisplayName = name
        let reply = try? ScreenTimeClient(socket: socket).send(TokenRequest(kind: .category, identity: name))
        token = reply.flatMap { try? ActivityCategoryToken(base64: $0.token) }
    }
}
