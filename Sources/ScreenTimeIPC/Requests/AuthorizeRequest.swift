public import FoundationEssentials
public import ScreenTimeCore

/// `authorize`: a guardian authorizes a child, a child's session with a guardian's password, or a
/// user themself as an individual.
public struct AuthorizeRequest: ControlRequest, Hashable {
    public typealias Reply = AuthorizationReply
    public static let kind = "authorize"
    public var user: UserReference?
    public var member: FamilyControlsMember
    /// Given when a child's session asks for a guardian's approval.
    public var guardian: GuardianCredentials?
    /// Whether the child may see the names of what is shielded (not only tokens). Nil keeps it.
    public var showNamesToChild: Bool?

    public init(
        user: UserReference? = nil, member: FamilyControlsMember, guardian: GuardianCredentials? = nil,
        showNamesToChild: Bool? = nil
    ) {
        self.user = user
        self.member = member
        self.guardian = guardian
        self.showNamesToChild = showNamesToChild
    }
}

public struct AuthorizationReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var status: AuthorizationStatus
    public var member: FamilyControlsMember?
    public var showNamesToChild: Bool
    public var changedAt: Date?

    public init(
        user: UserSummary, status: AuthorizationStatus, member: FamilyControlsMember?, showNamesToChild: Bool,
        changedAt: Date?
    ) {
        self.user = user
        self.status = status
        self.member = member
        self.showNamesToChild = showNamesToChild
        self.changedAt = changedAt
    }
}

/// `revoke`: ends an authorization (a child's only by a guardian); the user's stores go with it.
public struct RevokeRequest: ControlRequest, Hashable {
    public typealias Reply = AuthorizationReply
    public static let kind = "revoke"
    public var user: UserReference?
    public init(user: UserReference? = nil) { self.user = user }
}
