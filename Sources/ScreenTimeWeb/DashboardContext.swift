import HTTPTypes
public import Hummingbird

/// A request's context in the dashboard: small bodies only (a form is a few hundred bytes).
public struct DashboardContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The device the request came from (`Devices`): its address, or for a program on this PC the
    /// account that runs it. A session is bound to it.
    public let client: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = Devices.device(remote: source.channel.remoteAddress, local: source.channel.localAddress)
    }

    public var maxUploadSize: Int { 16 * 1024 }
}

/// What every answer says to the browser: run no script, load no style or image but the
/// dashboard's own, never be framed, keep nothing in a cache, send a referrer to no other site; and a change
/// (POST) from any other origin is refused before it is read.
struct SecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    static var policy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    )
        async throws -> Response
    {
        var response: Response
        if request.method == .post, !Self.sameOrigin(request) {
            response = Pages.error(.forbidden, "This change came from another site, and was refused.")
        } else {
            do {
                response = try await next(request, context)
            } catch let error as HTTPError {
                response = Pages.error(error.status, error.body ?? error.status.reasonPhrase)
            } catch {
                // Nothing else is thrown on purpose; whatever it is gets a page with the headers.
                context.logger.error("request failed", metadata: ["error": "\(error)"])
                response = Pages.error(.internalServerError, "The dashboard could not answer this request.")
            }
        }
        response.headers[.contentSecurityPolicy] = Self.policy
        response.headers[.xContentTypeOptions] = "nosniff"
        // Not no-referrer: under it a browser sends a form's POST with "Origin: null".
        response.headers[.referrerPolicy] = "same-origin"
        response.headers[.xFrameOptions] = "DENY"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    /// Whether a POST comes from the dashboard's own pages: a browser says where a form it sends
    /// came from (`Sec-Fetch-Site`, else `Origin`); a request that says neither is a program's,
    /// not another site's page, and still needs its session and CSRF token.
    static func sameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[.secFetchSite] { return site == "same-origin" }
        guard let origin = request.headers[.origin] else { return true }
        guard let host = request.head.authority else { return false }
        return origin == "https://" + host || origin == "http://" + host
    }
}

extension HTTPField.Name {
    static var secFetchSite: Self { .init("Sec-Fetch-Site")! }
    static var xFrameOptions: Self { .init("X-Frame-Options")! }
    static var referrerPolicy: Self { .init("Referrer-Policy")! }
}
