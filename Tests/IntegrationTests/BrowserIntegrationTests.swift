import Foundation
import LinuxSupport
import ScreenTimeTestThreads
import Testing

/// Real browsers from Debian (Chromium headless, Firefox ESR headless), run as the real child in
/// the world's network namespace, with a fresh profile that sets a custom DNS-over-HTTPS
/// provider: a DoH server of the test's own (`Fixtures/doh-server.py`, on 10.6.6.6:8443) that
/// answers every name, the shielded one too, with the allowed web server's address. Without the
/// agent the shielded site loads through it; while the child is authorized, the agent's managed
/// policies turn the provider off, the child's lookups go to the resolver the agent filters, and
/// the shielded site does not load while an allowed one does. A bystander, under the same system
/// policies, loads the shielded site.
///
/// Browsers read only the system's policy folders (`/etc/firefox/policies`,
/// `/etc/chromium/policies/managed`). The world's agent writes its own, and each browser runs in a
/// mount namespace of its own where the world's folders are mounted over the system's: an agent
/// installed on the machine keeps its real files (and its children their policies), which no
/// test reads or changes (before, a run deleted them). Each test leaves `/etc` as it found it,
/// bytes and modes, failing or not (it makes the two folders to mount over where they are not).
@Suite(
    .threadsOfTheirOwn, .serialized,
    .enabled(
        if: isRoot,
        "needs root: network namespaces, iptables, NFQUEUE, users, and the system's browser-policy directories")
)
struct BrowserIntegrationTests {
    static let firefoxPolicy = "/etc/firefox/policies/policies.json"
    static let chromiumPolicy = "/etc/chromium/policies/managed/screentime.json"
    static let chromePolicy = "/etc/opt/chrome/policies/managed/screentime.json"
    /// The system's policy folders the browsers read, with the world's that stand in for them.
    static func policyFolders(_ world: AgentWorld) -> [(system: String, own: String)] {
        ["/etc/chromium/policies/managed", "/etc/firefox/policies"].map { ($0, world.directory + "/root" + $0) }
    }
    /// The world's agent's policy files.
    static func firefoxPolicy(_ world: AgentWorld) -> String { world.directory + "/root" + firefoxPolicy }
    static func chromiumPolicy(_ world: AgentWorld) -> String { world.directory + "/root" + chromiumPolicy }
    /// The DoH provider the profiles name: an address, so that no lookup is needed to reach it.
    static let provider = "https://10.6.6.6:8443/dns-query"
    /// A name only the DoH provider answers (the namespace's resolver does not know it): a page
    /// of it loads only through the provider.
    static let providerOnly = "www.doh-only.test"

    /// The browser-policy files and directories as the machine had them, put back by `restore()`.
    struct SystemPolicies {
        static let files = [
            BrowserIntegrationTests.firefoxPolicy, BrowserIntegrationTests.chromiumPolicy,
            BrowserIntegrationTests.chromePolicy,
        ]
        static let directories = [
            "/etc/firefox", "/etc/firefox/policies", "/etc/chromium", "/etc/chromium/policies",
            "/etc/chromium/policies/managed", "/etc/opt", "/etc/opt/chrome", "/etc/opt/chrome/policies",
            "/etc/opt/chrome/policies/managed",
        ]
        var contents: [String: (bytes: [UInt8], mode: UInt32)] = [:]
        var existing: Set<String> = []

        init() throws {
            for file in Self.files where Files.exists(file) {
                var status = stat()
                guard stat(file, &status) == 0 else { throw WorldError("cannot stat \(file)") }
                contents[file] = (try Files.read(file), UInt32(status.st_mode) & 0o7777)
            }
            existing = Set(Self.directories.filter { Files.exists($0) })
            // The folders the world's are mounted over (empty, where the machine has none).
            for folder in ["/etc/chromium/policies/managed", "/etc/firefox/policies"] {
                try Files.makeDirectory(folder, mode: 0o755)
            }
        }

        /// Whether the machine's files are as they were (an installed agent's, untouched).
        var unchanged: Bool {
            Self.files.allSatisfy { file in
                contents[file].map { (try? Files.read(file)) == $0.bytes } ?? !Files.exists(file)
            }
        }

