import FoundationEssentials
import Hummingbird
import ScreenTimeCore
import ScreenTimeIPC

// A child's rules from the phone: what is shielded (the guardian's own store, `screentime
// shield --user NAME`), the limits, downtime, and what was refused lately. Each change is the
// request the command line sends, in the guardian's session; the agent checks it as it checks the
// command's.
extension Dashboard {
    func addRuleRoutes(to router: Router<DashboardContext>) {
        router.get("/child/:name/rules") { request, context in
            let name = try context.parameters.require("name")
            return try await signedIn(request, context) { token in try await rules(name, token) }
        }
        router.post("/child/:name/shield") { request, context in
            let name = try context.parameters.require("name")
            return try await change(request, context, name) { form, token in
                let remove = form["action"] == "remove"
                var shield = ShieldRequest(target: StoreTarget(user: name), remove: remove)
                if let app = Self.field(form, "app") { shield.applications = [app] }
                if let category = Self.field(form, "category") { shield.applicationCategories = [category] }
                if let domain = Self.field(form, "domain") { shield.webDomains = [domain] }
                if let category = Self.field(form, "web-category") { shield.webCategories = [category] }
                if let service = Self.field(form, "service") { shield.services = [service] }
                // An app shielded already is named by its token (it may be a program known by its
                // contents, or no longer installed).
                if let text = Self.field(form, "app-token") {
                    guard let token = try? ApplicationToken(base64: text) else {
                        throw HTTPError(.badRequest, message: "That is not an app's token.")
                    }
                    shield.selection = FamilyActivitySelection(applicationTokens: [token])
                }
                guard !shield.isEmpty else {
                    throw HTTPError(
                        .badRequest, message: "Choose an app, a category, a service or a web domain to shield.")
                }
                _ = try await agent.send(shield, session: token)
            }
        }
        router.post("/child/:name/limit") { request, context in
            let name = try context.parameters.require("name")
            return try await change(request, context, name) { form, token in
                _ = try await agent.send(try Self.limit(form, user: name), session: token)
            }
        }
        router.post("/child/:name/downtime") { request, context in
            let name = try context.parameters.require("name")
            return try await change(request, context, name) { form, token in
                _ = try await agent.send(try Self.downtime(form, user: name), session: token)
            }
        }
    }

    /// A change to a child's rules from a form of the rules page, which is shown again after it.
    private func change(
        _ request: Request, _ context: DashboardContext, _ name: String,
        _ body: @escaping ([String: String], String) async throws -> Void
    ) async throws -> Response {
        try await signedIn(request, context) { token in
            let form = try await checkedForm(request, context, token: token)
            try await body(form, token)
            return Response.redirect(to: "/child/\(Pages.path(name))/rules", type: .normal)
        }
    }

    /// A form's field, trimmed; nil when it is empty or absent.
    static func field(_ form: [String: String], _ name: String) -> String? {
        guard let value = form[name]?.trimmingSpaces(), !value.isEmpty else { return nil }
        return value
    }

    /// `limit` from the form: the whole day's screen time, or a category's or an app's daily time
    /// (`45m`, `mon-fri=1h,sat,sun=3h`); `action=remove` takes it away.
    static func limit(_ form: [String: String], user: String) throws -> LimitRequest {
        let remove = form["action"] == "remove"
        var items = ActivityItems(applications: [], applicationCategories: [], webDomains: [])
        let screenTime: Bool
        switch form["on"] {
        case "screen-time": screenTime = true
        case "category":
            guard let category = field(form, "category") else {
                throw HTTPError(.badRequest, message: "Choose the category the limit is on.")
            }
            items.applicationCategories = [category]
            screenTime = false
        case "app":
            guard let app = field(form, "app") else {
                throw HTTPError(.badRequest, message: "Choose the app the limit is on.")
            }
            items.applications = [app]
            screenTime = false
        default: throw HTTPError(.badRequest, message: "A limit is on screen time, a category or an app.")
        }
        var request = LimitRequest(user: user, items: items, dailySeconds: nil, remove: remove, screenTime: screenTime)
        if !remove {
            guard let daily = field(form, "daily") else {
                throw HTTPError(.badRequest, message: "Give the day's time, as 45m, 1h30m or mon-fri=1h,sat,sun=3h.")
            }
            do throws(ScreenTimeCoreError) {
                request.daily = try DailyAllowance.parse(daily)
            } catch {
                throw HTTPError(.badRequest, message: "The day's time: \(error.message)")
            }
        }
        return request
    }

    /// `downtime` from the form: from and to (`HH:MM`), on some days; `action=off` ends it.
    static func downtime(_ form: [String: String], user: String) throws -> DowntimeRequest {
        let name = field(form, "name")
        if form["action"] == "off" {
            var request = DowntimeRequest(user: user, from: nil, to: nil, off: true)
            request.name = name
            return request
        }
        func time(_ key: String, _ label: String) throws -> DateComponents {
            let parts = (field(form, key) ?? "").split(separator: ":")
            guard parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour),
                (0...59).contains(minute)
            else { throw HTTPError(.badRequest, message: "Give when downtime \(label) as HH:MM.") }
            return DateComponents(hour: hour, minute: minute)
        }
        var weekdays: [Int]?
        if let days = field(form, "days"), days != "every day" {
            do throws(ScreenTimeCoreError) {
                weekdays = try Weekday.parse(days).sorted()
            } catch {
                throw HTTPError(.badRequest, message: "The days: \(error.message)")
            }
        }
        var request = DowntimeRequest(
            user: user, from: try time("from", "starts"), to: try time("to", "ends"), weekdays: weekdays,
            noLogin: form["no-login"] == "on")
        request.name = name
        return request
    }

    /// The rules page: the status of the child (stores, limits, what was refused), its monitors
    /// (downtime), and its apps and categories to choose from.
    func rules(_ name: String, _ token: String) async throws -> Response {
        let status = try await agent.send(StatusRequest(user: name), session: token)
        let monitors = try await agent.send(MonitorListRequest(user: name), session: token)
        let apps = (try? await agent.send(ApplicationsRequest(user: name), session: token).applications) ?? []
        let categories = (try? await agent.send(CategoriesRequest(user: name), session: token).categories) ?? []
        let services = (try? await agent.send(ServicesRequest(), session: token).services) ?? []
        return Pages.html(
            Pages.rules(
                name: name, status: status, monitors: monitors, apps: apps, categories: categories,
                services: services, csrf: csrf(token)))
    }
}
