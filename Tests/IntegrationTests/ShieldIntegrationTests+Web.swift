import Foundation
import LinuxSupport
import ScreenTimeIPC
import Testing

extension ShieldIntegrationTests {
    /// A site the web filter refuses: the notice in her session says it is the filter, and its
    /// button asks a guardian to allow the site (an ask for that domain, as `ask --domain` makes).
    @Test func aFilteredSitesNoticeSaysWhyAndAsksToAllowIt() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        let filtered = try world.cli(
            as: world.guardian, "filter", "auto", "--block", "filtered.test", "--user", world.child)
        #expect(filtered.status == 0, "\(filtered.stderr)")
        _ = try run(
            "/usr/bin/setpriv",
            [
                "--reuid=\(world.child)", "--regid=users", "--init-groups", "--", "/usr/bin/dig", "+tries=1",
                "+time=1", "@127.0.0.1", "www.filtered.test", "A",
            ])
        var shown: String?
        #expect(
            eventually(30) {
                shown = window(desktop, titled: "filtered.test is shielded"); return shown != nil
            })
        let notice = try #require(shown)
        Thread.sleep(forTimeInterval: 0.5)
        let shot = world.directory + "/web-notice.png"
        #expect(try screenshot(desktop, to: shot) > 20)
        if let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] {
            _ = try? run("/bin/cp", [shot, keep + "/web-notice.png"])
        }
        // Tab to the secondary button ("Ask to allow"), Enter: the ask is the site's.
        try giveKeyboard(desktop, to: notice)
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Tab", "Return"])
        var asks: [TimeRequestReport] = []
        #expect(
            eventually(10) {
                guard let result = try? world.cli(as: world.guardian, "requests", "--json"), result.status == 0 else {
                    return false
                }
                let decoder = JSONDecoder()
                decoder.dateDecodingStrategy = .iso8601
                asks = (try? decoder.decode([TimeRequestReport].self, from: Data(result.stdout.utf8))) ?? []
                return !asks.isEmpty
            })
        #expect(asks.map(\.webDomain) == ["filtered.test"] && asks.first?.state == .pending, "\(asks)")
    }

    /// A program of hers that traced a notice from its start (before the window's own prctl,
    /// while the dynamic loader ran) made it run her game, and the usage tracker counted the game
    /// as what was in front before the notice: 120 s of play, 0 s counted against a one-minute
    /// limit (the attack on the notices' mend, 2026-11-30, attached at the first try). The
    /// windows run with a primary group not hers: the kernel refuses her the trace from the
    /// window's first moment.
    @Test func noWindowIsHersToTraceNotEvenAsItStarts() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        try shield(world, "--domain", "traced.test")
        let tracer = try world.compile("windowtrace")
        let output = world.directory + "/windowtrace.out"
        _ = try world.launch(as: world.child, tracer, ["40"], output: output)
        Thread.sleep(forTimeInterval: 0.3)
        _ = try run(
            "/usr/bin/setpriv",
            [
                "--reuid=\(world.child)", "--regid=users", "--init-groups", "--", "/usr/bin/dig", "+tries=1",
                "+time=1", "@127.0.0.1", "www.traced.test", "A",
            ])
        var said = ""
        #expect(
            eventually(45) {
                said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                return !said.isEmpty
            })
        #expect(said.hasPrefix("refused"), "her tracer: \(said)")
        #expect(window(desktop, titled: "traced.test is shielded") != nil || !said.hasPrefix("none"))
    }
}