        /// What the machine had at `path`, as a JSON object; nil when it had no file.
        func json(_ path: String) -> [String: Any]? {
            contents[path].flatMap { try? JSONSerialization.jsonObject(with: Data($0.bytes)) as? [String: Any] }
        }

        func restore() {
            for file in Self.files {
                if let saved = contents[file] {
                    try? Files.writeAtomically(saved.bytes, to: file, mode: saved.mode)
                } else {
                    Files.remove(file)
                }
            }
            for directory in Self.directories.reversed() where !existing.contains(directory) {
                rmdir(directory)
            }
        }
    }

    func guardian(_ world: AgentWorld, _ arguments: String...) throws {
        let result = try world.cli(as: world.guardian, arguments: arguments)
        guard result.status == 0 else { throw WorldError("\(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    /// A world writing the real policies, with web servers whose certificate a browser can trust
    /// and the DoH provider on 10.6.6.6:8443.
    func browserWorld() throws -> AgentWorld {
        for program in ["/usr/bin/chromium", "/usr/bin/firefox-esr", "/usr/bin/certutil"] {
            guard FileManager.default.isExecutableFile(atPath: program) else {
                throw WorldError(
                    "\(program) is missing: `sudo make deps` installs chromium, firefox-esr, libnss3-tools")
            }
        }
        let world = try AgentWorld(network: true)
        do {
            try world.startWebServers(names: [
                "allowed.test", "*.allowed.test", "blocked.test", "*.blocked.test", "doh-only.test", "*.doh-only.test",
                "IP:10.6.6.6",
            ])
            try startProvider(world)
            try addRoute(world)
        } catch {
            world.tearDown()
            throw error
        }
        return world
    }

    /// A link to nowhere and a default route: without them Chromium counts itself offline and
    /// shows every failure as ERR_INTERNET_DISCONNECTED, not what a child would see.
    func addRoute(_ world: AgentWorld) throws {
        guard let namespace = world.namespace else { return }
        try system("/usr/sbin/ip", "-n", namespace, "link", "add", "st-out", "type", "veth", "peer", "st-far")
        // No IPv6 on it: its link-local address would appear a moment after the link goes up,
        // and Chromium, seeing the network change mid-load, fails with ERR_NETWORK_CHANGED (seen
        // once in a fresh-clone run).
        for link in ["st-out", "st-far"] {
            try system(
                "/usr/sbin/ip", "netns", "exec", namespace, "/usr/sbin/sysctl", "-qw",
                "net.ipv6.conf.\(link).disable_ipv6=1")
        }
        try system("/usr/sbin/ip", "-n", namespace, "addr", "add", "10.99.0.1/24", "dev", "st-out")
        try system("/usr/sbin/ip", "-n", namespace, "link", "set", "st-out", "up")
        try system("/usr/sbin/ip", "-n", namespace, "link", "set", "st-far", "up")
        try system("/usr/sbin/ip", "-n", namespace, "route", "add", "default", "via", "10.99.0.2")
    }

    /// The DoH provider, in the namespace (it goes with it): every A query is answered 10.1.1.1.
    func startProvider(_ world: AgentWorld) throws {
        guard let namespace = world.namespace else { throw WorldError("the provider needs a network") }
        let ready = world.directory + "/doh.ready"
        let command = [
            "setsid", "/usr/sbin/ip", "netns", "exec", namespace, "/usr/bin/python3",
            AgentWorld.fixture("doh-server.py"), world.directory + "/web.crt", world.directory + "/web.key",
            "10.6.6.6", "8443", "10.1.1.1", world.directory + "/doh.log", ready,
        ].joined(separator: " ")
        try system("/bin/sh", "-c", command + " > /dev/null 2>&1 < /dev/null &")
        for _ in 0..<500 {
            if Files.exists(ready) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw WorldError("the DoH provider did not start")
    }

    /// The names the provider was asked, in order.
    func providerQueries(_ world: AgentWorld) -> [String] {
        let log = (try? String(contentsOfFile: world.directory + "/doh.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").map(String.init)
    }

    /// A home of its own for `user`'s browser, owned by the user, whose certificate store trusts
    /// the world's test authority (and nothing else is changed: the system's policies stay as
    /// the agent wrote them). `provider`: the profile sets the test's DoH provider.
    func home(_ world: AgentWorld, _ user: String, _ browser: String, provider: Bool = true) throws -> String {
        let home = world.directory + "/\(browser)-\(user)"
        // Chromium reads $HOME/.pki/nssdb; Firefox the profile's own database.
        let database = browser == "chromium" ? home + "/.pki/nssdb" : home + "/profile"
        try Files.makeDirectory(database, mode: 0o700)
        try Files.makeDirectory(home + "/profile", mode: 0o700)
        try system("/usr/bin/certutil", "-N", "-d", "sql:" + database, "--empty-password")
        try system(
            "/usr/bin/certutil", "-A", "-d", "sql:" + database, "-n", "screentime test authority", "-t", "C,,", "-i",
            world.certificateAuthority)
        if browser == "chromium" {
            guard provider else {
                try system("/usr/bin/chown", "-R", "\(user):users", home)
                return home
            }
            // The profile's own secure-DNS setting (chrome://settings/security), not a flag.
            try #"{"dns_over_https":{"mode":"secure","templates":"\#(Self.provider)"}}"#.write(
                toFile: home + "/profile/Local State", atomically: true, encoding: .utf8)
        } else {
            // Mode 3: DoH only, never the system resolver. Firefox ignores private addresses in
            // DoH answers unless told otherwise.
            let trr = """
                user_pref("network.trr.mode", 3);
                user_pref("network.trr.uri", "\(Self.provider)");
                user_pref("network.trr.custom_uri", "\(Self.provider)");
                user_pref("network.trr.allow-rfc1918", true);

                """
            try """
            \(provider ? trr : "")user_pref("marionette.port", 2828);
            user_pref("browser.shell.checkDefaultBrowser", false);
            user_pref("datareporting.policy.dataSubmissionEnabled", false);
            user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
            user_pref("app.normandy.enabled", false);
            user_pref("browser.safebrowsing.update.enabled", false);

            """.write(toFile: home + "/profile/user.js", atomically: true, encoding: .utf8)
        }
        try system("/usr/bin/chown", "-R", "\(user):users", home)
        return home
    }

    /// Runs `command` in the world's network namespace and a mount namespace of its own, with the
    /// world's policy folders mounted over the system's, as `user` (nil: root).
    func browserRun(_ world: AgentWorld, as user: String?, _ command: [String]) throws -> CommandResult {
        var script = ""
        for (system, own) in Self.policyFolders(world) {
            script += "mkdir -p '\(own)' && mount --bind '\(own)' '\(system)' && "
        }
        script += "exec \"$@\""
        let who = user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=users", "--init-groups", "--"] } ?? []
        return try world.inNetwork(
            as: nil, "/usr/bin/unshare",
            ["-m", "--propagation", "private", "/bin/sh", "-c", script, "sh"] + who + command)
    }

    /// What Chromium shows `user` for `url`: the page's DOM, or the error it names
    /// (`Page load failed: net::ERR_...`) when the page does not load.
    func chromium(
        _ world: AgentWorld, as user: String, home: String, _ url: String, flags: [String] = []
    ) throws -> (dom: String, error: String?) {
        var result = try browserRun(
            world, as: user, ["/usr/bin/env"] + chromiumCommand(home: home) + ["--dump-dom"] + flags + [url])
        // A change of the namespace's network under a loaded machine: once more, the same.
        if result.stderr.contains("ERR_NETWORK_CHANGED") {
            result = try browserRun(
                world, as: user, ["/usr/bin/env"] + chromiumCommand(home: home) + ["--dump-dom"] + flags + [url])
        }
        let error = result.stderr.split(separator: "\n").first { $0.contains("Page load failed") }
        // The line is Chromium's log line: "[pid:tid:time:ERROR:file.cc:403] Page load failed: net::ERR_...".
        return (result.stdout, error.map { String($0.split(separator: "] ", maxSplits: 1).last ?? $0) })
    }

    /// A screenshot of what `user` sees at `url`, for a person to look at: kept in
    /// SCREENTIME_KEEP_LOGS when that is set, not taken otherwise. Headless Chromium takes none
    /// of a page that fails to load, so the page is reached from a script, and the error page
    /// it ends on is what is shot.
    func screenshot(
        _ world: AgentWorld, as user: String, home: String, _ url: String, name: String, flags: [String] = []
    ) throws {
        guard let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] else { return }
        let file = "\(home)/\(name).png"
        _ = try browserRun(
            world, as: user,
            ["/usr/bin/env"] + chromiumCommand(home: home) + [
                "--screenshot=" + file, "--window-size=800,450", "--timeout=2500",
            ] + flags + [
                "data:text/html,<script>location.href='\(url)'</script>"
            ])
        try? FileManager.default.removeItem(atPath: "\(keep)/\(name).png")
        try? FileManager.default.copyItem(atPath: file, toPath: "\(keep)/\(name).png")
    }

    func chromiumCommand(home: String) -> [String] {
        [
            "HOME=" + home, "/usr/bin/timeout", "40", "/usr/bin/chromium", "--headless=new", "--no-sandbox",
            "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=" + home + "/profile",
        ]
    }

    struct Page: Decodable {
        var url: String
        var error: String?
        var document: String
        var text: String
    }

    /// The pages Firefox shows `user` for `urls`, in one run of the browser.
    func firefox(_ world: AgentWorld, as user: String, home: String, _ urls: String...) throws -> [Page] {
        let result = try browserRun(
            world, as: nil,
            [
                "/usr/bin/timeout", "120", "/usr/bin/python3", AgentWorld.fixture("firefox-load.py"), user, home,
                home + "/profile", "2828",
            ] + urls)
        let pages = try result.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(Page.self, from: Data($0.utf8))
        }
        guard pages.count == urls.count else {
            let log = (try? String(contentsOfFile: home + "/firefox.log", encoding: .utf8)) ?? ""
            throw WorldError(
                "Firefox showed \(pages.count) of \(urls.count) pages: \(result.stderr)\n\(log.suffix(2000))")
        }
        return pages
    }

    /// Waits (up to 5 s) for the world's agent to have written or removed its policy files.
    func waitForPolicies(_ world: AgentWorld, present: Bool) {
        for _ in 0..<250 where Files.exists(Self.chromiumPolicy(world)) != present {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    func object(_ path: String) -> [String: Any]? {
        (try? Files.read(path)).flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }

    /// The same JSON value, whatever the key order and spacing.
    func canonical(_ object: [String: Any]?) -> String? {
        object.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }.map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// After the last revocation: the agent's files are gone, Firefox's is what the machine (or
    /// the guardian) had.
    func expectPoliciesGone(_ world: AgentWorld, firefoxHad expected: [String: Any]?, machine: SystemPolicies) {
        waitForPolicies(world, present: false)
        #expect(!Files.exists(Self.chromiumPolicy(world)), "Chromium's policy outlived the last child")
        if let expected {
            #expect(
                canonical(object(Self.firefoxPolicy(world))) == canonical(expected), "Firefox's policies not restored")
        } else {
            #expect(!Files.exists(Self.firefoxPolicy(world)), "Firefox's policy outlived the last child")
        }
        #expect(machine.unchanged, "the machine's own policy files (an installed agent's) were changed")
    }

    @Test func chromiumWithACustomDoHProviderDoesNotLoadAShieldedSite() throws {
        let machine = try SystemPolicies()
        defer { machine.restore() }
        let world = try browserWorld()
        defer { world.tearDown() }
        let childHome = try home(world, world.child, "chromium")
        let bystanderHome = try home(world, world.bystander, "chromium")

        // Before the child is authorized: its profile's provider is used (a name only the
        // provider knows loads) and the shielded site loads through it.
        let viaProvider = try chromium(world, as: world.child, home: childHome, "https://\(Self.providerOnly)/")
        #expect(viaProvider.dom.contains("https \(Self.providerOnly)"), "the provider is not used: \(viaProvider)")
        let unshielded = try chromium(world, as: world.child, home: childHome, "https://video.blocked.test/")
        #expect(unshielded.dom.contains("https video.blocked.test"), "\(unshielded)")
        #expect(providerQueries(world).contains("video.blocked.test 1"), "\(providerQueries(world))")

        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        waitForPolicies(world, present: true)
        let policy = object(Self.chromiumPolicy(world)) ?? [:]
        #expect(policy["DnsOverHttpsMode"] as? String == "off" && policy["QuicAllowed"] as? Bool == false, "\(policy)")
        #expect(Files.exists(Self.firefoxPolicy(world)))

        // The child, same profile: the shielded site does not load (its name does not resolve),
        // an allowed one does, and the provider is no longer asked anything.
        let asked = providerQueries(world).count
        let refused = try chromium(world, as: world.child, home: childHome, "https://video.blocked.test/")
        #expect(!refused.dom.contains("https video.blocked.test"), "the shielded site loaded: \(refused)")
        #expect(refused.error?.contains("ERR_NAME_NOT_RESOLVED") == true, "\(refused)")
        let allowed = try chromium(world, as: world.child, home: childHome, "https://www.allowed.test/")
        #expect(allowed.dom.contains("https www.allowed.test"), "the allowed site did not load: \(allowed)")
        let providerOnly = try chromium(world, as: world.child, home: childHome, "https://\(Self.providerOnly)/")
        #expect(!providerOnly.dom.contains("https \(Self.providerOnly)"), "the provider was used: \(providerOnly)")
        #expect(providerQueries(world).count == asked, "\(providerQueries(world).dropFirst(asked))")
        try screenshot(world, as: world.child, home: childHome, "https://video.blocked.test/", name: "chromium-refused")
        try screenshot(world, as: world.child, home: childHome, "https://www.allowed.test/", name: "chromium-allowed")
        // A child who maps the name to an allowed address on the command line reaches the
        // server, and Chromium's hello naming the shielded site is reset.
        let mapped = try chromium(
            world, as: world.child, home: childHome, "https://video.blocked.test/",
            flags: ["--host-resolver-rules=MAP video.blocked.test 10.1.1.1"])
        #expect(!mapped.dom.contains("https video.blocked.test"), "the shielded site loaded: \(mapped)")
        #expect(mapped.error?.contains("ERR_CONNECTION_RESET") == true, "\(mapped)")

        // The bystander, under the same system policies, loads the shielded site.
        let bystander = try chromium(world, as: world.bystander, home: bystanderHome, "https://video.blocked.test/")
        #expect(bystander.dom.contains("https video.blocked.test"), "\(bystander)")

        try guardian(world, "revoke", "--user", world.child)
        expectPoliciesGone(world, firefoxHad: nil, machine: machine)
    }

    /// The re-sent opening in a real browser (restrictions, second round): Chromium through a
    /// SOCKS proxy of her own (`Fixtures/socks-resend.py`) that sends the browser's hello first
    /// as a decoy naming an allowed host with TTL 1, then lets TCP send it again from the page
    /// she rewrote, to a server one router away (no lookup: the proxy keeps its own address
    /// book). The bystander's Chromium through the same proxy of his is served the shielded
    /// site: the trick works on this path. Hers gets no page, and an allowed site loads through
    /// her proxy as ever.
    @Test func chromiumThroughHerResendingProxyDoesNotLoadAShieldedSite() throws {
        let machine = try SystemPolicies()
        defer { machine.restore() }
        let world = try browserWorld()
        defer { world.tearDown() }
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        let namespace = try #require(world.namespace)
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        waitForPolicies(world, present: true)
        func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        /// Her proxy (or his), listening on 127.0.0.1:`port` in the world's network; its log.
        func proxy(_ user: String, port: Int, home: String) throws -> String {
            let ready = home + "/proxy.ready"
            let log = world.directory + "/proxy-\(user).log"
            _ = try world.launch(
                as: nil, "/usr/sbin/ip",
                [
                    "netns", "exec", namespace, "/usr/bin/setpriv", "--reuid=\(user)", "--regid=users",
                    "--init-groups", "--", "/usr/bin/python3", AgentWorld.fixture("socks-resend.py"), "\(port)",
                    RoutedServers.address4, "video.blocked.test", "video.allowed.test", ready,
                ], output: log)
            for _ in 0..<500 where !Files.exists(ready) { Thread.sleep(forTimeInterval: 0.02) }
            #expect(Files.exists(ready), "\(user)'s proxy did not start: \(text(log))")
            return log
        }
        let childHome = try home(world, world.child, "chromium")
        let bystanderHome = try home(world, world.bystander, "chromium")
        let theirLog = try proxy(world.bystander, port: 1081, home: bystanderHome)
        let herLog = try proxy(world.child, port: 1080, home: childHome)

        let theirs = try chromium(
            world, as: world.bystander, home: bystanderHome, "https://video.blocked.test/",
            flags: ["--proxy-server=socks5://127.0.0.1:1081"])
        #expect(
            theirs.dom.contains("https video.blocked.test"),
            "the trick through Chromium, for the bystander: \(theirs) \(text(theirLog))")
        let hers = try chromium(
            world, as: world.child, home: childHome, "https://video.blocked.test/",
            flags: ["--proxy-server=socks5://127.0.0.1:1080"])
        #expect(!hers.dom.contains("https video.blocked.test"), "the shielded site loaded: \(hers) \(text(herLog))")
        #expect(hers.error != nil, "\(hers)")
        #expect(text(herLog).contains("passed"), "her proxy never sent an opening: \(text(herLog))")
        let allowed = try chromium(
            world, as: world.child, home: childHome, "https://video.allowed.test/",
            flags: ["--proxy-server=socks5://127.0.0.1:1080"])
        #expect(allowed.dom.contains("https video.allowed.test"), "the allowed site did not load: \(allowed)")
        let counted = try world.status(of: world.child).domainShield?.refusedConnections ?? [:]
        #expect((counted["resent"] ?? 0) >= 1, "\(counted)")
        try guardian(world, "revoke", "--user", world.child)
        expectPoliciesGone(world, firefoxHad: nil, machine: machine)
    }

    @Test func firefoxWithACustomDoHProviderDoesNotLoadAShieldedSite() throws {
        let machine = try SystemPolicies()
        defer { machine.restore() }
        // A guardian's own Firefox policies, one of them a key the agent sets: merged while the
        // child is authorized, given back after.
        let guardians: [String: Any] = [
            "policies": ["DisableTelemetry": true, "DNSOverHTTPS": ["Enabled": true, "Locked": false]]
        ]
        let world = try browserWorld()
        defer { world.tearDown() }
        try Files.makeDirectory(world.directory + "/root/etc/firefox/policies", mode: 0o755)
        try Files.writeAtomically(
            Array(try JSONSerialization.data(withJSONObject: guardians, options: [.prettyPrinted])),
            to: Self.firefoxPolicy(world),
            mode: 0o644)
        let childHome = try home(world, world.child, "firefox")
        let bystanderHome = try home(world, world.bystander, "firefox")

        // Before: the provider is used, and the shielded site loads through it.
        let before = try firefox(
            world, as: world.child, home: childHome, "https://\(Self.providerOnly)/", "https://video.blocked.test/")
        #expect(before[0].text.contains("https \(Self.providerOnly)"), "the provider is not used: \(before[0])")
        #expect(before[1].text.contains("https video.blocked.test"), "\(before[1])")
        #expect(providerQueries(world).contains("video.blocked.test 1"), "\(providerQueries(world))")

        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        waitForPolicies(world, present: true)
        let merged = object(Self.firefoxPolicy(world))?["policies"] as? [String: Any] ?? [:]
        #expect(merged["DisableTelemetry"] as? Bool == true, "the guardian's policy was lost: \(merged)")
        let doh = merged["DNSOverHTTPS"] as? [String: Any] ?? [:]
        #expect(doh["Enabled"] as? Bool == false && doh["Locked"] as? Bool == true, "\(merged)")
        #expect(Files.exists(Self.chromiumPolicy(world)))

        // The child, same profile: the shielded site does not load (an error page), an allowed
        // one does, and the provider is no longer asked anything.
        let asked = providerQueries(world).count
        let after = try firefox(
            world, as: world.child, home: childHome, "https://video.blocked.test/", "https://www.allowed.test/",
            "https://\(Self.providerOnly)/")
        #expect(!after[0].text.contains("https video.blocked.test"), "the shielded site loaded: \(after[0])")
        #expect(after[0].document.hasPrefix("about:neterror"), "\(after[0])")
        #expect(after[1].text.contains("https www.allowed.test"), "the allowed site did not load: \(after[1])")
        #expect(!after[2].text.contains("https \(Self.providerOnly)"), "the provider was used: \(after[2])")
        #expect(providerQueries(world).count == asked, "\(providerQueries(world).dropFirst(asked))")

        // The bystander, under the same system policies, loads the shielded site.
        let bystander = try firefox(world, as: world.bystander, home: bystanderHome, "https://video.blocked.test/")
        #expect(bystander[0].text.contains("https video.blocked.test"), "\(bystander[0])")

        try guardian(world, "revoke", "--user", world.child)
        expectPoliciesGone(world, firefoxHad: guardians, machine: machine)
    }
}
