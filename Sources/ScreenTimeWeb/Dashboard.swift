import Crypto
public import FoundationEssentials
public import Hummingbird
import ScreenTimeCore
public import ScreenTimeIPC

/// The guardian's dashboard: its routes, over a connection to the agent. It keeps no state but a
/// key for its CSRF tokens: the session is the agent's (its secret in the guardian's cookie), and
/// every page is read from the agent when asked for.
public struct Dashboard: Sendable {
    public let agent: any AgentConnection
    /// Whether cookies are `Secure` (and named `__Host-`): always, but for a test over plain HTTP.
    public let secureCookies: Bool
    /// The key of the CSRF tokens: new at each start (a form from before a restart is refused
    /// and loaded again).
    private let csrfKey: [UInt8]
    /// The key that binds a session's cookie to the device's address (kept across restarts by
    /// the program, in its state directory).
    private let bindingKey: [UInt8]
    /// The pending asks of the sessions whose pages are open.
    let feed: AskFeed

    /// - Parameter bindingKey: 32 bytes kept by the program; new ones when nil (a test's).
    public init(agent: any AgentConnection, secureCookies: Bool = true, bindingKey: [UInt8]? = nil) {
        self.agent = agent
        self.secureCookies = secureCookies
        feed = AskFeed(agent: agent)
        csrfKey = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        self.bindingKey = bindingKey ?? SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    var cookieName: String { secureCookies ? "__Host-screentime" : "screentime" }

    public func router() -> Router<DashboardContext> {
        let router = Router(context: DashboardContext.self)
        router.add(middleware: SecurityMiddleware<DashboardContext>())
        router.get("/static/app.css") { _, _ in Self.asset(Assets.css, type: "text/css; charset=utf-8") }
        router.get("/static/app.js") { _, _ in Self.asset(Assets.javascript, type: "text/javascript; charset=utf-8") }
        router.get("/signin") { request, _ in
            Pages.html(Pages.signIn(code: request.uri.queryParameters["code"].map(String.init)))
        }
        router.post("/signin") { request, context in try await signIn(request, context) }
        router.post("/signout") { request, context in
            try await signedIn(request, context) { token in
                _ = try await checkedForm(request, context, token: token)
                _ = try await agent.send(WebSignOutRequest(), session: token)
                var response = Response.redirect(to: "/signin", type: .normal)
                response.setCookie(endedCookie)
                return response
            }
        }
        router.get("/") { request, context in
            try await signedIn(request, context) { token in try await overview(token) }
        }
        router.get("/child/:name") { request, context in
            let name = try context.parameters.require("name")
            return try await signedIn(request, context) { token in try await child(name, token) }
        }
        router.post("/child/:name/lock") { request, context in
            let name = try context.parameters.require("name")
            return try await signedIn(request, context) { token in
                let form = try await checkedForm(request, context, token: token)
                var length: GrantLength?
                if let text = form["length"], !text.isEmpty { length = try Self.length(text) }
                _ = try await agent.send(LockRequest(user: name, length: length), session: token)
                return Response.redirect(to: "/child/\(Pages.path(name))", type: .normal)
            }
        }
        router.post("/child/:name/unlock") { request, context in
            let name = try context.parameters.require("name")
            return try await signedIn(request, context) { token in
                _ = try await checkedForm(request, context, token: token)
                _ = try await agent.send(LockRequest(user: name, unlock: true), session: token)
                return Response.redirect(to: "/child/\(Pages.path(name))", type: .normal)
            }
        }
        router.post("/asks/:id/:answer") { request, context in
            guard let id = context.parameters.get("id", as: Int64.self),
                let answer = context.parameters.get("answer"), ["grant", "deny"].contains(answer)
            else { throw HTTPError(.notFound, message: "There is no such ask or answer.") }
            return try await signedIn(request, context) { token in
                let form = try await checkedForm(request, context, token: token)
                let always = answer == "grant" && form["length"] == "always"
                let length = answer == "grant" && !always ? try Self.length(form["length"] ?? "15m") : nil
                let decided = try await agent.send(
                    DecideRequest(id: id, grant: answer == "grant", length: length, always: always ? true : nil),
                    session: token)
                return Response.redirect(to: "/child/\(Pages.path(decided.user))", type: .normal)
            }
        }
        router.get("/events") { request, context in
            try await signedIn(request, context) { token in try await events(token) }
        }
        addRuleRoutes(to: router)
        return router
    }

    // MARK: signing in

    private func signIn(_ request: Request, _ context: DashboardContext) async throws -> Response {
        let form = try await Self.form(request, context)
        let device = String((request.headers[.userAgent] ?? "a browser").prefix(64))
        let signIn: WebSignInRequest
        if let code = form["code"], !code.isEmpty {
            signIn = WebSignInRequest(pairingCode: code, device: device, client: context.client)
        } else {
            signIn = WebSignInRequest(
                user: form["user"] ?? "", password: form["password"] ?? "", device: device, client: context.client)
        }
        do {
            let reply = try await agent.send(signIn, session: nil)
            var response = Response.redirect(to: "/", type: .normal)
            let seconds = max(0, Int(reply.session.expires.timeIntervalSinceNow))
            response.setCookie(
                Cookie(
                    name: cookieName, value: reply.token + "." + binding(reply.token, context.client), maxAge: seconds,
                    path: "/", secure: secureCookies, httpOnly: true, sameSite: .strict))
            return response
        } catch {
            // One message for a wrong password and a user who is not a guardian: the page does not
            // tell who the guardians are.
            let problem =
                error.code == .authenticationFailed
                ? "The user name, password or code is not right, or that user is not a guardian here."
                : error.message
            return Pages.html(Pages.signIn(problem: problem), status: Self.status(of: error))
        }
    }

    private var endedCookie: Cookie {
        Cookie(
            name: cookieName, value: "", maxAge: 0, path: "/", secure: secureCookies, httpOnly: true, sameSite: .strict)
    }

    /// Runs `body` in the request's session: none sends a page to the sign-in; one the agent
    /// refuses (unknown, expired, revoked) gets 401 and its cookie cleared; the agent's other
    /// refusals their status, with its message.
    func signedIn(
        _ request: Request, _ context: DashboardContext, _ body: (String) async throws -> Response
    )
        async throws -> Response
    {
        guard let cookie = request.cookies[cookieName]?.value, !cookie.isEmpty else {
            if request.method == .get, request.uri.path != "/events" {
                return Response.redirect(to: "/signin", type: .normal)
            }
            return Pages.error(.unauthorized, "Sign in first.")
        }
        // The cookie is the agent's secret and a MAC binding it to the device that signed in:
        // a cookie that went anywhere else (a server of the child's on another port of this PC
        // gets a browser's cookies too) is refused here, without asking the agent.
        let parts = cookie.split(separator: ".", maxSplits: 1).map(String.init)
        guard parts.count == 2, parts[0].utf8.count <= 64, Self.same(parts[1], binding(parts[0], context.client))
        else {
            var response = Pages.error(
                .unauthorized, "This session was made on another device (or this one's address changed): sign in again."
            )
            response.setCookie(endedCookie)
            return response
        }
        let token = parts[0]
        do {
            return try await body(token)
        } catch let error as ScreenTimeIPCError {
            // The agent says notAuthorized both of a dead session and of a page's user who is not
            // a child here (`/child/root`): only the first ends the session in the browser.
            if error.code == .notAuthorized, (try? await agent.send(PingRequest(), session: token)) != nil {
                return Pages.error(.notFound, error.message)
            }
            var response = Pages.error(Self.status(of: error), error.message)
            if error.code == .notAuthorized { response.setCookie(endedCookie) }
            return response
        }
    }

    static func status(of error: ScreenTimeIPCError) -> HTTPResponse.Status {
        switch error.code {
        case .notAuthorized, .authenticationFailed: .unauthorized
        case .notAllowed, .restricted, .invalidAccountType: .forbidden
        case .tooManyAttempts, .tooManyRequests, .busy: .tooManyRequests
        case .unknownUser, .unknownApplication, .unknownCategory: .notFound
        case .agentUnreachable: .serviceUnavailable
        case .internalError, .malformedReply, .unsupportedVersion: .badGateway
        default: .badRequest
        }
    }

    // MARK: forms and their CSRF tokens

    /// A grant's or a lock's length as a form gives it (`15m`, `1h`, `rest-of-day`, `20:30`).
    static func length(_ text: String) throws(HTTPError) -> GrantLength {
        do throws(ScreenTimeCoreError) {
            return try GrantLength.parse(text)
        } catch {
            throw HTTPError(.badRequest, message: error.message)
        }
    }

    /// A form's fields (`application/x-www-form-urlencoded`, at most the context's upload size).
    static func form(_ request: Request, _ context: DashboardContext) async throws -> [String: String] {
        guard let type = request.headers[.contentType], type.lowercased().hasPrefix("application/x-www-form-urlencoded")
        else {
            throw HTTPError(
                .unsupportedMediaType, message: "A change is sent as a form (application/x-www-form-urlencoded).")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: context.maxUploadSize)
        } catch {
            throw HTTPError(.contentTooLarge, message: "A form is at most \(context.maxUploadSize / 1024) KiB.")
        }
        return try Self.fields(Array(buffer.readableBytesView))
    }

