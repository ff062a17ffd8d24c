import Foundation
import LinuxSupport
import ScreenTimeAgent
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

/// A child's rules page: what the forms change at the agent, read back as `status` and `monitor
/// list` read it, and what a bad form gets.
@Suite struct DashboardRulesTests {
    let agent = try! InProcessAgent()
    var mum: UInt32 { agent.accounts.uid("mum") }

    func send<R: ControlRequest>(_ request: R) throws -> R.Reply {
        let reply = agent.router.reply(
            to: try RequestEnvelope.encode(request),
            context: RequestContext(peer: PeerCredentials(pid: 1, uid: mum, gid: mum)))
        return try ReplyCoding.decode(R.Reply.self, from: reply)
    }

    init() throws {
        _ = try send(AuthorizeRequest(user: "kid", member: .child))
    }

    /// Signed in as mum, the rules page's CSRF token.
    private func signedIn(_ server: DashboardServer) async throws -> String {
        // The scheduler runs: a limit or downtime is in force when its request is answered.
        try await agent.serve()
        let signedIn = try await server.request("POST", "/signin", form: ["user": "mum", "password": "right"])
        #expect(signedIn.status == 303, "\(signedIn.body)")
        let page = try await server.request("GET", "/child/kid/rules")
        #expect(page.status == 200, "\(page.body)")
        return try #require(DashboardServer.csrf(in: page.body))
    }

    private var guardianStore: StoreSettings? {
        get throws {
            try send(StatusRequest(user: "kid")).stores.first { $0.client == "screentime" && $0.name == "default" }?
                .settings
        }
    }

