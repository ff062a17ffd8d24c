import Dispatch
import Foundation
import Hummingbird
import LinuxSupport
import Logging
import ScreenTimeAgent
import ScreenTimeIPC
import ScreenTimeTestKit
import ScreenTimeWeb
import Synchronization

/// The dashboard's requests through the in-process agent's router, made as the dashboard's
/// account (`screentime-web` in the kit's accounts), as the control socket would make them.
struct RouterConnection: AgentConnection {
    let agent: InProcessAgent
    let uid: UInt32

    func send<R: ControlRequest>(_ request: R, session: String?) async throws(ScreenTimeIPCError) -> R.Reply {
        let bytes: [UInt8]
        do {
            bytes = try RequestEnvelope.encode(request, session: session)
        } catch {
            throw ScreenTimeIPCError(.malformedRequest, "\(error)")
        }
        // Off Swift's cooperative pool, as the agent's control server answers on threads of its
        // own: a request that waits (a name that is no guardian's is refused after 2 s) would
        // otherwise hold one of the pool's two threads on this machine.
        let context = ScreenTimeAgent.RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid))
        let router = agent.router
        let reply = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: router.reply(to: bytes, context: context)) }
        }
        return try ReplyCoding.decode(R.Reply.self, from: reply)
    }
}

/// The dashboard served over plain HTTP on a loopback port of its own, for the length of a test,
/// and spoken to with curl (a real client: cookies, headers, bodies as a browser's are).
final class DashboardServer: Sendable {
    let agent: InProcessAgent
    let port: Int
    private let task: Task<Void, any Error>
    let jar: String

    /// - Parameters:
    ///   - limits: what one device may hold, as `screentime-web` sets it (nil: none).
    ///   - host: the address it listens on (`0.0.0.0`: every one, as the installed one listens on
    ///     several).
    init(agent: InProcessAgent, limits: ClientLimits? = nil, host: String = "127.0.0.1") async throws {
        self.agent = agent
        let dashboard = Dashboard(
            agent: RouterConnection(agent: agent, uid: agent.accounts.uid("screentime-web")), secureCookies: false)
        let bound = AsyncStream<Int>.makeStream()
        let application = Application(
            router: dashboard.router(),
            server: .http1(
                configuration: .init(additionalChannelHandlers: limits.map { [$0.handler()] } ?? [])),
            configuration: .init(address: .hostname(host, port: 0)),
            onServerRunning: { channel in
                bound.continuation.yield(channel.localAddress?.port ?? 0)
                bound.continuation.finish()
            },
            logger: {
                var logger = Logger(label: "dashboard"); logger.logLevel = .critical; return logger
            }())
        task = Task { try await application.runService() }
        var port = 0
        for await given in bound.stream { port = given }
        self.port = port
        jar = agent.directory.path + "/cookies-\(UUID().uuidString)"
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String
        /// Every `Set-Cookie` line.
        let cookies: [String]
    }

    /// Runs curl off Swift's cooperative pool, which the server's handlers run on: a test blocked
    /// there waiting for curl would leave them no thread on a 2-core machine.
    static func curl(
        _ arguments: [String], seconds: Double, as uid: UInt32? = nil
    ) async throws
        -> ChildProcess.Outcome
    {
        // Another account's program on this PC: another device to the dashboard.
        let (program, arguments) =
            uid.map {
                (
                    "/usr/bin/setpriv",
                    ["--reuid=\($0)", "--regid=\($0)", "--clear-groups", "--", "/usr/bin/curl"] + arguments
                )
            } ?? ("/usr/bin/curl", arguments)
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try ChildProcess.run(
                            program, arguments, environment: ["PATH=/usr/bin:/bin"], deadline: seconds)
                    })
            }
        }
    }

    /// A request as a browser of the dashboard makes it: the cookie jar kept between requests
    /// (unless `cookie` is given instead), a form's fields URL-encoded.
    func request(
        _ method: String, _ path: String, form: [String: String]? = nil, cookie: String? = nil,
        headers: [String] = [], body: String? = nil, from address: String? = nil, as uid: UInt32? = nil
    ) async throws -> Answer {
        // 30 s: on a machine busy with the other suites an answer may take a while; not a hang.
        var arguments = ["-s", "-S", "-X", method, "-D", "-", "--max-time", "30"]
        // Another device: another loopback address of this machine as the request's source.
        if let address { arguments += ["--interface", address] }
        if let cookie { arguments += ["-H", "Cookie: \(cookie)"] } else { arguments += ["-b", jar, "-c", jar] }
        for header in headers { arguments += ["-H", header] }
        if let form {
            if form.isEmpty { arguments += ["--data", ""] }
            for (key, value) in form.sorted(by: { $0.key < $1.key }) {
                arguments += ["--data-urlencode", "\(key)=\(value)"]
            }
        } else if let body {
            arguments += ["--data-binary", body]
        }
        arguments.append("http://127.0.0.1:\(port)\(path)")
        let output = try await Self.curl(arguments, seconds: 40, as: uid)
        let text = String(decoding: output.output, as: UTF8.self)
        let split = text.range(of: "\r\n\r\n")
        let head = split.map { String(text[..<$0.lowerBound]) } ?? text
        let body = split.map { String(text[$0.upperBound...]) } ?? ""
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        if status == 0 {
            // No answer: what curl said instead, for the test's message.
            return Answer(
                status: 0, headers: [:],
                body: "curl \(output.status): " + String(decoding: output.errors, as: UTF8.self),
                cookies: [])
        }
        var fields: [String: String] = [:]
        var cookies: [String] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "set-cookie" { cookies.append(value) }
            fields[name] = value
        }
        return Answer(status: status, headers: fields, body: body, cookies: cookies)
    }

    /// The CSRF token a page of the dashboard carries in its forms.
    static func csrf(in page: String) -> String? {
        guard let range = page.range(of: "name=\"csrf\" value=\"") else { return nil }
        return String(page[range.upperBound...].prefix { $0 != "\"" })
    }
}
