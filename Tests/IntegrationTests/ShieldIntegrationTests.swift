import Foundation
import Glibc
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// The shield the child sees, end to end: a real X server (Xvfb) with openbox run by the test
/// child, the agent finding the session, the child starting a shielded app, and the real
/// `screentime-shield` window (GTK 4) the agent starts in the child's session through its
/// launcher — found by its title with xdotool, looked at in a screenshot, its buttons pressed with
/// the keyboard.
@Suite(
    .threadsOfTheirOwn,
    .enabled(if: isRoot, "needs root: users, the launcher, the proc connector, other users' X servers"))
struct ShieldIntegrationTests {
    func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// A world whose child is authorized and runs an X11 desktop the agent reads.
    func session(logLevel: String? = nil) throws -> (AgentWorld, XDesktop) {
        let world = try AgentWorld(logLevel: logLevel)
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

    func shield(_ world: AgentWorld, _ arguments: String...) throws {
        let result = try world.cli(as: world.guardian, arguments: ["shield", "--user", world.child] + arguments)
        guard result.status == 0 else { throw WorldError("shield: \(result.stderr)") }
    }

    /// The shield window's X window (by its title), if one is mapped.
    func window(_ desktop: XDesktop, titled title: String) -> String? {
        desktop.shown(["--name", "^\(title)$"])
    }

    /// Makes a dialog the active window and waits until the server sends it the keyboard (a
    /// window made active is not yet given the keys: typed at once, they went elsewhere, and a
    /// picker never ended), and a moment for the toolkit to take the focus in.
    func giveKeyboard(_ desktop: XDesktop, to window: String) throws {
        _ = try desktop.runXdotool(["windowactivate", "--sync", window])
        #expect(
            eventually(5) {
                (try? desktop.runXdotool(["getwindowfocus"]))?.stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines) == window
            }, "the dialog never got the keyboard")
        Thread.sleep(forTimeInterval: 0.3)
    }

    /// What a dialog that did not end was doing: whether its window is still shown, and the
    /// states of the process and its children.
    private func stuck(_ pid: Int32, _ desktop: XDesktop, titled title: String) -> String {
        var lines = ["window still shown: \(window(desktop, titled: title) != nil)"]
        let children = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in children {
            guard let child = Int32(entry),
                let status = try? String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8)
            else { continue }
            let fields = status.split(separator: "\n")
            guard child == pid || fields.contains("PPid:\t\(pid)") else { continue }
            let wanted = fields.filter { $0.hasPrefix("Name") || $0.hasPrefix("State") }
            let channel = (try? String(contentsOfFile: "/proc/\(child)/wchan", encoding: .utf8)) ?? "?"
            lines.append("pid \(child): \(wanted.joined(separator: ", ")), waiting in \(channel)")
        }
        return lines.joined(separator: "; ")
    }

    /// A screenshot of the display as PNG; and how many distinct colours the window's part has.
    func screenshot(_ desktop: XDesktop, to path: String) throws -> Int {
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
        let (world, desktop) = try session(logLevel: "debug")
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
            eventually(20) {
                shown = window(desktop, titled: "Counter Game is shielded"); return shown != nil
            })
        if shown == nil { Issue.record("agent log: \(world.agentLog())") }
        // How soon is the benchmark's (Benchmarks/shield.sh), not a timed assertion here: on a
        // loaded machine a first window once took 1.79 s.
        print("the first shield window was seen after \(Date().timeIntervalSince(started)) s")
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
        // …and is not hers to trace or read (it runs through a lock): its /proc files are root's.
        for window in owner.stdout.split(separator: "\n").compactMap({ Int32($0) }) {
            let read = try world.command(as: world.child, "/bin/cat", ["/proc/\(window)/environ"])
            #expect(read.status != 0 && read.stderr.contains("Permission denied"), "she read her window's memory")
            let traced = try world.command(
                as: world.child, "/usr/bin/gdb", ["-p", "\(window)", "-batch", "-ex", "detach"])
            #expect(
                (traced.stdout + traced.stderr).contains("ptrace: Operation not permitted"),
                "she traced her window: \(traced.stdout) \(traced.stderr)")
        }
        // Her time on it is named for what it is in the guardian's report (not an unknown
        // program's file and hash).
        var named: [String] = []
        #expect(
            eventually(20) {
                guard
                    let result = try? world.cli(
                        as: world.guardian, "report", "--user", world.child, "--today", "--json"),
                    result.status == 0,
                    let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                    let applications = object["applications"] as? [[String: Any]]
                else { return false }
                named = applications.compactMap { $0["name"] as? String }
                return named.contains("Screen Time (shield window)")
            }, "the report names \(named)")
        // OK (Enter on the focused primary button) closes it; the app stays frozen. Its program
        // is held at its end (traced), as a loaded machine may hold it for a while after the
        // window is gone.
        let id = try #require(shown)
        let windows = try run("/usr/bin/pgrep", ["-u", world.child, "-f", "screentime-shield"]).stdout
            .split(separator: "\n").compactMap { Int32($0) }
        #expect(windows.count == 1, "the shield window's programs: \(windows)")
        // As the child: an OK press forged into each of her window's descriptors (its answers go
        // to the agent, and an OK there would let the agent open another window) changes nothing:
        // her starts of the app meanwhile show no second window, and they stay frozen.
        let forged = try world.command(
            as: world.child, "/bin/sh",
            [
                "-c",
                "for f in /proc/\(try #require(windows.first))/fd/*; do "
                    + "printf '{\"pressed\":\"primary\"}\\n' 2>/dev/null > $f && echo \"wrote $f\"; done; true",
            ])
        let starts = try (0..<3).map { index in
            try world.launch(as: world.child, world.counter, [output + "-forged\(index)"])
        }
        Thread.sleep(forTimeInterval: 2)
        let windowsThen = try run("/usr/bin/pgrep", ["-u", world.child, "-f", "screentime-shield"]).stdout
            .split(separator: "\n")
        #expect(windowsThen.count == 1, "windows after her forged presses (\(forged.stdout)): \(windowsThen)")
        #expect(starts.allSatisfy(world.isFrozen))
        let held = world.directory + "/shield-held"
        let holder = try world.launch(
            as: nil, try world.compile("holdexit"), ["\(try #require(windows.first))", held])
        try giveKeyboard(desktop, to: id)
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Return"])
        #expect(eventually(20) { window(desktop, titled: "Counter Game is shielded") == nil })
        #expect(eventually(20) { Files.exists(held) }, "the closed window's program was not held at its end")
        #expect(world.isFrozen(counter))
        // Started again (the closed one's program not ended yet): shown again. Killed: the app
        // stays frozen, and the next start shows it.
        let again = try world.launch(as: world.child, world.counter, [output + "-2"])
        #expect(
            eventually(20) { window(desktop, titled: "Counter Game is shielded") != nil },
            "not shown again while the closed window's program ends: \(world.agentLog())")
        kill(holder, SIGTERM)
        _ = world.wait(holder, seconds: 5)
        _ = try run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-f", "screentime-shield"])
        #expect(eventually(20) { window(desktop, titled: "Counter Game is shielded") == nil })
        #expect(world.isFrozen(counter) && world.isFrozen(again))
        let third = try world.launch(as: world.child, world.counter, [output + "-3"])
        // (Run 126 saw none within 20 s, once, on a loaded machine: what the agent did is said.)
        #expect(
            eventually(20) { window(desktop, titled: "Counter Game is shielded") != nil },
            """
            not shown after the window was killed (the start \(third) frozen: \(world.isFrozen(third))); \
            her programs: \((try? run("/usr/bin/pgrep", ["-a", "-u", world.child]).stdout) ?? ""); \
            the agent: \(world.agentLog(naming: nil, last: 60))
            """)
        // The launcher's child, between taking the child's ids and running the window, is the
        // agent's: not judged (its exec is), nor held for its executable to be hashed, which held
        // the first window up. Whether the agent looks before that exec is a race: when it does,
        // the log says so at debug.
        let log = (try? String(contentsOfFile: world.directory + "/agent.log", encoding: .utf8)) ?? ""
        let uid = try #require(getpwnam(world.child)?.pointee.pw_uid)
        let judged = log.split(separator: "\n").filter {
            $0.contains("exe=\(AgentWorld.binaries)/screentimed ") && $0.contains(" uid=\(uid) ")
        }
        #expect(log.contains("debug"), "the agent's log is not at debug")
        #expect(judged.isEmpty, "\(judged)")
    }

    private func notes(_ installed: ActivityIntegrationTests.Installed, _ file: String) -> String {
        (try? String(contentsOfFile: installed.notes + "/" + file, encoding: .utf8)) ?? ""
    }

    @Test func aConfigurationExtensionGivesTheShieldItsLookAndABadOneTheDefault() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        let installed = try ActivityIntegrationTests.Installed(world)
        defer { installed.remove() }
        try shield(world, "--app", "org.example.Counter", "--client", "org.example.Homework")
        let good = try installed.script(
            "configuration",
            """
            cat > \(installed.notes)/input; id -u > \(installed.notes)/uid
            echo '{"title": {"text": "Homework first", "color": "#ffffff"}, "subtitle": {"text": "Ask me after dinner.", "color": "#dddddd"},'
            echo ' "backgroundColor": "#204a87", "primaryButtonLabel": {"text": "Fine"}, "primaryButtonBackgroundColor": "#4e9a06",'
            echo ' "secondaryButtonLabel": {"text": "Ask for more time"}, "icon": "applications-games"}'
            """)
        let set = try world.cli(
            as: world.guardian, "shield-config", "--user", world.child, "--client", "org.example.Homework",
            "--configuration", good)
        #expect(set.status == 0, "\(set.stderr)")
        let output = try world.childDirectory() + "/count"
        let started = Date()
        _ = try world.launch(as: world.child, world.counter, [output])
        // How soon is a figure for `make bench`, not a test's: here only that it comes.
        let configured = eventually(15) { window(desktop, titled: "Homework first") != nil }
        #expect(configured)
        if !configured {
            let status = try? world.cli(as: world.guardian, "status", "--user", world.child)
            Issue.record("status: \(status?.stdout ?? "")\nagent log: \(world.agentLog())")
        }
        print("the configured shield was seen after \(Date().timeIntervalSince(started)) s")
        let input = notes(installed, "input")
        #expect(
            input.contains("\"application\"") && input.contains("Counter Game") && input.contains("Game"), "\(input)")
        #expect(
            notes(installed, "uid").trimmingCharacters(in: .whitespacesAndNewlines)
                == "\(getpwnam("nobody")!.pointee.pw_uid)")
        Thread.sleep(forTimeInterval: 0.3)
        let shot = world.directory + "/configured.png"
        #expect(try screenshot(desktop, to: shot) > 20)
        if let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] {
            _ = try? run("/bin/cp", [shot, keep + "/shield-configured.png"])
        }
        _ = try run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-f", "screentime-shield"])
        #expect(eventually(5) { window(desktop, titled: "Homework first") == nil })

        // Hanging, crashing, garbage: the default shield, each shown in status.
        for (name, body, problem) in [
            ("hangs", "exec sleep 30", "took longer than 2 s"),
            ("crashes", "echo nope >&2; exit 3", "exited with status 3"),
            ("garbage", "echo 'this is not JSON'", "not a ShieldConfiguration"),
        ] {
            let path = try installed.script(name, body)
            let changed = try world.cli(
                as: world.guardian, "shield-config", "--user", world.child, "--client", "org.example.Homework",
                "--configuration", path)
            #expect(changed.status == 0, "\(changed.stderr)")
            let again = Date()
            _ = try world.launch(as: world.child, world.counter, [output + "-" + name])
            // The hanging one sleeps 30 s: the default shield comes while it still hangs.
            #expect(eventually(20) { window(desktop, titled: "Counter Game is shielded") != nil }, "\(name)")
            print("\(name): the default shield was seen after \(Date().timeIntervalSince(again)) s")
            let status = try world.cli(as: world.guardian, "status", "--user", world.child)
            #expect(status.stdout.contains(problem), "\(name): \(status.stdout)")
            _ = try run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-f", "screentime-shield"])
            #expect(eventually(5) { window(desktop, titled: "Counter Game is shielded") == nil })
        }
    }

    @Test func anActionExtensionClosesTheAppOrDefers() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        let installed = try ActivityIntegrationTests.Installed(world)
        defer { installed.remove() }
        try shield(world, "--app", "org.example.Counter")
        let deferring = try installed.script("defers", "cat > \(installed.notes)/action; echo '\"defer\"'")
        #expect(
            try world.cli(
                as: world.guardian, "shield-config", "--user", world.child, "--action", deferring
            ).status == 0)
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        var shown: String?
        #expect(
            eventually(5) {
                shown = window(desktop, titled: "Counter Game is shielded"); return shown != nil
            })
        try giveKeyboard(desktop, to: try #require(shown))
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Return"])
        #expect(eventually(5) { notes(installed, "action").contains("primaryButtonPressed") })
        Thread.sleep(forTimeInterval: 1)
        #expect(window(desktop, titled: "Counter Game is shielded") != nil, "deferred: the shield stays")
        #expect(world.isFrozen(counter))
        // close: the app's processes end.
        let closing = try installed.script("closes", "cat > /dev/null; echo close")
        #expect(
            try world.cli(as: world.guardian, "shield-config", "--user", world.child, "--action", closing).status == 0)
        try giveKeyboard(desktop, to: try #require(shown))
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Return"])
        #expect(world.wait(counter, seconds: 10) != nil, "the app was not closed")
        #expect(eventually(5) { window(desktop, titled: "Counter Game is shielded") == nil })
    }

    @Test func askingForMoreTimeAGuardianGrantsAMinuteThenTheShieldIsBack() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        try shield(world, "--app", "org.example.Counter")
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        var shown: String?
        #expect(
            eventually(5) {
                shown = window(desktop, titled: "Counter Game is shielded"); return shown != nil
            })
        // The child asks from the shield: Tab to the secondary button, Enter.
        try giveKeyboard(desktop, to: try #require(shown))
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Tab", "Return"])
        func requests(_ user: String?) throws -> [TimeRequestReport] {
            let result = try world.cli(as: user, "requests", "--json")
            guard result.status == 0 else { throw WorldError("requests: \(result.stderr)") }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode([TimeRequestReport].self, from: Data(result.stdout.utf8))
        }
        #expect(try eventually(5) { try requests(world.guardian).contains { $0.state == .pending } })
        let asked = try #require(try requests(world.guardian).first)
        #expect(asked.user == world.child && asked.application == "Counter Game" && asked.minutes == 15)
        #expect(try requests(world.child).map(\.id) == [asked.id], "the child sees its own")
        #expect(try requests(world.bystander).isEmpty)
        // A child may not grant, nor ask for someone else.
        #expect(try world.cli(as: world.child, "grant", "\(asked.id)").status == 77)
        // Granted a minute: the app runs at once.
        let granted = try world.cli(as: world.guardian, "grant", "\(asked.id)", "--minutes", "1")
        #expect(granted.status == 0, "\(granted.stderr)")
        let grantedAt = Date()
        #expect(eventually(5) { !world.isFrozen(counter) })
        let before = world.count(output) ?? 0
        #expect(eventually(5) { (world.count(output) ?? 0) > before })
        #expect(try requests(world.guardian).first?.state == .granted)
        // A restart keeps the grant's end.
        world.kill9()
        try world.start()
        Thread.sleep(forTimeInterval: 2)
        #expect(!world.isFrozen(counter), "the grant was lost in the restart")
        // After the minute, the shield is back.
        Thread.sleep(until: grantedAt.addingTimeInterval(55))
        #expect(!world.isFrozen(counter), "frozen before the minute was over")
        #expect(eventually(15) { world.isFrozen(counter) })
        #expect(Date().timeIntervalSince(grantedAt) < 66)
        #expect(try requests(world.guardian).first?.state == .expired)
        // Denied: nothing changes; asking again at once is refused (the child's asks are limited).
        let again = try world.cli(
            as: world.child, "ask", "--app", "org.example.Counter", "--minutes", "5", "--note", "please")
        #expect(again.status == 0, "\(again.stderr)")
        let second = try #require(try requests(world.guardian).first { $0.state == .pending })
        #expect(second.note == "please" && second.minutes == 5)
        #expect(try world.cli(as: world.guardian, "deny", "\(second.id)").status == 0)
        #expect(try requests(world.guardian).first { $0.id == second.id }?.state == .denied)
        #expect(world.isFrozen(counter))
        let flood = try world.cli(as: world.child, "ask", "--app", "org.example.Counter")
        #expect(flood.status == 75, "\(flood.stderr)")
    }

    @Test func aShieldedSiteLookedUpShowsANoticeAtMostOnceAMinute() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        try shield(world, "--domain", "blocked.test")
        func lookUp() throws {
            _ = try run(
                "/usr/bin/setpriv",
                [
                    "--reuid=\(world.child)", "--regid=users", "--init-groups", "--", "/usr/bin/dig", "+tries=1",
                    "+time=1", "@127.0.0.1", "www.blocked.test", "A",
                ])
        }
        let first = Date()
        try lookUp()
        // (The shield window is a GTK program: with the other desktop tests beside it, it has
        // taken more than 5 s to start.)
        #expect(eventually(30) { window(desktop, titled: "blocked.test is shielded") != nil })
        // It closes by itself (after 8 s); looked up again at once, it does not come back within
        // the minute.
        #expect(eventually(30) { window(desktop, titled: "blocked.test is shielded") == nil })
        try lookUp()
        let left = 58 - Date().timeIntervalSince(first)
        #expect(left > 5, "the first notice took the minute")
        Thread.sleep(forTimeInterval: max(0, min(10, left)))
        #expect(window(desktop, titled: "blocked.test is shielded") == nil)
    }

    @Test func aGuardianLoggedInGetsTheAskInTheirOwnSessionAndOneInPersonDecidesWithTheirPassword() throws {
        let (world, desktop) = try session()
        let guardianDesktop = try XDesktop(world: world, user: world.guardian)
        defer {
            guardianDesktop.stop()
            desktop.stop()
            world.tearDown()
        }
        try shield(world, "--app", "org.example.Counter")
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        #expect(eventually(5) { world.isFrozen(counter) })
        let asked = try world.cli(as: world.child, "ask", "--app", "org.example.Counter", "--note", "homework done")
        #expect(asked.status == 0, "\(asked.stderr)")
        // In the guardian's own session: a window that asks, Grant as its first button.
        let title = "\(world.child) asks for 15 more minutes"
        var shown: String?
        #expect(
            eventually(8) {
                shown = window(guardianDesktop, titled: title); return shown != nil
            })
        let owner = try run("/usr/bin/pgrep", ["-u", world.guardian, "-f", "screentime-shield"])
        #expect(owner.status == 0, "the guardian's window is not the guardian's")
        try giveKeyboard(guardianDesktop, to: try #require(shown))
        _ = try guardianDesktop.runXdotool(["key", "--clearmodifiers", "Return"])
        #expect(eventually(5) { !world.isFrozen(counter) }, "granted from the guardian's window")
        let listed = try world.cli(as: world.guardian, "requests")
        #expect(
            listed.stdout.contains("granted") && listed.stdout.contains("(by \(world.guardian))"), "\(listed.stdout)")

        // In person, in the child's session: a guardian's password decides; a wrong one does not.
        Thread.sleep(forTimeInterval: 10.5)  // the child's asks are spaced
        let again = try world.cli(as: world.child, "ask", "--app", "org.example.Counter", "--minutes", "30")
        #expect(again.status == 0, "\(again.stderr)")
        let id = try #require(
            again.stdout.split(separator: "(").last?.split(separator: " ").dropFirst().first.flatMap {
                Int($0.trimmingCharacters(in: CharacterSet(charactersIn: ");")))
            })
        let wrong = try world.cli(
            as: world.child, "deny", "\(id)", "--guardian", world.guardian, input: "not the password\n")
        #expect(wrong.status == 77, "\(wrong.stderr)")
        Thread.sleep(forTimeInterval: 1.5)  // a wrong password costs a wait, as for authorize
        let right = try world.cli(
            as: world.child, "deny", "\(id)", "--guardian", world.guardian, input: world.guardianPassword + "\n")
        #expect(right.status == 0, "\(right.stderr)")
        let decided = try world.cli(as: world.guardian, "requests")
        #expect(decided.stdout.contains("denied (by \(world.guardian) (in person))"), "\(decided.stdout)")
        // Another child's ask cannot be decided in this session.
        let bystanders = try world.cli(
            as: world.bystander, "deny", "\(id)", "--guardian", world.guardian, input: world.guardianPassword + "\n")
        #expect(bystanders.status == 77)
    }

    /// Attack findings: a guardian's window opened on whatever display a guardian's program named
    /// (a guardian's `su` in the child's terminal names the child's), where the child pressed
    /// Grant; an ask asked again opened another window each time; a window still open after a
    /// decision could overturn it.
    @Test func aGuardiansWindowOpensOnlyOnTheirOwnDisplayOncePerAskAndGoesWhenDecided() throws {
        let (world, desktop) = try session()
        let guardianDesktop = try XDesktop(world: world, user: world.guardian)
        // The guardian's program in the child's session (su in the child's terminal).
        let su = try world.launch(
            as: world.guardian, "/bin/sleep", ["600"], environment: ["DISPLAY=:\(desktop.display)"])
        defer {
            kill(su, SIGKILL)
            guardianDesktop.stop()
            desktop.stop()
            world.tearDown()
        }
        try shield(world, "--app", "org.example.Counter")
        let asked = try world.cli(as: world.child, "ask", "--app", "org.example.Counter")
        #expect(asked.status == 0, "\(asked.stderr)")
        let title = "\(world.child) asks for 15 more minutes"
        #expect(eventually(8) { window(guardianDesktop, titled: title) != nil })
        Thread.sleep(forTimeInterval: 1)
        #expect(window(desktop, titled: title) == nil, "the guardian's window opened on the child's display")
        // Asked again (and again) while it waits: still the one window.
        for _ in 0..<3 {
            #expect(try world.cli(as: world.child, "ask", "--app", "org.example.Counter").status == 0)
        }
        Thread.sleep(forTimeInterval: 2)
        let found = try guardianDesktop.runXdotool(["search", "--onlyvisible", "--name", "^\(title)$"])
        #expect(found.stdout.split(separator: "\n").count == 1, "windows: \(found.stdout)")
        // Denied from the command line: the window goes.
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let listed = try decoder.decode(
            [TimeRequestReport].self, from: Data(try world.cli(as: world.guardian, "requests", "--json").stdout.utf8))
        #expect(listed.count == 1)
        let id = try #require(listed.first?.id)
        #expect(try world.cli(as: world.guardian, "deny", "\(id)").status == 0)
        #expect(eventually(8) { window(guardianDesktop, titled: title) == nil }, "the window outlived the decision")
    }

    /// Attack findings: a child's own desktop entry with a 300,000-character name stopped every
    /// shield window (the agent blocked writing it); a window the child stopped (SIGSTOP) stayed
    /// forever, each costing the agent threads and descriptors.
    @Test func aHugeNameOrAStoppedWindowHoldsNoShieldBack() throws {
        let (world, desktop) = try session()
        defer {
            desktop.stop()
            world.tearDown()
        }
        let home = try world.makeHome(for: world.child)
        // The child's own program, known only by her entry: a byte-identical copy of the counter
        // is Counter Game by its content, and was shown as that when her entry was read late
        // (CI on stop 58), so no window had the name cut short.
        let game = home + "/huge-game"
        var program = try Data(contentsOf: URL(fileURLWithPath: world.counter))
        program.append(contentsOf: Array("her own build".utf8))
        try program.write(to: URL(fileURLWithPath: game))
        chmod(game, 0o755)
        try """
        [Desktop Entry]
        Type=Application
        Name=\(String(repeating: "Q", count: 300_000))
        Exec=\(game)
        Categories=Game;
        """.write(
            toFile: home + "/.local/share/applications/org.child.Huge.desktop", atomically: false, encoding: .utf8)
        try system("/usr/bin/chown", "-R", world.child, home)
        try shield(world, "--app-category", "Game")
        // Her entry is read on a thread of its own: on a loaded machine it can be read after the
        // game starts, which then runs until the rules are made again with it (a moment later).
        let huge = try world.launch(as: world.child, game, [home + "/count-huge"])
        #expect(eventually(60) { world.isFrozen(huge) }, "her game was never held")
        let cut = String(repeating: "Q", count: 120) + " is shielded"
        // Up to 60 s for each window: in a full run, with six root tests and the release build
        // beside it on two cores, 8 s was once not enough to start GTK (fresh runs 20 and 26), and
        // 30 s not enough for the second window here (fresh run 120).
        #expect(
            eventually(60) { window(desktop, titled: cut) != nil },
            "no shield with the name cut short; the agent said:\n\(world.agentLog(naming: nil, last: 100))")
        let stopped = try #require(
            try run("/usr/bin/pgrep", ["-u", world.child, "-f", "screentime-shield"]).stdout.split(separator: "\n")
                .first.flatMap { Int32($0) })
        kill(stopped, SIGSTOP)
        // Another shielded app: its shield shows, and the stopped window is ended.
        let counter = try world.launch(as: world.child, world.counter, [home + "/count"])
        #expect(eventually(5) { world.isFrozen(counter) })
        #expect(
            eventually(60) { window(desktop, titled: "Counter Game is shielded") != nil },
            "no shield for the next app; the agent said:\n\(world.agentLog(naming: nil, last: 100))")
        // Ended: gone, or a zombie its launcher has yet to reap.
        #expect(
            eventually(30) { kill(stopped, 0) != 0 || world.processState(stopped) == "Z" },
            "the stopped window is still there; the agent said:\n\(world.agentLog())")
    }

    /// Attack finding: a child not shown names asked by a token (from its status) and read the
    /// domain's name in the reply and in its list of asks.
    @Test func aChildAskingByTokenLearnsNoNameItMayNotSee() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        try shield(world, "--domain", "hidden-secret.example")
        let token = try world.cli(as: nil, "token", "domain", "hidden-secret.example").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let asked = try world.cli(as: world.child, "ask", "--token", token, "--json")
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(!asked.stdout.contains("hidden-secret"), "\(asked.stdout)")
        let mine = try world.cli(as: world.child, "requests", "--json")
        #expect(mine.status == 0 && mine.stdout.contains(token) && !mine.stdout.contains("hidden-secret"))
        // The guardian sees the name.
        #expect(try world.cli(as: world.guardian, "requests").stdout.contains("hidden-secret.example"))
        // Shown names, the child sees it too.
        #expect(
            try world.cli(as: world.guardian, "authorize", "--child", world.child, "--show-names").status == 0)
        #expect(try world.cli(as: world.child, "requests").stdout.contains("hidden-secret.example"))
    }

    /// FamilyControls on a desktop without a terminal: the picker and a guardian's approval are
    /// windows (`screentime-shield --pick`, `--guardian`), driven here with the keyboard.
    @Test func thePickerAndAGuardiansApprovalAreWindowsOnTheDesktop() throws {
        let (world, desktop) = try session()
        let guardianDesktop = try XDesktop(world: world, user: world.guardian)
        defer {
            guardianDesktop.stop()
            desktop.stop()
            world.tearDown()
        }
        func environment(_ desktop: XDesktop) -> [String] {
            [
                "DISPLAY=:\(desktop.display)", "SCREENTIME_SOCKET=\(world.socket)",
                "SCREENTIME_SHIELD=\(AgentWorld.binaries)/screentime-shield", "GSK_RENDERER=cairo",
                "GSETTINGS_BACKEND=memory", "GTK_A11Y=none", "NO_AT_BRIDGE=1",
            ]
        }
        let cli = AgentWorld.binaries + "/screentime"
        // The guardian picks for the child: Counter by its name, and a site.
        let picked = world.directory + "/picked.json"
        let picker = try world.launch(
            as: world.guardian, cli, ["pick", "--user", world.child], output: picked,
            environment: environment(guardianDesktop))
        let title = "Choose apps, categories and sites"
        var shown: String?
        #expect(
            eventually(10) {
                shown = window(guardianDesktop, titled: title); return shown != nil
            })
        try giveKeyboard(guardianDesktop, to: try #require(shown))
        for keys in [
            ["type", "--delay", "30", "counter"], ["key", "Tab", "space", "Tab"],
            ["type", "--delay", "30", "youtube.com"], ["key", "Return", "ctrl+Return"],
        ] {
            _ = try guardianDesktop.runXdotool(keys)
            Thread.sleep(forTimeInterval: 0.3)
        }
        let waitStart = Date()
        let pickerEnded = world.wait(picker, seconds: 10)
        let waitErrno = errno
        #expect(
            pickerEnded == 0,
            "after \(Date().timeIntervalSince(waitStart)) s errno \(waitErrno): \(stuck(picker, guardianDesktop, titled: title))"
        )
        if pickerEnded == nil {
            _ = try? screenshot(guardianDesktop, to: world.directory + "/picker.png")
            if let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] {
                _ = try? run("/bin/cp", [world.directory + "/picker.png", keep + "/picker-stuck.png"])
            }
        }
        // Its output (and whatever GTK said on standard error before it): the selection, as JSON.
        let output = (try? String(contentsOfFile: picked, encoding: .utf8)) ?? ""
        let json = output.range(of: "\n{").map { String(output[output.index(after: $0.lowerBound)...]) } ?? output
        let selection = try #require(
            try? JSONDecoder().decode(FamilyActivitySelection.self, from: Data(json.utf8)), "picked: \(output)")
        let counter = try world.cli(as: nil, "token", "app", "org.example.Counter", "--user", world.child).stdout
        let youtube = try world.cli(as: nil, "token", "domain", "youtube.com").stdout
        #expect(selection.applicationTokens.map(\.base64) == [counter.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(selection.webDomainTokens.map(\.base64) == [youtube.trimmingCharacters(in: .whitespacesAndNewlines)])

        // In the child's session, a guardian approves in person: the password in a window.
        try shield(world, "--app", "org.example.Counter")
        let asked = try world.cli(as: world.child, "ask", "--app", "org.example.Counter")
        #expect(asked.status == 0, "\(asked.stderr)")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let id = try #require(
            try decoder.decode(
                [TimeRequestReport].self,
                from: Data(try world.cli(as: world.guardian, "requests", "--json").stdout.utf8)
            ).first?.id)
        func approve(_ keys: [String]) throws -> Int32? {
            let approving = try world.launch(
                as: world.child, cli, ["grant", "\(id)", "--guardian", world.guardian],
                output: world.directory + "/approve.txt", environment: environment(desktop))
            var dialog: String?
            #expect(
                eventually(10) {
                    dialog = window(desktop, titled: "A guardian must approve"); return dialog != nil
                })
            try giveKeyboard(desktop, to: try #require(dialog))
            for key in keys.split(separator: ["then"]) { _ = try desktop.runXdotool(Array(key)) }
            let begun = Date()
            let status = world.wait(approving, seconds: 10)
            let waitErrno = errno
            if status == nil {
                _ = try? screenshot(desktop, to: world.directory + "/approve.png")
                if let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] {
                    _ = try? run("/bin/cp", [world.directory + "/approve.png", keep + "/approve-stuck.png"])
                }
                Issue.record(
                    "after \(Date().timeIntervalSince(begun)) s errno \(waitErrno): \(stuck(approving, desktop, titled: "A guardian must approve"))"
                )
            }
            return status
        }
        // Escape: nothing decided, no wrong password counted.
        #expect(try approve(["key", "Escape"]) == 1)
        #expect(try world.cli(as: world.guardian, "requests").stdout.contains("pending"))
        // The password typed, Enter: granted, in person.
        let approved = try approve(["type", "--delay", "20", world.guardianPassword, "then", "key", "Return"])
        #expect(
            approved == 0,
            "\((try? String(contentsOfFile: world.directory + "/approve.txt", encoding: .utf8)) ?? "")")
        let decided = try world.cli(as: world.guardian, "requests").stdout
        #expect(decided.contains("granted") && decided.contains("(in person)"), "\(decided)")
    }
}