    /// A form body's fields, split on its bytes as browsers write it (`&` between fields, `=`
    /// after a name, everything else percent-encoded). Refused, as not well encoded: a byte that
    /// is not printable ASCII (browsers encode them), an escape that is not two hex digits, text
    /// that is not UTF-8, and a control character once decoded (`%00`, `%0A`).
    static func fields(_ body: [UInt8]) throws(HTTPError) -> [String: String] {
        let refused = HTTPError(.badRequest, message: "The form's text is not well encoded.")
        guard body.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw refused }
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) where !pair.isEmpty {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let text = { (bytes: ArraySlice<UInt8>) in Substring(String(decoding: bytes, as: UTF8.self)) }
            guard let key = Self.decoded(text(parts[0])),
                let value = Self.decoded(parts.count > 1 ? text(parts[1]) : ""),
                !(key + value).unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { throw refused }
            fields[key] = value
        }
        return fields
    }

    /// A form's name or value: `+` is a space, `%XX` a byte; nil when an escape is not two hex
    /// digits or the bytes are not UTF-8.
    static func decoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var rest = text.utf8[...]
        while let byte = rest.popFirst() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard rest.count >= 2, let high = hexValue(rest.removeFirst()), let low = hexValue(rest.removeFirst())
                else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The form of a change made in a session: its CSRF token must be the session's.
    func checkedForm(
        _ request: Request, _ context: DashboardContext, token: String
    ) async throws
        -> [String: String]
    {
        let form = try await Self.form(request, context)
        guard let given = form["csrf"], Self.same(given, csrf(token)) else {
            throw HTTPError(.forbidden, message: "This form is not the dashboard's or is stale: load the page again.")
        }
        return form
    }

    /// What binds a session's secret to the address of the device that signed in.
    func binding(_ token: String, _ client: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(
            for: Data((token + "|" + client).utf8), using: SymmetricKey(data: bindingKey))
        return Self.base64URL(Data(code.prefix(16)))
    }

    static func base64URL(_ data: Data) -> String {
        String(
            data.base64EncodedString().compactMap { character in
                switch character {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: character
                }
            })
    }

    /// The CSRF token of a session: a MAC of its secret under this process's key.
    func csrf(_ token: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(token.utf8), using: SymmetricKey(data: csrfKey))
        return Self.base64URL(Data(code))
    }

    private static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "max-age=3600"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
