// The vocabulary every request shares.

/// The protocol version this build speaks. A request of another version is refused with
/// `unsupportedVersion`, naming both.
public let protocolVersion = 1

/// Who a request is about: a user name or a numeric uid (as text, `"1001"`). Nil means the caller.
public typealias UserReference = String
