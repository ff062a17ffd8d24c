import FoundationEssentials

/// What a token stands for. The kind's name is part of what a token is minted from, so an
/// application and a category of the same name never share a token.
public protocol TokenKind: Sendable {
    static var kindName: String { get }
}

/// An application (Apple's `Application`), and the kind of its tokens (`Token<Application>`).
///
/// On Linux its bundle identifier is its desktop-entry ID (`org.gnome.Chess`, a Flatpak ID, or
/// `snap:NAME`). Made from a bundle identifier it has no token: a store's
/// `application.blockedApplications` asks the agent for it when written, and says there if the agent
/// does not know the application.
public struct Application: TokenKind, Hashable, Codable {
    public static let kindName = "application"

    public var bundleIdentifier: String?
    public var token: ApplicationToken?
    public var localizedDisplayName: String?

    public init(bundleIdentifier: String) {
        self.bundleIdentifier = bundleIdentifier
    }

    /// An application known by its token (what a selection or a monitor gives).
    public init(token: ApplicationToken, bundleIdentifier: String? = nil, localizedDisplayName: String? = nil) {
        self.token = token
        self.bundleIdentifier = bundleIdentifier
        self.localizedDisplayName = localizedDisplayName
    }
}

/// A web domain (Apple's `WebDomain`), and the kind of its tokens: the name as written covers every
/// name under it.
public struct WebDomain: TokenKind, Hashable, Codable {
    public static let kindName = "webDomain"

    public var domain: String?
    public var token: WebDomainToken?

    public init(domain: String) {
        self.domain = domain
    }

    public init(token: WebDomainToken, domain: String? = nil) {
        self.token = token
        self.domain = domain
    }
}

/// An app or web category (Apple's `ActivityCategory`), and the kind of its tokens: a freedesktop
/// category (`Game`) or a web category list's name (`gambling`).
public struct ActivityCategory: TokenKind, Hashable, Codable {
    public static let kindName = "activityCategory"

    public var token: ActivityCategoryToken?
    public var localizedDisplayName: String?

    public init(token: ActivityCategoryToken, localizedDisplayName: String? = nil) {
        self.token = token
        self.localizedDisplayName = localizedDisplayName
    }
}

/// An opaque stand-in for an application, web domain or category.
///
/// A token is 32 bytes from a `TokenMinter`: the same thing always gives the same token on this PC,
/// and nothing in the token reveals what it stands for. It encodes as `{"data":"<base64>"}`.
/// The bytes are kept in four words so that a token is hashed and compared without touching the
/// heap — the shields look tokens up on every exec and every DNS query.
public struct Token<Kind: TokenKind>: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public static var byteCount: Int { 32 }

    private let w0: UInt64
    private let w1: UInt64
    private let w2: UInt64
    private let w3: UInt64

    /// Makes a token from its 32 bytes, as minted or as received.
    public init(bytes: some Collection<UInt8>) throws(ScreenTimeCoreError) {
        guard bytes.count == Self.byteCount else {
            throw ScreenTimeCoreError(
                .invalidToken,
                "a \(Kind.kindName) token has \(Self.byteCount) bytes, this one has \(bytes.count)"
            )
        }
        var words: [UInt64] = [0, 0, 0, 0]
        for (index, byte) in bytes.enumerated() {
            words[index / 8] = words[index / 8] << 8 | UInt64(byte)
        }
        (w0, w1, w2, w3) = (words[0], words[1], words[2], words[3])
    }

    /// Makes a token from the base64 text of its bytes, as in its JSON form.
    public init(base64 text: String) throws(ScreenTimeCoreError) {
        guard let data = Data(base64Encoded: text) else {
            throw ScreenTimeCoreError(
                .invalidToken, "a \(Kind.kindName) token is base64 text, not '\(text.prefix(60))'")
        }
        try self.init(bytes: data)
    }

    /// The token's 32 bytes.
    public var bytes: [UInt8] {
        [w0, w1, w2, w3].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (56 - 8 * $0)) } }
    }

    /// The base64 text of the bytes, as in the JSON form.
    public var base64: String { Data(bytes).base64EncodedString() }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.w0, lhs.w1, lhs.w2, lhs.w3) < (rhs.w0, rhs.w1, rhs.w2, rhs.w3)
    }

    /// A short form for logs: the kind and the first bytes, never what the token stands for.
    public var description: String {
        "\(Kind.kindName):\(String(w0 >> 32, radix: 16, uppercase: false))"
    }

    private enum CodingKeys: String, CodingKey { case data }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .data)
        do {
            try self.init(base64: text)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .data, in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(base64, forKey: .data)
    }
}

/// A token of a desktop application.
public typealias ApplicationToken = Token<Application>
/// A token of a web domain (its registrable form).
public typealias WebDomainToken = Token<WebDomain>
/// A token of an app or web category.
public typealias ActivityCategoryToken = Token<ActivityCategory>
