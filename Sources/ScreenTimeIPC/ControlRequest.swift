/// A request the agent answers on its control socket, with the type of its reply.
///
/// Each request is a `Codable` value with a stable `kind` (its name on the wire) and a `Reply`.
/// The agent finds the handler by the kind (`ControlRouter` in ScreenTimeAgent); a client sends
/// it with `ScreenTimeClient.send(_:)` and gets the reply typed. Adding a request is one new
/// file here (the request and its reply) and one router line in the agent.
///
/// A request may come with open files, passed beside it (`SCM_RIGHTS`): a program to mint a token
/// for is opened by the caller, with the caller's permissions, and the agent reads only what it
/// was given. `FileArgument` names one of them by its place among the frame's descriptors.
public protocol ControlRequest: Codable, Sendable {
    associatedtype Reply: Codable, Sendable
    /// The request's kind on the wire (`"status"`).
    static var kind: String { get }
}

/// A file the caller opened and passed with the request: `descriptor` is its index among the
/// descriptors that came with the frame; `path` is what the caller called it, for messages only.
public struct FileArgument: Codable, Sendable, Hashable {
    public var path: String
    public var descriptor: Int

    public init(path: String, descriptor: Int) {
        self.path = path
        self.descriptor = descriptor
    }
}
