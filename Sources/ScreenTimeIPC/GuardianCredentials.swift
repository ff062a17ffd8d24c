/// A guardian's user name and password, given in the child's session.
public struct GuardianCredentials: Codable, Sendable, Hashable {
    public var user: String
    public var password: String
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}
