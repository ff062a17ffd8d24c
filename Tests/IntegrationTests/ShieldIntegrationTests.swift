import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import Testing

/// The shield the child sees, end to end: a real X server (Xvfb) with openbox run by the test
/// child, the agent finding the session, the child starting a shielded app, and the real
/// `screentime-shield` window (GTK 4) the agent starts in the child's session through its
/// launcher — found by its title with xdotool, looked at in a screenshot, its buttons pressed with
/// the keyboard.
@Suite(.enabled(if: isRoot, "needs root: users, the launcher, the proc connector, other users' X servers"))
struct ShieldIntegrationTests {
    private func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// A world whose child is authorized and runs an X11 desktop the agent reads.
    private func session() throws -> (AgentWorld, XDesktop) {
        let world = try AgentWorld()
        do {
            let authorized = try world.cli(as: world.guardian, "authorize", "--child", world.child)
            guard authorized.status == 0 else { throw WorldError("authorize: \(authorized.stderr)") }
            let desktop = try XDesktop(world: world, user: world.child)
            guard eventually(15, { (try? world.status(of: world.child).sessions?.isEmpty) == false }) else {
                throw WorldError("the agent found no session")
            }
            return (world, desktop)
        } catch {
            world.tearDown()
            throw error
        }
    }

    private func shield(_ world: AgentWorld, _ arguments: String...) throws {
        let result = try world.cli(as: world.guardian, arguments: ["shield", "--user", world.child] + arguments)
        guard result.status == 0 else { throw WorldError("shield: \(result.stderr)") }
    }

    /// The shield window's X window (by its title), if one is mapped.
    private func window(_ desktop: XDesktop, titled title: String) -> String? {
        guard let found = try? desktop.runXdotool(["search", "--onlyvisible", "--name", "^\(title)$"]),
            found.status == 0
        else { return nil }
        return found.stdout.split(separator: "\n").first.map(String.init)
    }

    /// A screenshot of the display as PNG; and how many distinct colours the window's part has.
    private func screenshot(_ desktop: XDesktop, to path: String) throws -> Int {
        let shot = try run(
            "/bin/sh", ["-c", "xwd -root -silent | xwdtopnm 2>/dev/null | tee \(path).ppm | pnmtopng > \(path)"],
            environment: ["DISPLAY": ":\(desktop.display)", "PATH": "/usr/bin:/bin"])
        guard shot.status == 0 else { throw WorldError("screenshot: \(shot.stderr)") }
        let ppm = try Data(contentsOf: URL(fileURLWithPath: path + ".ppm"))
        // P6 header: "P6\nW H\n255\n", then RGB.
        var offset = 0
        var fields: [String] = []
        while fields.count < 4, offset < ppm.count {
            var field = ""
            while offset < ppm.count, ppm[offset] == 10 || ppm[offset] == 32 { offset += 1 }
            while offset < ppm.count, ppm[offset] != 10, ppm[offset] != 32 {
                field.append(Character(UnicodeScalar(ppm[offset])))
                offset += 1
            }
            fields.append(field)
        }
        offset += 1
        var colours = Set<UInt32>()
        var index = offset
        while index + 2 < ppm.count, colours.count < 10_000 {
            colours.insert(UInt32(ppm[index]) << 16 | UInt32(ppm[index + 1]) << 8 | UInt32(ppm[index + 2]))
            index += 3 * 7
        }
        return colours.count
    }

    @Test func startingAShieldedAppShowsTheShieldWindowWhichClosesOnOKAndComesBack() throws {
        var (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        try shield(world, "--app", "org.example.Counter")
        let output = try world.childDirectory() + "/count"
        let started = Date()
        let counter = try world.launch(as: world.child, world.counter, [output])
        var shown: String?
        #expect(
            eventually(5) {
                shown = window(desktop, titled: "Counter Game is shielded"); return shown != nil
            })
        if shown == nil {
            let log = (try? String(contentsOfFile: world.directory + "/agent.log", encoding: .utf8)) ?? ""
            Issue.record(
                "agent log: \(log.split(separator: "\n").filter { $0.contains("shield") || $0.contains("error") }.suffix(15).joined(separator: "\n"))"
            )
        }
        let after = Date().timeIntervalSince(started)
        #expect(after < 1.5, "the shield took \(after) s")
        #expect(world.isFrozen(counter))
        // What the child sees: the window, not a blank.
        let shot = world.directory + "/shield.png"
        Thread.sleep(forTimeInterval: 0.3)
        let colours = try screenshot(desktop, to: shot)
        #expect(colours > 20, "only \(colours) colours: a blank window?")
        if let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] {
            _ = try? run("/bin/cp", [shot, keep + "/shield-default.png"])
        }
        // It runs as the child.
        let owner = try run("/usr/bin/pgrep", ["-u", world.child, "-f", "screentime-shield"])
        #expect(owner.status == 0, "the shield window is not the child's")
        // OK (Enter on the focused primary button) closes it; the app stays frozen.
        let id = try #require(shown)
        _ = try desktop.runXdotool(["windowactivate", "--sync", id])
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Return"])
        #expect(eventually(5) { window(desktop, titled: "Counter Game is shielded") == nil })
        #expect(world.isFrozen(counter))
        // Started again: shown again. Killed: the app stays frozen, and the next start shows it.
        let again = try world.launch(as: world.child, world.counter, [output + "-2"])
        #expect(eventually(5) { window(desktop, titled: "Counter Game is shielded") != nil })
        _ = try run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-f", "screentime-shield"])
        #expect(eventually(5) { window(desktop, titled: "Counter Game is shielded") == nil })
        #expect(world.isFrozen(counter) && world.isFrozen(again))
        _ = try world.launch(as: world.child, world.counter, [output + "-3"])
        #expect(eventually(5) { window(desktop, titled: "Counter Game is shielded") != nil })
    }
}
