// Who takes part and what tokens stand for: the vocabulary the agent's state and its protocol
// share, kept here so that the state database does not depend on the wire format.

/// How a user takes part (Apple's `FamilyControlsMember`).
public enum FamilyControlsMember: String, Codable, Sendable, CaseIterable {
    case child, individual
}

/// Apple's `AuthorizationStatus`.
public enum AuthorizationStatus: String, Codable, Sendable {
    case notDetermined, denied, approved
}

/// The kinds of token, as named on the command line and in the state.
public enum TokenKindName: String, Codable, Sendable, CaseIterable {
    case app, domain, category, service
}

/// What a token stands for, as far as the reader may know.
public struct TokenName: Codable, Sendable, Hashable {
    public var kind: TokenKindName
    public var identity: String
    public var displayName: String

    public init(kind: TokenKindName, identity: String, displayName: String) {
        self.kind = kind
        self.identity = identity
        self.displayName = displayName
    }
}
