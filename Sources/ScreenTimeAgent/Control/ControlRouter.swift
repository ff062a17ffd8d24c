public import LinuxSupport
public import Logging
import ScreenTimeCore
public import ScreenTimeIPC

/// What a handler knows of a request beside its body: who sent it, as the kernel says
/// (`SO_PEERCRED`), and the files that came with it (`SCM_RIGHTS`), which the connection closes
/// once the reply is sent — or, on a connection the agent handed an extension it started, the
/// authority that extension acts with (then the peer's credentials, the agent's own, mean nothing).
public struct RequestContext: Sendable {
    public let peer: PeerCredentials
    public let files: [Int32]
    public let authority: ExtensionAuthority?
    /// The dashboard session the request says it is made in (the envelope's), checked by the
    /// policy service: honoured only from the dashboard's account.
    public var session: String?

    public init(
        peer: PeerCredentials, files: [Int32] = [], authority: ExtensionAuthority? = nil, session: String? = nil
    ) {
        self.peer = peer
        self.files = files
        self.authority = authority
        self.session = session
    }

    /// The descriptor a request's file argument names; a missing one is the caller's error.
    public func descriptor(_ argument: FileArgument) throws(ScreenTimeIPCError) -> Int32 {
        guard files.indices.contains(argument.descriptor) else {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "\(argument.path.prefix(200)) was not passed as an open file (descriptor \(argument.descriptor) of \(files.count))"
            )
        }
        return files[argument.descriptor]
    }
}

/// What an extension the agent started may do: act for one user, on one client's stores and
/// monitors, and nothing else. It comes with the connection (a channel the agent gave the
/// extension as it started it), never from what a request says.
public struct ExtensionAuthority: Sendable, Hashable {
    public var uid: UInt32
    public var client: String

    public init(uid: UInt32, client: String) {
        self.uid = uid
        self.client = client
    }

    /// The requests an extension may make; any other is refused.
    public static let allowedKinds: Set<String> = [
        "ping", "status", "token", "applications", "categories", "shield", "clear", "filter", "denyInstalls",
        "monitor.start", "monitor.stop", "monitor.list", "store.read", "store.write", "notice",
    ]
}

/// Finds the handler of a request by its kind and turns its reply (or error) into bytes.
///
/// Each request type is registered once with its handler; an unknown kind, a bad body or a
/// handler's error becomes an error reply with its own code, and the connection goes on.
public struct ControlRouter: Sendable {
    private typealias Route = @Sendable ([UInt8], RequestContext) throws -> [UInt8]
    private var routes: [String: Route] = [:]
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Answers requests of `R`'s kind with `handler`.
    public mutating func register<R: ControlRequest>(
        _ type: R.Type, _ handler: @escaping @Sendable (R, RequestContext) throws -> R.Reply
    ) {
        precondition(routes[R.kind] == nil, "two handlers for \(R.kind)")
        routes[R.kind] = { bytes, context in
            let request = try RequestEnvelope.decode(R.self, from: bytes)
            return try ReplyCoding.encode(try handler(request, context))
        }
    }

    /// The kinds answered, for tests and `--help`.
    public var kinds: [String] { routes.keys.sorted() }

    /// The reply to a message; never throws.
    public func reply(to bytes: [UInt8], context: RequestContext) -> [UInt8] {
        do {
            let header = try RequestEnvelope.header(of: bytes)
            let kind = header.kind
            guard let route = routes[kind] else {
                throw ScreenTimeIPCError(.unknownRequest, "this agent knows no request of kind '\(kind.prefix(60))'")
            }
            if context.authority != nil, !ExtensionAuthority.allowedKinds.contains(kind) {
                throw ScreenTimeIPCError(.notAllowed, "an extension may not make '\(kind)' requests")
            }
            guard header.session == nil || context.authority == nil else {
                throw ScreenTimeIPCError(.notAllowed, "an extension's requests carry no dashboard session")
            }
            var context = context
            context.session = header.session ?? context.session
            return try route(bytes, context)
        } catch let error as ScreenTimeIPCError {
            return ReplyCoding.encode(error)
        } catch let error as ScreenTimeCoreError {
            return ReplyCoding.encode(ScreenTimeIPCError(error))
        } catch {
            logger.error("request failed inside the agent", metadata: ["error": "\(error)"])
            return ReplyCoding.encode(ScreenTimeIPCError(.internalError, "the agent failed: \(error)"))
        }
    }
}