    /// A service is one choice on the page, in force in both category shields, shown as one row
    /// by its name, and removed as one.
    @Test func aServiceShieldedFromThePageIsOneItem() async throws {
        let server = try await DashboardServer(agent: agent)
        let csrf = try await signedIn(server)
        let before = try await server.request("GET", "/child/kid/rules")
        #expect(before.body.contains("<option value=\"blocks\">Blocks Online</option>"), "\(before.body)")
        let shielded = try await server.request("POST", "/child/kid/shield", form: ["csrf": csrf, "service": "blocks"])
        #expect(shielded.status == 303, "\(shielded.body)")
        let store = try #require(try guardianStore)
        #expect(store.shield.applicationCategories?.categories.count == 1)
        #expect(store.shield.webDomainCategories?.categories == store.shield.applicationCategories?.categories)
        let page = try await server.request("GET", "/child/kid/rules")
        #expect(page.body.contains("Blocks Online <span class=\"note\">service</span>"), "\(page.body)")
        #expect(!page.body.contains("service.blocks"), "the service is shown by its name, once")
        #expect(page.body.contains("name=\"service\" value=\"blocks\""))
        let unknown = try await server.request("POST", "/child/kid/shield", form: ["csrf": csrf, "service": "nope"])
        #expect(
            (400..<500).contains(unknown.status) && unknown.body.contains("there is no service"),
            "\(unknown.status) \(unknown.body)")
        let removed = try await server.request(
            "POST", "/child/kid/shield", form: ["csrf": csrf, "action": "remove", "service": "blocks"])
        #expect(removed.status == 303, "\(removed.body)")
        #expect(try guardianStore?.shield.applicationCategories?.categories.isEmpty ?? true)
        #expect(try guardianStore?.shield.webDomainCategories?.categories.isEmpty ?? true)
    }

    @Test func aDomainAndACategoryShieldedFromThePageAreInForceAndRemovedAgain() async throws {
        let server = try await DashboardServer(agent: agent)
        let csrf = try await signedIn(server)
        let shielded = try await server.request(
            "POST", "/child/kid/shield", form: ["csrf": csrf, "domain": "games.example.com"])
        #expect(shielded.status == 303 && shielded.headers["location"] == "/child/kid/rules", "\(shielded.body)")
        let added = try await server.request(
            "POST", "/child/kid/shield", form: ["csrf": csrf, "category": "Game"])
        #expect(added.status == 303, "\(added.body)")
        let store = try #require(try guardianStore)
        #expect(store.shield.webDomains?.count == 1)
        #expect(store.shield.applicationCategories?.categories.count == 1)
        // In force: the merged policy the shields enforce has them.
        let effective = try send(StatusRequest(user: "kid")).effective
        #expect(effective.shieldedWebDomains.contains { $0.stores == ["screentime/default"] })
        #expect(effective.applicationCategoryShields.contains { $0.store == "screentime/default" })

        let page = try await server.request("GET", "/child/kid/rules")
        #expect(page.body.contains("games.example.com") && page.body.contains("Game"), "\(page.body)")
        // Each has its Remove button, which names it as the command line would.
        #expect(page.body.contains("name=\"domain\" value=\"games.example.com\""))
        let removed = try await server.request(
            "POST", "/child/kid/shield", form: ["csrf": csrf, "action": "remove", "domain": "games.example.com"])
        #expect(removed.status == 303, "\(removed.body)")
        #expect(try guardianStore?.shield.webDomains?.isEmpty ?? true)
        #expect(try guardianStore?.shield.applicationCategories != nil)

        // An app shielded by its token (as a guardian app's picker does) is removed by it.
        let game = agent.app("org.example.Blocks")
        _ = try send(
            ShieldRequest(
                target: StoreTarget(user: "kid"), selection: FamilyActivitySelection(applicationTokens: [game])))
        #expect(try guardianStore?.shield.applications == [game])
        let listed = try await server.request("GET", "/child/kid/rules")
        #expect(listed.body.contains("name=\"app-token\" value=\"\(game.base64)\""), "\(listed.body)")
        let unshielded = try await server.request(
            "POST", "/child/kid/shield", form: ["csrf": csrf, "action": "remove", "app-token": game.base64])
        #expect(unshielded.status == 303, "\(unshielded.body)")
        #expect(try guardianStore?.shield.applications?.isEmpty ?? true)
        let bad = try await server.request(
            "POST", "/child/kid/shield", form: ["csrf": csrf, "action": "remove", "app-token": "<b>"])
        #expect(bad.status == 400 && bad.body.contains("not an app"), "\(bad.body)")
        await server.stop()
    }

    @Test func aScreenTimeLimitAndADowntimeSetFromThePageAreTheAgentsAndEndAgain() async throws {
        let server = try await DashboardServer(agent: agent)
        let csrf = try await signedIn(server)
        let limit = try await server.request(
            "POST", "/child/kid/limit", form: ["csrf": csrf, "on": "screen-time", "daily": "mon-fri=1h,sat,sun=3h"])
        #expect(limit.status == 303, "\(limit.body)")
        let limits = try send(StatusRequest(user: "kid")).limits ?? []
        #expect(limits.contains { $0.name == "screen time" && $0.allowance != nil }, "\(limits)")
        #expect(try await server.request("GET", "/child/kid/rules").body.contains("screen time, today"))

        let downtime = try await server.request(
            "POST", "/child/kid/downtime", form: ["csrf": csrf, "from": "21:00", "to": "07:00", "days": "weekdays"])
        #expect(downtime.status == 303, "\(downtime.body)")
        let monitors = try send(MonitorListRequest(user: "kid")).monitors.filter { $0.builtIn == "downtime" }
        #expect(monitors.count == 1 && monitors.first?.weekdays == [2, 3, 4, 5, 6], "\(monitors)")
        #expect(monitors.first?.schedule.intervalStart.hour == 21 && monitors.first?.schedule.intervalEnd.hour == 7)
        let page = try await server.request("GET", "/child/kid/rules").body
        #expect(page.contains("21:00–07:00, weekdays"), "\(page)")

        let ended = try await server.request("POST", "/child/kid/downtime", form: ["csrf": csrf, "action": "off"])
        #expect(ended.status == 303, "\(ended.body)")
        #expect(try send(MonitorListRequest(user: "kid")).monitors.allSatisfy { $0.builtIn != "downtime" })
        let off = try await server.request(
            "POST", "/child/kid/limit", form: ["csrf": csrf, "on": "screen-time", "action": "remove"])
        #expect(off.status == 303, "\(off.body)")
        #expect(!(try send(StatusRequest(user: "kid")).limits ?? []).contains { $0.name == "screen time" })
        await server.stop()
    }

    @Test func aBadRuleFormIsRefusedSayingWhyAndChangesNothing() async throws {
        let server = try await DashboardServer(agent: agent)
        let csrf = try await signedIn(server)
        let before = try send(StatusRequest(user: "kid"))
        let cases: [(path: String, form: [String: String], says: String)] = [
            ("/child/kid/shield", [:], "Choose an app"),
            ("/child/kid/shield", ["domain": "not a domain!"], "domain"),
            ("/child/kid/limit", ["on": "screen-time", "daily": "two hours"], "is not a duration"),
            ("/child/kid/limit", ["on": "screen-time"], "as 45m"),
            ("/child/kid/limit", ["on": "category", "daily": "1h"], "Choose the category"),
            ("/child/kid/limit", ["on": "everything", "daily": "1h"], "screen time, a category or an app"),
            ("/child/kid/downtime", ["from": "25:00", "to": "07:00"], "HH:MM"),
            ("/child/kid/downtime", ["from": "21:00", "to": "07:00", "days": "someday"], "not a day"),
            ("/child/nobody/limit", ["on": "screen-time", "daily": "1h"], "nobody"),
        ]
        for (path, form, says) in cases {
            var fields = form
            fields["csrf"] = csrf
            let answer = try await server.request("POST", path, form: fields)
            #expect(
                (400..<500).contains(answer.status) && answer.body.contains(says), "\(path) \(form): \(answer.body)")
        }
        // Without the page's token: refused before anything is read.
        let forged = try await server.request(
            "POST", "/child/kid/limit", form: ["on": "screen-time", "daily": "1h", "csrf": "forged"])
        #expect(forged.status == 403)
        let after = try send(StatusRequest(user: "kid"))
        #expect(after.stores == before.stores && after.limits == before.limits)
        #expect(try send(MonitorListRequest(user: "kid")).monitors.isEmpty)
        await server.stop()
    }
}
