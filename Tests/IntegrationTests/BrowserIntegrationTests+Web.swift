import Foundation
import LinuxSupport
import Testing

/// The web as families think of it, in the real browsers of a real child: a service shielded
/// by name, safe search, and the block page that says why.
extension BrowserIntegrationTests {
    /// Names the test servers' certificate is for: the sites of these tests.
    static let webNames = [
        "allowed.test", "*.allowed.test", "www.google.com", "forcesafesearch.google.com", "www.youtube.com",
        "restrictmoderate.youtube.com", "www.reddit.com", "*.other.test", "IP:10.6.6.6",
    ]

    /// A world with the web servers for `webNames` and a route out (Chromium counts itself
    /// offline without one).
    func webWorld() throws -> AgentWorld {
        let world = try AgentWorld(network: true)
        do {
            try world.startWebServers(names: Self.webNames)
            try addRoute(world)
        } catch {
            world.tearDown()
            throw error
        }
        return world
    }

    /// Chromium, as the child and as a bystander: with safe search on, her Google is the safe
    /// host's server (reached through the agent's alias), his the search engine's own; with the
    /// "reddit" service shielded, her Reddit reached without DNS (an address she mapped herself)
    /// is reset over HTTPS and answered with the block page over plain HTTP, naming the site and
    /// why; his loads.
    @Test func chromiumShowsTheChildTheSafeSearchAndNotAShieldedService() throws {
        let machine = try SystemPolicies()
        defer { machine.restore() }
        let world = try webWorld()
        defer { world.tearDown() }
        let childHome = try home(world, world.child, "chromium", provider: false)
        let bystanderHome = try home(world, world.bystander, "chromium", provider: false)
        // The shipped catalogue's Reddit, in the world's own services folder.
        let shipped =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
            + "/../../etc/screentime/services/reddit.service"
        try Files.writeAtomically(
            try Files.read(shipped), to: world.directory + "/services/reddit.service", mode: 0o644)
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "filter", "--safe-search", "on", "--user", world.child)
        try guardian(world, "shield", "--user", world.child, "--service", "reddit", "--service", "tubesite")
        waitForPolicies(world, present: true)
        let policy = object(Self.chromiumPolicy(world)) ?? [:]
        #expect(policy["ForceGoogleSafeSearch"] as? Bool == true, "\(policy)")

        // The safe host's address is learned in the background: the first lookup may be dropped.
        var hers = try chromium(world, as: world.child, home: childHome, "https://www.google.com/where")
        for _ in 0..<5 where !hers.dom.contains("https www.google.com at") {
            Thread.sleep(forTimeInterval: 1)
            hers = try chromium(world, as: world.child, home: childHome, "https://www.google.com/where")
        }
        #expect(hers.dom.contains("https www.google.com at 10.8.8.8"), "her Google is not the safe host's: \(hers)")
        let his = try chromium(world, as: world.bystander, home: bystanderHome, "https://www.google.com/where")
        #expect(his.dom.contains("https www.google.com at 10.9.9.9"), "\(his)")
        // YouTube too, at restrictmoderate's address.
        let video = try chromium(world, as: world.child, home: childHome, "https://www.youtube.com/where")
        #expect(video.dom.contains("https www.youtube.com at 10.12.12.12"), "\(video)")

        // Reddit, its name mapped to a server by hand (no DNS to refuse it): reset over HTTPS; over
        // plain HTTP the block page, as she sees it.
        let mapped = ["--host-resolver-rules=MAP www.reddit.com 10.1.1.1"]
        let secure = try chromium(
            world, as: world.child, home: childHome, "https://www.reddit.com/", flags: mapped)
        #expect(!secure.dom.contains("https www.reddit.com"), "the shielded service loaded: \(secure)")
        #expect(secure.error?.contains("ERR_CONNECTION_RESET") == true, "\(secure)")
        // Reddit is on the browsers' HSTS preload list: Chromium never asks for it over plain
        // HTTP. The world's Tube Site (other.test) is not: its plain-HTTP page is the block page.
        let plainMapped = ["--host-resolver-rules=MAP www.other.test 10.1.1.1"]
        let plain = try chromium(
            world, as: world.child, home: childHome, "http://www.other.test/", flags: plainMapped)
        #expect(plain.dom.contains("other.test is shielded"), "no block page: \(plain)")
        #expect(plain.dom.contains("Your guardian chose to shield this site."), "\(plain.dom)")
        #expect(plain.dom.contains("screentime ask --domain other.test"), "\(plain.dom)")
        try screenshot(
            world, as: world.child, home: childHome, "http://www.other.test/", name: "chromium-block-page",
            flags: plainMapped)
        // She asks for it (as the page says); a guardian, from his own account, grants it: it loads.
        let asked = try world.cli(as: world.child, "ask", "--domain", "other.test")
        let number = try #require(asked.stdout.split(separator: "(ask ").last?.split(separator: ")").first, "\(asked)")
        try guardian(world, "grant", String(number))
        let granted = try chromium(
            world, as: world.child, home: childHome, "https://www.other.test/", flags: plainMapped)
        #expect(granted.dom.contains("https www.other.test"), "the site granted did not load: \(granted)")
        let theirs = try chromium(
            world, as: world.bystander, home: bystanderHome, "https://www.reddit.com/", flags: mapped)
        #expect(theirs.dom.contains("https www.reddit.com"), "\(theirs)")

        try guardian(world, "revoke", "--user", world.child)
        expectPoliciesGone(world, firefoxHad: nil, machine: machine)
    }

    /// Firefox has no policy that forces safe search: the agent's alias at the name is what holds
    /// it, and the DoH the child's profile sets is off by the agent's policy.
    @Test func firefoxShowsTheChildTheSafeSearchByTheAliasAlone() throws {
        let machine = try SystemPolicies()
        defer { machine.restore() }
        let world = try webWorld()
        defer { world.tearDown() }
        let childHome = try home(world, world.child, "firefox", provider: false)
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "filter", "--safe-search", "on", "--user", world.child)
        waitForPolicies(world, present: true)
        // Learned in the background; the first lookup may be dropped (Firefox then shows an error).
        #expect(
            eventually(10) {
                (try? world.inNetwork(as: world.child, "/usr/bin/getent", ["ahosts", "www.google.com"]))?.stdout
                    .contains("10.8.8.8") == true
            })
        let pages = try firefox(
            world, as: world.child, home: childHome, "https://www.google.com/where", "https://www.youtube.com/where",
            "https://www.allowed.test/")
        #expect(pages[0].text.contains("https www.google.com at 10.8.8.8"), "\(pages[0])")
        #expect(pages[1].text.contains("https www.youtube.com at 10.12.12.12"), "\(pages[1])")
        #expect(pages[2].text.contains("https www.allowed.test"), "\(pages[2])")
        try guardian(world, "revoke", "--user", world.child)
        expectPoliciesGone(world, firefoxHad: nil, machine: machine)
    }
}
