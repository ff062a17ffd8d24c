// The vocabulary every request shares.

/// The protocol version this build speaks. A request of another version is refused with
/// `unsupportedVersion`, naming both.
public let protocolVersion = 1

/// Who a request is about: a user name or a numeric uid (as text, `"1001"`). Nil means the caller.
public typealias UserReference = String

/// A guardian's user name and password, given in the child's session.
public struct GuardianCredentials: Codable, Sendable, Hashable {
    public var user: String
    public var password: String
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}
