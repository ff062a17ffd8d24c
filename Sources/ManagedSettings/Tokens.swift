import ScreenTimeClient
public import ScreenTimeCore
public import ScreenTimeIPC

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
/// An application (Apple's `Application`): its bundle identifier is its desktop-entry ID
/// (`org.gnome.Chess`, a Flatpak ID, or `snap:NAME`).
public typealias Application = ScreenTimeCore.Application
/// A web domain (Apple's `WebDomain`).
public typealias WebDomain = ScreenTimeCore.WebDomain
/// An app or web category (Apple's `ActivityCategory`).
public typealias ActivityCategory = ScreenTimeCore.ActivityCategory

// Not Apple's: on Apple's platforms only the picker gives tokens. Here a guardian's program may ask
// the agent for the token of an application, domain or category it names (guardians, and
// individuals for themselves). Each asks the agent once and throws what it refused.
extension Application {
    /// The application with this desktop-entry ID, with its token (of `user`'s PC-wide catalogue).
    public static func resolving(
        bundleIdentifier: String, user: String? = nil, socket: String? = nil
    ) throws(ScreenTimeIPCError) -> Application {
        let reply = try ScreenTimeClient(socket: socket).send(
            TokenRequest(kind: .app, identity: bundleIdentifier, user: user))
        return Application(token: try decoded(reply.token), bundleIdentifier: bundleIdentifier)
    }
}

extension WebDomain {
    /// The domain, with its token.
    public static func resolving(domain: String, socket: String? = nil) throws(ScreenTimeIPCError) -> WebDomain {
        let reply = try ScreenTimeClient(socket: socket).send(TokenRequest(kind: .domain, identity: domain))
        return WebDomain(token: try decoded(reply.token), domain: domain)
    }
}

extension ActivityCategory {
    /// The category with this name (`Game`, `gambling`), with its token.
    public static func resolving(
        named name: String, socket: String? = nil
    ) throws(ScreenTimeIPCError)
        -> ActivityCategory
    {
        let reply = try ScreenTimeClient(socket: socket).send(TokenRequest(kind: .category, identity: name))
        return ActivityCategory(token: try decoded(reply.token), localizedDisplayName: name)
    }
}

/// A token the agent sent; an agent that sent something else is answered with its own error code.
func decoded<Kind>(_ text: String) throws(ScreenTimeIPCError) -> Token<Kind> {
    do {
        return try Token<Kind>(base64: text)
    } catch {
        throw ScreenTimeIPCError(.malformedReply, "the agent sent a token that is not one: \(error.description)")
    }
}
