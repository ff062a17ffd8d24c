/// `forget`: a guardian removes everything the agent keeps of a user who is no longer
/// authorized — an account revoked, or deleted or renamed while authorized — so that the record
/// leaves `status` and a later account given the same uid inherits nothing.
public struct ForgetRequest: ControlRequest, Hashable {
    public typealias Reply = ForgetReply
    public static let kind = "forget"
    /// The user's name as it was authorized, a name the uid has now, or the uid as digits.
    public var user: String
    public init(user: String) { self.user = user }
}

public struct ForgetReply: Codable, Sendable, Hashable {
    /// The user as the agent knew it (its name when authorized).
    public var user: UserSummary
    /// Whether the agent held anything of the user's.
    public var forgotten: Bool

    public init(user: UserSummary, forgotten: Bool) {
        self.user = user
        self.forgotten = forgotten
    }
}
