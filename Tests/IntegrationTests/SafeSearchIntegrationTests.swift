import Foundation
import LinuxSupport
import ScreenTimeTestThreads
import Testing

/// Safe search for a real child: her lookups of Google and YouTube answered as aliases of their
/// safe hosts, with the addresses the system's resolver gives them (dnsmasq here); nobody else's
/// lookups touched; off again at once.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: network namespaces, iptables, NFQUEUE, dnsmasq, users"))
struct SafeSearchIntegrationTests {
    /// dig's answer section as `name type value` lines, for a user (nil: root).
    func answers(_ world: AgentWorld, as user: String?, _ name: String, type: String = "A") throws -> [String] {
        let result = try world.inNetwork(
            as: user, "/usr/bin/dig", ["+tries=1", "+time=2", "+noall", "+answer", "@127.0.0.1", name, type])
        return result.stdout.split(separator: "\n").map { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count >= 5 ? "\(fields[0]) \(fields[3]) \(fields[4])" : String(line)
        }
    }

    /// curl to `name` at `address` (no DNS), as a user: its status and what the server said.
    func curl(_ world: AgentWorld, as user: String?, _ name: String, _ address: String) throws -> CommandResult {
        try world.inNetwork(
            as: user, "/usr/bin/curl",
            ["-sk", "--max-time", "5", "--noproxy", "*", "--resolve", "\(name):443:\(address)", "https://\(name)/"])
    }

    @Test func googleAndYouTubeAreTheirSafeVersionsForTheChildAlone() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try world.startWebServers()
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        #expect(try answers(world, as: world.child, "www.google.com") == ["www.google.com. A 10.9.9.9"])

