import Dispatch
public import ScreenTimeClient
public import ScreenTimeIPC

/// How the dashboard reaches the agent: each request on its own, in the session of the guardian
/// signed in (none for signing in). The dashboard holds no authority of its own: whatever it may
/// do, the agent decides from the session and from the account the dashboard runs as.
public protocol AgentConnection: Sendable {
    func send<R: ControlRequest>(_ request: R, session: String?) async throws(ScreenTimeIPCError) -> R.Reply
}

/// The agent's control socket, through the typed client. The client's calls block (a password
/// check takes up to a few seconds), so each runs on a queue of its own, off the server's event
/// loops.
public struct SocketAgentConnection: AgentConnection {
    public let socket: String
    private let queue = DispatchQueue(label: "screentime-web.agent", attributes: .concurrent)

    public init(socket: String) { self.socket = socket }

    public func send<R: ControlRequest>(_ request: R, session: String?) async throws(ScreenTimeIPCError) -> R.Reply {
        let client = {
            var client = ScreenTimeClient(socket: socket)
            client.timeout = 20
            client.session = session
            return client
        }()
        let result: Result<R.Reply, ScreenTimeIPCError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(ScreenTimeIPCError) {
                    continuation.resume(returning: .success(try client.send(request)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
