/// The one error type of the agent's own start-up and storage (requests get
/// `ScreenTimeIPCError`s): a code and a message a person can act on.
public struct AgentError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case configuration, state, secret, socket, firewall
    }

    public let code: Code
    public let message: String
    /// The error underneath (a `SystemError` with its errno, a database error), for whoever
    /// handles this one; the message already says it in words.
    public let cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    static func configuration(_ message: String) -> AgentError { AgentError(.configuration, message) }

    public var description: String { "\(code.rawValue): \(message)" }
}
