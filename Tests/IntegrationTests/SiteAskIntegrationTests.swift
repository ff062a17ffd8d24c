import Foundation
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// A site refused by the web filter, as a real child meets it and asks for it: the block page
/// says why, her ask reaches the guardian, a grant for a time lets it past the filter until it
/// ends, and `grant --always` lets it past for good, until a guardian takes it back.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: network namespaces, iptables, NFQUEUE, dnsmasq, users"))
struct SiteAskIntegrationTests {
    func guardian(_ world: AgentWorld, _ arguments: String...) throws -> CommandResult {
        let result = try world.cli(as: world.guardian, arguments: arguments)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.stderr)")
        return result
    }

    /// Whether the child reaches the site: its name resolves and its HTTPS server answers.
    func reaches(_ world: AgentWorld, _ name: String) throws -> Bool {
        let result = try world.inNetwork(
            as: world.child, "/usr/bin/curl", ["-sk", "--max-time", "5", "--noproxy", "*", "https://\(name)/"])
        return result.status == 0 && result.stdout == "https \(name)\n"
    }

    /// The number in `asked … (ask N)`.
    func askNumber(_ output: String) throws -> String {
        let range = try #require(output.range(of: #"\(ask [0-9]+\)"#, options: .regularExpression), "\(output)")
        return String(output[range].dropFirst(5).dropLast())
    }

    @Test func aFilteredSiteIsAskedForAndAllowedForATimeThenAlways() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try world.startWebServers()
        _ = try guardian(world, "authorize", "--child", world.child)
        _ = try guardian(world, "filter", "auto", "--block", "blocked.test", "--user", world.child)
        #expect(try !reaches(world, "www.blocked.test"))
        #expect(try reaches(world, "www.allowed.test"))
        // Plain HTTP gets the block page, which says it is the filter and how to ask.
        let page = try world.inNetwork(
            as: world.child, "/usr/bin/curl",
            ["-s", "--max-time", "5", "--noproxy", "*", "-H", "Host: www.blocked.test", "http://10.1.1.1/"])
        #expect(page.stdout.contains("The web filter your guardian chose blocks this site."), "\(page.stdout)")
        #expect(page.stdout.contains("screentime ask --domain blocked.test"), "\(page.stdout)")

        // She asks; a guardian grants the 15 minutes asked: the site is let past the filter.
        let asked = try world.cli(as: world.child, "ask", "--domain", "blocked.test")
        #expect(asked.status == 0, "\(asked.stderr)")
        let first = try askNumber(asked.stdout)
        let listed = try guardian(world, "requests", "--pending")
        #expect(listed.stdout.contains("\(first)  \(world.child)  15 min of blocked.test  pending"), "\(listed.stdout)")
        _ = try guardian(world, "grant", first)
        #expect(eventually(5) { (try? reaches(world, "www.blocked.test")) == true })
        // Ended early: refused again at once.
        _ = try guardian(world, "grant", "--end", first)
        #expect(eventually(5) { (try? reaches(world, "www.blocked.test")) == false })

        // Asked again, allowed always: no end, and said so.
        Thread.sleep(forTimeInterval: 10)  // a child's asks are at least 10 s apart
        let again = try world.cli(as: world.child, "ask", "--domain", "blocked.test", "--note", "for school")
        #expect(again.status == 0, "\(again.stderr)")
        let second = try askNumber(again.stdout)
        let bad = try world.cli(as: world.guardian, "grant", second, "--always", "--minutes", "5")
        #expect(bad.status == 64 && bad.stderr.contains("--always"), "\(bad.status) \(bad.stderr)")
        let always = try guardian(world, "grant", second, "--always")
        #expect(always.stdout.contains("allowed \(world.child) blocked.test always"), "\(always.stdout)")
        #expect(eventually(5) { (try? reaches(world, "video.blocked.test")) == true })
        let requests = try guardian(world, "requests", "--user", world.child)
        #expect(
            requests.stdout.contains("\(second)  \(world.child)  blocked.test  allowed always"), "\(requests.stdout)")
        // A grant with no end is still the guardian's to take back.
        _ = try guardian(world, "grant", "--end", second)
        #expect(eventually(5) { (try? reaches(world, "www.blocked.test")) == false })
        #expect(world.agentIsRunning)
    }

    /// What a child asks for is what a guardian reads: a site, never all of a public suffix, and
    /// a name with letters outside ASCII shown beside its ASCII form (a look-alike of an innocent
    /// site told apart).
    @Test func aChildCannotAskForAllOfASuffixOrDisguiseTheSite() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        _ = try guardian(world, "authorize", "--child", world.child)
        for suffix in ["com", "co.uk", "COM."] {
            let whole = try world.cli(as: world.child, "ask", "--domain", suffix)
            #expect(whole.status == 65 && whole.stderr.contains("ask for a site"), "\(suffix): \(whole.stderr)")
        }
        // "wikipedia.org" with a Cyrillic і (U+0456).
        let lookAlike = try world.cli(as: world.child, "ask", "--domain", "w\u{0456}kipedia.org")
        #expect(lookAlike.status == 0, "\(lookAlike.stderr)")
        let listed = try guardian(world, "requests", "--pending")
        #expect(
            listed.stdout.contains("15 min of w\u{0456}kipedia.org (xn--wkipedia-thh.org)  pending"), "\(listed.stdout)"
        )
        // A name under a domain shielded by name is asked for as the shield's entry: what a grant
        // lifts, and what the guardian reads.
        _ = try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        Thread.sleep(forTimeInterval: 10)  // a child's asks are at least 10 s apart
        let under = try world.cli(as: world.child, "ask", "--domain", "video.blocked.test")
        #expect(under.status == 0, "\(under.stderr)")
        let shown = try guardian(world, "requests", "--pending")
        #expect(shown.stdout.contains("15 min of blocked.test  pending"), "\(shown.stdout)")
        #expect(!shown.stdout.contains("video.blocked.test"), "\(shown.stdout)")
    }
}
