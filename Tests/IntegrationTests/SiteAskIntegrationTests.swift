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
        try visit(world, name).status == 0
    }

    /// The child's visit of the site: curl's status (0: the site's own page), with what it said.
    func visit(_ world: AgentWorld, _ name: String) throws -> CommandResult {
        let result = try world.inNetwork(
            as: world.child, "/usr/bin/curl", ["-sSk", "--max-time", "5", "--noproxy", "*", "https://\(name)/"])
        guard result.status != 0 || result.stdout == "https \(name)\n" else {
            return CommandResult(status: -1, stdout: result.stdout, stderr: "another page: \(result.stdout)")
        }
        return result
    }

    /// Whether the child reaches the site within `seconds` (each try ends after 5 s): the time it
    /// took, or nil with what the last try met (curl's words, the agent's, and the kernel's).
    func reachedAfter(_ world: AgentWorld, _ name: String, within seconds: Double = 20) -> (Double?, String) {
        let start = Date()
        var last = "no try"
        let reached = eventually(seconds) {
            guard let result = try? visit(world, name) else { return false }
            last = "curl \(result.status): \(result.stderr)"
            return result.status == 0
        }
        guard !reached else { return (Date().timeIntervalSince(start), "") }
        let lookup = (try? world.inNetwork(as: world.child, "/usr/bin/dig", ["+short", "+tries=1", name]))?.stdout
        return (
            nil,
            "\(last)\nher lookup: \(lookup ?? "failed")\n\(world.queueAndCounters())\n\(world.agentLog(naming: nil, last: 40))"
        )
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
        let (granted, why) = reachedAfter(world, "www.blocked.test")
        #expect(granted != nil, "www.blocked.test, granted: \(why)")
        print("www.blocked.test: reached \(granted.map { String(format: "%.2f s", $0) } ?? "never") after the grant")
        // Ended early: refused again at once.
        _ = try guardian(world, "grant", "--end", first)
        #expect(eventually(10) { (try? reaches(world, "www.blocked.test")) == false })

        // Asked again, allowed always: no end, and said so.
        Thread.sleep(forTimeInterval: 10)  // a child's asks are at least 10 s apart
        let again = try world.cli(as: world.child, "ask", "--domain", "blocked.test", "--note", "for school")
        #expect(again.status == 0, "\(again.stderr)")
        let second = try askNumber(again.stdout)
        let bad = try world.cli(as: world.guardian, "grant", second, "--always", "--minutes", "5")
        #expect(bad.status == 64 && bad.stderr.contains("--always"), "\(bad.status) \(bad.stderr)")
        let allowed = try guardian(world, "grant", second, "--always")
        #expect(allowed.stdout.contains("allowed \(world.child) blocked.test always"), "\(allowed.stdout)")
        let (always, whyNot) = reachedAfter(world, "video.blocked.test")
        #expect(always != nil, "video.blocked.test, granted: \(whyNot)")
        print("video.blocked.test: reached \(always.map { String(format: "%.2f s", $0) } ?? "never") after the grant")
        let requests = try guardian(world, "requests", "--user", world.child)
        #expect(
            requests.stdout.contains("\(second)  \(world.child)  blocked.test  allowed always"), "\(requests.stdout)")
        // A grant with no end is still the guardian's to take back.
        _ = try guardian(world, "grant", "--end", second)
        #expect(eventually(10) { (try? reaches(world, "www.blocked.test")) == false })
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
