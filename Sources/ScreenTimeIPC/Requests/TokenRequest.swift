public import ScreenTimeCore

/// `token`: the token of an app (a desktop-entry ID, `snap:NAME`, or a program passed as an open
/// file), a domain or a category, for guardians and individuals.
public struct TokenRequest: ControlRequest, Hashable {
    public typealias Reply = TokenReply
    public static let kind = "token"
    public var kind: TokenKindName
    public var identity: String
    public var user: UserReference?
    /// For an app given as a program: the program, opened by the caller (the agent opens no path
    /// for a caller). `identity` is then its path, for messages.
    public var file: FileArgument?

    public init(kind: TokenKindName, identity: String, user: UserReference? = nil, file: FileArgument? = nil) {
        self.kind = kind
        self.identity = identity
        self.user = user
        self.file = file
    }
}

public struct TokenReply: Codable, Sendable, Hashable {
    public var kind: TokenKindName
    public var identity: String
    public var token: String
    public init(kind: TokenKindName, identity: String, token: String) {
        self.kind = kind
        self.identity = identity
        self.token = token
    }
}
