/// `unlock`: a guardian lifts the lockout a user's session got after too many wrong guardian
/// passwords (and forgets its failures), and a guardian's `lock` on the user's sessions.
public struct UnlockRequest: ControlRequest, Hashable {
    public typealias Reply = UnlockReply
    public static let kind = "unlock"
    public var user: UserReference?
    public init(user: UserReference? = nil) { self.user = user }
}

public struct UnlockReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    /// Whether there were failures (or a lockout) to forget.
    public var hadFailures: Bool
    /// Whether a guardian's lock (`lock`) was lifted too.
    public var lockLifted: Bool?

    public init(user: UserSummary, hadFailures: Bool, lockLifted: Bool = false) {
        self.user = user
        self.hadFailures = hadFailures
        self.lockLifted = lockLifted ? true : nil
    }
}
