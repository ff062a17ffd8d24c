/// Where an ask for more time stands.
public enum TimeRequestState: String, Codable, Sendable, Hashable {
    case pending
    /// Granted, until `until`.
    case granted
    /// Granted, and over.
    case expired
    case denied
    /// Granted, and ended early by a guardian (`grant --end`).
    case ended
}
