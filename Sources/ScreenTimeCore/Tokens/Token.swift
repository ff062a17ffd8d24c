import Foundation

/// What a token stands for. The kind's name is part of what a token is minted from, so an
/// application and a category of the same name never share a token.
public protocol TokenKind: Sendable {
    static var kindName: String { get }
}

/// Tokens of desktop applications (`ApplicationToken`).
public enum ApplicationKind: TokenKind {
    public static let kindName = "application"
}

/// Tokens of web domains (`WebDomainToken`).
public enum WebDomainKind: TokenKind {
    public static let kindName = "webDomain"
}

/// Tokens of app and web categories (`ActivityCategoryToken`).
public enum ActivityCategoryKind: TokenKind {
    public static let kindName = "activityCategory"
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
public typealias ApplicationToken = Token<ApplicationKind>
/// A token of a web domain (its registrable form).
public typealias WebDomainToken = Token<WebDomainKind>
/// A token of an app or web category.
public typealias ActivityCategoryToken = Token<ActivityCategoryKind>