        let on = try world.cli(as: world.guardian, "filter", "--safe-search", "on", "--user", world.child)
        #expect(on.status == 0, "\(on.stderr)")
        #expect(on.stdout.contains("webContent.safeSearch: moderate"), "\(on.stdout)")
        let safeGoogle = [
            "www.google.com. CNAME forcesafesearch.google.com.", "forcesafesearch.google.com. A 10.8.8.8",
        ]
        // The safe host's addresses are learned in the background when safe search comes into
        // force; a lookup before that is dropped and asked again.
        #expect(eventually(10) { (try? answers(world, as: world.child, "www.google.com")) == safeGoogle })
        // Status says which safe hosts the PC's resolver has no address for (dnsmasq here knows
        // Google's, YouTube's and DuckDuckGo's, not Bing's).
        let problems = try world.status(of: world.child).domainShield?.problems ?? []
        #expect(
            problems.contains {
                $0.contains("no address for strict.bing.com") && !$0.contains("forcesafesearch")
                    && !$0.contains("duckduckgo")
            }, "\(problems)")
        // DuckDuckGo's page without scripts has no safe host (and turns safe search off with
        // kp=-2): refused to her, answered for root.
        #expect(try answers(world, as: world.child, "html.duckduckgo.com").isEmpty)
        #expect(try answers(world, as: nil, "html.duckduckgo.com") == ["html.duckduckgo.com. A 10.13.13.13"])
        #expect(
            try answers(world, as: world.child, "duckduckgo.com") == [
                "duckduckgo.com. CNAME safe.duckduckgo.com.", "safe.duckduckgo.com. A 10.13.13.13",
            ])
        let youtube = try answers(world, as: world.child, "WWW.YOUTUBE.COM")
        #expect(
            youtube == [
                "WWW.YOUTUBE.COM. CNAME restrictmoderate.youtube.com.", "restrictmoderate.youtube.com. A 10.12.12.12",
            ], "\(youtube)")
        let v6 = try answers(world, as: world.child, "www.google.com", type: "AAAA")
        #expect(
            v6 == ["www.google.com. CNAME forcesafesearch.google.com.", "forcesafesearch.google.com. AAAA fd00::8"])
        // glibc, as programs resolve (IPv6 first here): the safe host's address, under its name.
        let host = try world.inNetwork(as: world.child, "/usr/bin/getent", ["hosts", "www.google.com"])
        #expect(
            host.status == 0 && host.stdout.hasPrefix("fd00::8 ") && host.stdout.contains("forcesafesearch.google.com"),
            "\(host.status) \(host.stdout) \(host.stderr)")
        // Reached without the alias (an address cached from before, typed in): only the safe
        // host's address is let through, at the connection.
        let unsafe = try curl(world, as: world.child, "www.google.com", "10.9.9.9")
        #expect(unsafe.status != 0 && !unsafe.stdout.contains("https"), "\(unsafe.status) \(unsafe.stdout)")
        let safe = try curl(world, as: world.child, "www.google.com", "10.8.8.8")
        #expect(safe.status == 0 && safe.stdout == "https www.google.com\n", "\(safe.status) \(safe.stdout)")
        #expect(try curl(world, as: world.bystander, "www.google.com", "10.9.9.9").status == 0)
        // The safe host's own name, sent to the unsafe address (its Host inside the site's):
        // reset; at its own address, served (second attack, finding 2).
        let fronted = try curl(world, as: world.child, "forcesafesearch.google.com", "10.9.9.9")
        #expect(fronted.status != 0 && !fronted.stdout.contains("https"), "\(fronted.status) \(fronted.stdout)")
        #expect(try curl(world, as: world.child, "forcesafesearch.google.com", "10.8.8.8").status == 0)
        // A connection naming nothing (an address typed in, the site's Host inside) to an address
        // her resolver gave for one of Google's names is reset (finding 1); a bystander's is served.
        func nameless(_ user: String) throws -> CommandResult {
            try world.inNetwork(
                as: user, "/usr/bin/curl",
                ["-sk", "--max-time", "5", "--noproxy", "*", "-H", "Host: www.google.com", "https://10.9.9.9/"])
        }
        #expect(try answers(world, as: world.child, "images.www.google.com") == ["images.www.google.com. A 10.9.9.9"])
        let unnamed = try nameless(world.child)
        #expect(unnamed.status != 0 && !unnamed.stdout.contains("https"), "\(unnamed.status) \(unnamed.stdout)")
        #expect(try nameless(world.bystander).status == 0)
        // Two questions in one query, one of them the search engine's: dropped, not passed on for
        // the resolver to answer (finding 4).
        let twoQuestions = try world.inNetwork(
            as: world.child, "/usr/bin/python3",
            [
                "-c",
                """
                import socket, dns.message, dns.rdatatype
                m = dns.message.make_query("allowed.test", "A")
                m.question.append(dns.message.make_query("www.google.com", "A").question[0])
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
                s.sendto(m.to_wire(), ("127.0.0.1", 53))
                try: print("answered", s.recv(4096)[:2].hex())
                except socket.timeout: print("no answer")
                """,
            ])
        #expect(twoQuestions.stdout.contains("no answer"), "\(twoQuestions.stdout) \(twoQuestions.stderr)")
        // Root and a bystander get the search engine itself.
        for user in [nil, world.bystander] {
            #expect(try answers(world, as: user, "www.google.com") == ["www.google.com. A 10.9.9.9"])
        }

        // Chromium forces it too while she has it (the world's own policy directory).
        let chromium = world.directory + "/root/etc/chromium/policies/managed/screentime.json"
        #expect(
            eventually(5) {
                (try? String(contentsOfFile: chromium, encoding: .utf8))?.contains("\"ForceYouTubeRestrict\":1") == true
            })

        let off = try world.cli(as: world.guardian, "filter", "--safe-search", "off", "--user", world.child)
        #expect(off.status == 0 && !off.stdout.contains("safeSearch"), "\(off.stdout)")
        #expect(try answers(world, as: world.child, "www.google.com") == ["www.google.com. A 10.9.9.9"])
        #expect(try curl(world, as: world.child, "www.google.com", "10.9.9.9").status == 0)
        #expect(eventually(5) { (try? String(contentsOfFile: chromium, encoding: .utf8))?.contains("Force") == false })

        // Bad input says what was wrong and changes nothing.
        let maybe = try world.cli(as: world.guardian, "filter", "--safe-search", "maybe", "--user", world.child)
        #expect(maybe.status == 64 && maybe.stderr.contains("maybe"), "\(maybe.status) \(maybe.stderr)")
        let nothing = try world.cli(as: world.guardian, "filter", "--user", world.child)
        #expect(nothing.status == 64 && nothing.stderr.contains("--safe-search"), "\(nothing.stderr)")
        #expect(try world.status(of: world.child).stores.allSatisfy { $0.settings.webContent.safeSearch == nil })
    }
}
