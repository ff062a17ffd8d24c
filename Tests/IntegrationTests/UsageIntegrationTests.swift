import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Synchronization
import Testing

/// Usage from window focus, end to end: a real X server (Xvfb) with a real EWMH window manager
/// (openbox) run by the test child, real X clients of the child's (xterm, xmessage) with desktop
/// entries, focus moved by xdotool, and the agent finding the session by itself and reading it
/// as root over XCB.
@Suite(
    .threadsOfTheirOwn,
    .enabled(if: isRoot, "needs root: users, the proc connector, other users' X servers"))
struct UsageIntegrationTests {
    private func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    /// The world, its child authorized, with desktop entries for the two X clients.
    private func world(idleTimeout: Int = 300, configuration: [String: String] = [:]) throws -> AgentWorld {
        let world = try AgentWorld(
            configuration: configuration.merging(["idleTimeout": "\(idleTimeout)"]) { first, _ in first })
        do {
            try world.installDesktopEntry(
                id: "org.example.Terminal", name: "Terminal", exec: "/usr/bin/xterm", categories: "System;")
            try world.installDesktopEntry(
                id: "org.example.Notes", name: "Notes", exec: "/usr/bin/xmessage", categories: "Office;")
            // Wayland clients: foot, and another program a guardian installed (foot's bytes and
            // one more, so another program by path and by content).
            try world.installDesktopEntry(
                id: "org.example.Foot", name: "Foot", exec: "/usr/bin/foot", categories: "System;")
            var chat = try Data(contentsOf: URL(fileURLWithPath: "/usr/bin/foot"))
            chat.append(0)
            try chat.write(to: URL(fileURLWithPath: world.directory + "/bin/chat"))
            chmod(world.directory + "/bin/chat", 0o755)
            try world.installDesktopEntry(
                id: "org.example.Chat", name: "Chat", exec: world.directory + "/bin/chat", categories: "Network;")
            // Clients of weston: its simple client, and a copy of it a guardian installed as
            // another program.
            try world.installDesktopEntry(
                id: "org.example.Shm", name: "Shm", exec: "/usr/bin/weston-simple-shm", categories: "Graphics;")
            var paint = try Data(contentsOf: URL(fileURLWithPath: "/usr/bin/weston-simple-shm"))
            paint.append(0)
            try paint.write(to: URL(fileURLWithPath: world.directory + "/bin/paint"))
            chmod(world.directory + "/bin/paint", 0o755)
            try world.installDesktopEntry(
                id: "org.example.Paint", name: "Paint", exec: world.directory + "/bin/paint", categories: "Graphics;")
            let result = try world.cli(as: world.guardian, "authorize", "--child", world.child)
            guard result.status == 0 else { throw WorldError("authorize: \(result.stderr)") }
        } catch {
            world.tearDown()
            throw error
        }
        return world
    }

    /// Her notes (xmessage, "Notes") made active on her desktop, her terminal (class ChildTerm)
    /// opened behind them first if `withTerminal`; the agent reading the display.
    private func openNotes(on desktop: inout XDesktop, _ world: AgentWorld, withTerminal: Bool = false) throws {
        if withTerminal {
            try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        }
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        let shown = eventually(30) {
            desktop.window("XMessage") != nil && (!withTerminal || desktop.window("ChildTerm") != nil)
        }
        #expect(shown, "her notes did not show:\n\(shown ? "" : desktop.explain("XMessage"))")
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        try desktop.activate("XMessage")
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Notes" })
    }

    /// Clicks `window` at a point every half second for `seconds`, as a child playing with the
    /// mouse; returns how long that went on.
    private func clickFor(
        _ seconds: Double, on window: String, at point: (Int, Int), _ desktop: XDesktop
    ) throws
        -> Double
    {
        let start = Date()
        while Date() < start.addingTimeInterval(seconds) {
            let clicked = try desktop.runXdotool(
                ["mousemove", "--window", window, "\(point.0)", "\(point.1)", "click", "1"])
            #expect(clicked.status == 0, "xdotool click: \(clicked.stderr)")
            Thread.sleep(forTimeInterval: 0.5)
        }
        return Date().timeIntervalSince(start)
    }

    /// The time of her xsteal game (a program with no desktop entry, named by its file).
    private func xstealSeconds(_ report: UsageReport) -> Double {
        report.applications.filter { $0.name?.hasPrefix("xsteal") == true }.map(\.seconds).reduce(0, +)
    }

    /// The seconds her xsteal game counts while it runs with `arguments`, looked at 14 s after it
    /// starts; `then` runs before the second report (busy loops stopped, not to slow it).
    private func xstealPlayed(
        _ arguments: [String], _ world: AgentWorld, _ desktop: inout XDesktop, then: () -> Void = {}
    ) throws -> Double {
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        let before = try report(world)
        try desktop.open(as: world.child, game, arguments)
        Thread.sleep(forTimeInterval: 14)
        then()
        return xstealSeconds(try report(world)) - xstealSeconds(before)
    }

    /// Busy loops of hers, each held to `processor` (nil: anywhere): her machine made to look busy.
    private struct BusyLoops {
        let world: AgentWorld
        private(set) var pids: [Int32] = []

        init(_ count: Int, on processor: String?, _ world: AgentWorld) throws {
            self.world = world
            let loop = ["/bin/sh", "-c", "while :; do :; done"]
            for _ in 0..<count {
                let (program, arguments) =
                    processor.map { ("/usr/bin/taskset", ["-c", $0] + loop) } ?? (loop[0], Array(loop.dropFirst()))
                pids.append(try world.launch(as: world.child, program, arguments))
            }
        }

        func stop() {
            for pid in pids { kill(pid, SIGKILL) }
            for pid in pids { _ = world.wait(pid, seconds: 5) }
        }
    }

    private func report(_ world: AgentWorld, user: String? = nil) throws -> UsageReport {
        let result = try world.cli(as: world.guardian, "report", "--user", user ?? world.child, "--today", "--json")
        guard result.status == 0 else { throw WorldError("report: \(result.stderr)") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(UsageReport.self, from: Data(result.stdout.utf8))
    }

    private func seconds(_ report: UsageReport, _ id: String) -> Double {
        report.applications.first { $0.id == id }?.seconds ?? 0
    }

    @Test func focusGivesForegroundTimePerAppAndOthersWindowsCountNothing() throws {
        let world = try world()
        defer { world.tearDown() }
        let opened = Date()
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        try desktop.open(as: world.bystander, "/usr/bin/xterm", ["-class", "ByTerm", "-e", "/bin/sleep", "600"])
        for window in ["ChildTerm", "XMessage", "ByTerm"] {
            #expect(eventually(30) { desktop.window(window) != nil }, "\(window) has no window")
        }
        // The agent found the session by itself, from the child's programs.
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })

        // Her windows may have been in front already: a window manager gives a new window the
        // focus, and before any window was active every mapped one counted. The bystander's
        // window goes in front first; what she has once her counts stand still is the baseline.
        try desktop.activate("ByTerm")
        let ids = ["org.example.Terminal", "org.example.Notes"]
        var before = try report(world)
        #expect(
            try eventually {
                Thread.sleep(forTimeInterval: 0.5)
                let now = try report(world)
                defer { before = now }
                return ids.allSatisfy { seconds(now, $0) == seconds(before, $0) }
            }, "her counts went on with another user's window in front")
        try desktop.activate("ChildTerm")
        let termStart = Date()
        #expect(
            try eventually {
                try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal"
            })
        Thread.sleep(until: termStart.addingTimeInterval(8))
        try desktop.activate("XMessage")
        let notesStart = Date()
        Thread.sleep(until: notesStart.addingTimeInterval(4))
        // Another user's window on the child's display: not the child's usage.
        try desktop.activate("ByTerm")
        let otherStart = Date()
        Thread.sleep(forTimeInterval: 3)
        let terminal = notesStart.timeIntervalSince(termStart)
        let notes = otherStart.timeIntervalSince(notesStart)

        let usage = try report(world)
        let counted = (
            seconds(usage, ids[0]) - seconds(before, ids[0]), seconds(usage, ids[1]) - seconds(before, ids[1])
        )
        #expect(abs(counted.0 - terminal) < 1.5, "terminal counted \(counted.0) s, in front \(terminal) s")
        #expect(abs(counted.1 - notes) < 1.5, "notes counted \(counted.1) s, in front \(notes) s")
        // Besides: the child's window manager, counted while no window was active yet (every
        // mapped window counts then, from when the session was found), under its file's name;
        // and, on a busy machine, a window of hers mapped before the agent had handled its
        // program's start (it counts as unidentified until then, never as nothing).
        let others = usage.applications.filter { !["org.example.Terminal", "org.example.Notes"].contains($0.id) }
        let unfocused = termStart.timeIntervalSince(opened) + 0.5
        let besides = ["openbox (program ", "unidentified ("]
        #expect(
            others.allSatisfy { other in
                other.seconds < unfocused && besides.contains { other.name?.hasPrefix($0) == true }
            },
            "\(others), no window active for less than \(unfocused) s")
        let hers = seconds(usage, ids[0]) + seconds(usage, ids[1])
        #expect(abs(usage.totalSeconds - hers) < 0.5 + others.map(\.seconds).reduce(0, +))
        #expect(usage.applications.first { $0.id == "org.example.Terminal" }?.name == "Terminal")
        #expect(usage.categories.compactMap(\.name).sorted() == ["office", "system"])
        #expect(usage.segments.count == 24)
        #expect(abs(usage.segments.map(\.seconds).reduce(0, +) - usage.totalSeconds) < 0.5)

        // Status names the session, its source and what is in front (nothing of the child's).
        let status = try world.status(of: world.child)
        let session = try #require(status.sessions?.first)
        #expect(session.kind == .x11)
        #expect(session.display == ":\(desktop.display)")
        #expect(session.focusSource.contains("_NET_ACTIVE_WINDOW"))
        #expect(session.inFront == nil)
        let text = try world.cli(as: world.guardian, "report", "--user", world.child)
        #expect(text.status == 0)
        #expect(text.stdout.contains("Terminal (org.example.Terminal)"))
        // The chart page, as a guardian opens it: headless Chromium renders it.
        let page = world.directory + "/report.html"
        let html = try world.cli(as: nil, "report", "--user", world.child, "--html", page)
        #expect(html.status == 0, "\(html.stderr)")
        let nowhere = try world.cli(as: nil, "report", "--user", world.child, "--html", "/nonexistent/report.html")
        #expect(nowhere.status == 73 && nowhere.stderr.contains("cannot write /nonexistent/report.html"))
        let written = try String(contentsOfFile: page, encoding: .utf8)
        #expect(written.contains("<svg") && written.contains("Terminal") && !written.contains("<script"))
        let shot = world.directory + "/report.png"
        let chromium = try run(
            "/usr/bin/chromium",
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--screenshot=\(shot)", "--window-size=900,1100",
                "file://" + page,
            ])
        #expect(chromium.status == 0, "\(chromium.stderr.suffix(400))")
        #expect((try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0 > 10_000)
        if let keep = ProcessInfo.processInfo.environment["SCREENTIME_KEEP_LOGS"] {
            _ = try? run("/bin/cp", [page, shot, keep])
        }

        // kill -9 mid-span: what a report showed is there after the restart.
        try desktop.activate("ChildTerm")
        Thread.sleep(forTimeInterval: 2)
        let acknowledged = try report(world)
        world.kill9()
        try world.start()
        let after = try report(world)
        #expect(seconds(after, "org.example.Terminal") >= seconds(acknowledged, "org.example.Terminal") - 0.01)
        #expect(seconds(after, "org.example.Terminal") > counted.0 + 1)
        // And the restarted agent finds the session again and goes on counting.
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
    }

    /// Two switches a moment apart (a child flicking between windows, a window manager's two
    /// changes for one): the second, told while the agent was still asking the server about the
    /// first, is not lost; what is in front is the window activated last, every time.
    @Test func aSwitchToldWhileTheLastIsReadIsNotLost() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil && desktop.window("XMessage") != nil })
        let terminal = try #require(desktop.window("ChildTerm"))
        let notes = try #require(desktop.window("XMessage"))
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        var lost: [String] = []
        var obeyed = 0
        for round in 0..<30 {
            let (first, last, name) = round % 2 == 0 ? (terminal, notes, "Notes") : (notes, terminal, "Terminal")
            let gap = String(format: "%.3f", Double(round % 10 + 1) / 1000)
            let switched = try desktop.runXdotool(["windowactivate", first, "sleep", gap, "windowactivate", last])
            #expect(switched.status == 0, "\(switched.stderr)")
            // Only a round where the window manager did make `last` active says anything.
            guard eventually(2, { (try? desktop.runXdotool(["getactivewindow"]))?.stdout.hasPrefix(last) == true })
            else { continue }
            obeyed += 1
            if !(try eventually(3) { try world.status(of: world.child).sessions?.first?.inFrontName == name }) {
                let seen = try world.status(of: world.child).sessions?.first?.inFrontName
                lost.append("round \(round), \(gap) s apart: \(seen ?? "nothing") in front, \(name) active")
            }
        }
        #expect(obeyed >= 25, "openbox made the window asked for active in \(obeyed) rounds of 30")
        #expect(lost.isEmpty, "\(lost)")
    }

    @Test func aSessionAlreadyRunningIsFoundAtAuthorizationAndLeftAtRevocation() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Terminal", name: "Terminal", exec: "/usr/bin/xterm", categories: "System;")
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        try desktop.activate("ChildTerm")
        // Authorized now: nothing new runs, and the session is found from what runs.
        let authorize = try world.cli(as: world.guardian, "authorize", "--child", world.child)
        #expect(authorize.status == 0, "\(authorize.stderr)")
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
        // Revoked: the session is no longer read.
        let revoke = try world.cli(as: world.guardian, "revoke", "--user", world.child)
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(
            eventually {
                let log = (try? String(contentsOfFile: world.directory + "/agent.log", encoding: .utf8)) ?? ""
                return log.contains("stopped reading a session")
            })
    }

    @Test func namesTheChildLooksUpAreCountedBesideTheApps() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        for arguments in [
            ["authorize", "--child", world.child], ["shield", "--user", world.child, "--domain", "blocked.test"],
        ] {
            let result = try world.cli(as: world.guardian, arguments: arguments)
            guard result.status == 0 else { throw WorldError("\(arguments): \(result.stderr)") }
        }
        for name in ["allowed.test", "www.allowed.test", "blocked.test"] {
            _ = try world.inNetwork(as: world.child, "/usr/bin/dig", ["+short", "+tries=1", "@127.0.0.1", name, "A"])
        }
        // A question waits for the agent, and `dig +tries=1` does not: on a loaded machine (the
        // test once took 254 s beside the desktop tests) the shielded name was judged and
        // counted after dig gave up and the report was read. Read until each name is counted.
        var usage = try report(world)
        _ = try eventually(30) {
            usage = try report(world)
            let counted = Set(usage.webDomains.filter { ($0.lookups ?? 0) > 0 }.compactMap(\.domain))
            return counted.isSuperset(of: ["allowed.test", "blocked.test"])
        }
        let byDomain = Dictionary(uniqueKeysWithValues: usage.webDomains.map { ($0.domain ?? "?", $0) })
        #expect(byDomain["allowed.test"]?.lookups == 2, "\(usage.webDomains)")
        #expect(byDomain["blocked.test"]?.lookups == 1)
        let first = try #require(byDomain["allowed.test"]?.firstLookup)
        #expect(abs(first.timeIntervalSinceNow) < 60)
        // The child may read its own report: tokens, no names (none were allowed).
        let own = try world.cli(as: world.child, "report", "--json")
        #expect(own.status == 0, "\(own.stderr)")
        #expect(own.stdout.contains(byDomain["allowed.test"]?.token ?? "-") && !own.stdout.contains("allowed.test"))
        // Nobody else may.
        let other = try world.cli(as: world.bystander, "report", "--user", world.child)
        #expect(other.status == 77, "\(other.stdout) \(other.stderr)")
    }

    /// An Xauthority file: (address, display number, cookie) entries, FamilyLocal.
    private func xauthority(_ entries: [(String, Int, [UInt8])]) -> Data {
        var bytes: [UInt8] = []
        func field(_ value: [UInt8]) { bytes += [UInt8(value.count >> 8), UInt8(value.count & 0xff)] + value }
        for (address, display, cookie) in entries {
            bytes += [0x01, 0x00]
            field(Array(address.utf8))
            field(Array(String(display).utf8))
            field(Array("MIT-MAGIC-COOKIE-1".utf8))
            field(cookie)
        }
        return Data(bytes)
    }

    @Test func aDecoyCookieAndACutConnectionKeepNothingFromTheCount() throws {
        let world = try world()
        defer { world.tearDown() }
        let home = try world.childDirectory()
        let real = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let decoy = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let number = XDesktop.freeNumber()
        // The server's file is root's (as a display manager's): the agent does not read it for a
        // server the child runs. The child's own file puts a decoy for another host first.
        let serverFile = world.directory + "/serverauth"
        try xauthority([(ProcessInfo.processInfo.hostName, number, real)]).write(to: URL(fileURLWithPath: serverFile))
        chmod(serverFile, 0o644)
        let childFile = home + "/.Xauthority"
        try xauthority([("decoy-host", number, decoy), (ProcessInfo.processInfo.hostName, number, real)])
            .write(to: URL(fileURLWithPath: childFile))
        _ = try run("/usr/bin/chown", [world.child, childFile])
        var desktop = try XDesktop(
            world: world, user: world.child, display: number, serverArguments: ["-auth", serverFile],
            environment: ["XAUTHORITY=\(childFile)"])
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        try desktop.activate("ChildTerm")
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })

        // Her client closes the agent's connection to her display, again and again.
        let killer = world.directory + "/bin/xkillclient"
        _ = try run("/usr/bin/cc", ["-O1", "-o", killer, AgentWorld.fixture("xkillclient.c"), "-lxcb", "-lxcb-res"])
        let agent = try #require(world.agentPID)
        let before = try report(world)
        let start = Date()
        var kills = 0
        while Date().timeIntervalSince(start) < 4 {
            let kill = try world.inNetwork(
                as: world.child, "/usr/bin/env", ["DISPLAY=:\(number)", "XAUTHORITY=\(childFile)", killer, "\(agent)"])
            if kill.status == 0 { kills += 1 }
            Thread.sleep(forTimeInterval: 0.5)
        }
        let after = try report(world)
        let elapsed = Date().timeIntervalSince(start)
        #expect(kills >= 3, "the agent's connection was closed \(kills) times")
        let counted = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        #expect(counted > elapsed - 1, "\(counted) s counted of \(elapsed) s")
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.problem == nil })
    }

    /// A display server the child fakes with a script: every way out of bounds it can answer the
    /// agent's connection leaves the agent running, small, its log short, and the session saying
    /// what was wrong.
    @Test func aFakeXServerOfTheChildsCannotCrashSwellOrFloodTheAgent() throws {
        let world = try world()
        defer { world.tearDown() }
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        let agent = try #require(world.agentPID)
        let modes = ["huge-property", "huge-reply", "refuse", "bad-setup", "event-flood"]
        var numbers: [String: Int] = [:]
        defer {
            for number in numbers.values { unlink("/tmp/.X11-unix/X\(number)") }
        }
        for mode in modes {
            var number = Int.random(in: 5000...5900)
            while Files.exists("/tmp/.X11-unix/X\(number)") || numbers.values.contains(number) {
                number = Int.random(in: 5000...5900)
            }
            numbers[mode] = number
            _ = try world.launch(
                as: world.child, "/usr/bin/python3", [AgentWorld.fixture("fake-x-server.py"), "\(number)", mode])
            #expect(eventually { Files.exists("/tmp/.X11-unix/X\(number)") }, "\(mode) listens")
            // A program of the child's names the display: the agent finds it by itself.
            _ = try world.launch(as: world.child, "/bin/sleep", ["120"], environment: ["DISPLAY=:\(number)"])
        }
        func session(_ mode: String) throws -> SessionReport? {
            try world.status(of: world.child).sessions?.first { $0.display == ":\(numbers[mode]!)" }
        }
        let expected = [
            "huge-reply": "more than", "refuse": "refused the connection", "bad-setup": "out of bounds",
            "event-flood": "events",
        ]
        for (mode, words) in expected {
            #expect(
                try eventually(20) { try session(mode)?.problem?.contains(words) == true },
                "\(mode): \(String(describing: try? session(mode)))")
        }
        // The server whose counts lie is read, and nothing it claimed was believed.
        #expect(try eventually(10) { try session("huge-property").map { $0.problem == nil } == true })
        Thread.sleep(forTimeInterval: 3)
        #expect(world.agentPID == agent, "the agent is the same process")
        let status = (try? String(contentsOfFile: "/proc/\(agent)/status", encoding: .utf8)) ?? ""
        let rss =
            status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        #expect(rss > 0 && rss < 300_000, "the agent's resident size: \(rss) kB")
        let log = (try? String(contentsOfFile: world.directory + "/agent.log", encoding: .utf8)) ?? ""
        // The refusal's reason goes to the log once, cut short; libxcb would write all of it on
        // each try.
        #expect(!log.contains(String(repeating: "go away ", count: 20)), "the server's refusal, written whole")
        #expect(log.split(separator: "\n").filter { $0.contains("go away") }.count <= 3)
        #expect(log.utf8.count < 2_000_000, "the agent's log: \(log.utf8.count) bytes")
    }

    /// A notice (a shielded site's) takes the focus where the window manager gives it. The time
    /// in front of it counts to the app that was in front before it, not to the shield window: a
    /// child who looks up shielded names on purpose keeps none of a limited app's time off its
    /// limit (2026-11-30, before the mend: 18.8 s of 48.5 s counted to her game, 33.3 s to the
    /// shield window).
    @Test func aNoticeInFrontCountsAsTheAppInFrontBeforeIt() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        let sites = ["one.test", "two.test", "three.test"]
        for site in sites {
            let shielded = try world.cli(as: world.guardian, "shield", "--user", world.child, "--domain", site)
            #expect(shielded.status == 0, "\(shielded.stderr)")
        }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        try desktop.activate("ChildTerm")
        try desktop.input()
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
        let before = try report(world)
        let start = Date()
        var focused = 0
        var inFront: [String] = []
        for site in sites {
            // As the child: a shielded name, looked up on purpose.
            let looked = try world.command(
                as: world.child, "/usr/bin/dig", ["+tries=1", "+time=2", "@127.0.0.1", "www.\(site)", "A"])
            #expect(looked.stdout.contains("NXDOMAIN"), "\(site): \(looked.stdout)")
            var notice: String?
            guard
                eventually(
                    20,
                    {
                        notice = desktop.shown(["--name", "^\(site) is shielded$"]); return notice != nil
                    }),
                let notice
            else {
                Issue.record("no notice for \(site)")
                continue
            }
            // Only a notice the window manager made active says anything.
            if eventually(3, { (try? desktop.runXdotool(["getactivewindow"]))?.stdout.hasPrefix(notice) == true }) {
                focused += 1
                Thread.sleep(forTimeInterval: 1)
                inFront.append((try world.status(of: world.child).sessions?.first?.inFrontName) ?? "nothing")
            }
            // It closes by itself.
            #expect(eventually(15) { desktop.shown(["--name", "^\(site) is shielded$"]) == nil })
        }
        let after = try report(world)
        let elapsed = Date().timeIntervalSince(start)
        #expect(focused >= 2, "openbox made \(focused) notices of \(sites.count) active: nothing was tried")
        #expect(inFront.allSatisfy { $0 == "Terminal" }, "in front while a notice was active: \(inFront)")
        let terminal = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        let shieldWindow = after.applications.filter { $0.name == "Screen Time (shield window)" }.map(\.seconds)
            .reduce(0, +)
        #expect(terminal > elapsed - 2, "the terminal counted \(terminal) s of \(elapsed) s")
        #expect(shieldWindow < 1, "the shield window counted \(shieldWindow) s")
    }

    @Test func windowsWhoseProcessHidesStillCount() throws {
        let world = try world()
        defer { world.tearDown() }
        // An X connection made by a helper that exits: the server knows a dead pid.
        let library = world.directory + "/bin/handover.so"
        _ = try run(
            "/usr/bin/cc", ["-O1", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("handover.c"), "-ldl"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        desktop.environment = ["LD_PRELOAD=\(library)"]
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "HiddenTerm", "-e", "/bin/sleep", "600"])
        desktop.environment = []
        #expect(eventually(30) { desktop.window("HiddenTerm") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        try desktop.activate("HiddenTerm")
        let start = Date()
        Thread.sleep(forTimeInterval: 3)
        let usage = try report(world)
        let hidden = usage.applications.first { $0.name?.hasPrefix("unidentified") == true }
        #expect((hidden?.seconds ?? 0) > Date().timeIntervalSince(start) - 1.5, "\(usage.applications)")
    }

    /// Attack finding: SIGTERM with a window in front left the agent half-alive (its socket gone,
    /// its usage loop flushing for ever), so its supervisor never started it again.
    @Test func aStopWithAWindowInFrontEndsTheAgentAndKeepsTheTime() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        try desktop.activate("ChildTerm")
        let start = Date()
        Thread.sleep(forTimeInterval: 3)
        let done = DispatchSemaphore(value: 0)
        let status = Mutex<Int32?>(nil)
        nonisolated(unsafe) let stopping = world
        Thread {
            let ended = stopping.terminate()
            status.withLock { $0 = ended }
            done.signal()
        }.start()
        let ended = done.wait(timeout: .now() + 30) == .success
        #expect(ended, "the agent did not end on SIGTERM with a window in front")
        if !ended {
            world.signalAgent(SIGKILL)
            done.wait()
        }
        let inFront = Date().timeIntervalSince(start)
        #expect(status.withLock { $0 } == 0)
        try world.start()
        let usage = try report(world)
        #expect(seconds(usage, "org.example.Terminal") > inFront - 2, "the time up to the stop was lost")
    }

    /// The child's client opens a window, gives its connection to a game it starts, and becomes
    /// an allowed program: the window counts for every program holding its connection.
    @Test func aWindowMovedInsideTheActiveOneCountsToo() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "a game, in disguise"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil && desktop.window("XMessage") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        // The child moves the "game" inside the terminal's window and keeps the terminal active.
        let game = try #require(desktop.window("XMessage"))
        let terminal = try #require(desktop.window("ChildTerm"))
        #expect(try desktop.moveInside(game, terminal), "the game never showed inside the terminal")
        try desktop.activate("ChildTerm")
        let start = Date()
        Thread.sleep(forTimeInterval: 5)
        let usage = try report(world)
        let inFront = Date().timeIntervalSince(start)
        #expect(try desktop.isViewable(game, inside: terminal), "the game was hidden: nothing to count")
        #expect(
            seconds(usage, "org.example.Notes") > inFront - 1.5,
            "the game inside counted \(seconds(usage, "org.example.Notes")) s")
        #expect(seconds(usage, "org.example.Terminal") > inFront - 1.5)
    }

    @Test func aWindowWhoseConnectionAnotherProgramHoldsCountsForThatProgramToo() throws {
        let world = try world()
        defer { world.tearDown() }
        let handoff = world.directory + "/bin/handoff"
        _ = try run("/usr/bin/cc", ["-O1", "-o", handoff, AgentWorld.fixture("handoff.c"), "-lxcb"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(
            as: world.child, handoff,
            [
                "Sneaky", "/usr/bin/xterm", "-class", "GameTerm", "-e", "/bin/sleep", "600", "--",
                "/usr/bin/xmessage", "-name", "decoy", "allowed",
            ])
        #expect(eventually(30) { desktop.window("Sneaky") != nil && desktop.window("XMessage") != nil })
        Thread.sleep(forTimeInterval: 0.5)
        try desktop.activate("Sneaky")
        try desktop.input()
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.first?.inFront != nil })
        Thread.sleep(forTimeInterval: 1)
        let before = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 3)
        try desktop.input()
        let after = try report(world)
        let elapsed = Date().timeIntervalSince(start)
        let game = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        #expect(game > elapsed - 1.5, "the program holding the connection: \(game) s of \(elapsed) s")
    }

    /// A display root's server runs (a display manager's) is read for the child only while a
    /// program of the child's is its client: naming it in an environment does not make a
    /// bystander's windows the child's.
    @Test func rootsDisplayCountsForTheChildOnlyWhileAProgramOfTheirsIsItsClient() throws {
        let world = try world()
        defer { world.tearDown() }
        let cookie = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let number = XDesktop.freeNumber()
        let serverFile = world.directory + "/serverauth"
        try xauthority([(ProcessInfo.processInfo.hostName, number, cookie)]).write(to: URL(fileURLWithPath: serverFile))
        chmod(serverFile, 0o600)
        var desktop = try XDesktop(
            world: world, user: "root", display: number, serverArguments: ["-auth", serverFile],
            environment: ["XAUTHORITY=\(serverFile)"], windowManager: "root")
        defer { desktop.stop() }
        // A bystander's window, made through a helper that exits (the server knows a dead pid).
        let library = world.directory + "/bin/handover.so"
        _ = try run(
            "/usr/bin/cc", ["-O1", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("handover.c"), "-ldl"])
        let theirs = world.directory + "/bystander.xauth"
        try xauthority([(ProcessInfo.processInfo.hostName, number, cookie)]).write(to: URL(fileURLWithPath: theirs))
        _ = try run("/usr/bin/chown", [world.bystander, theirs])
        desktop.environment = ["XAUTHORITY=\(theirs)", "LD_PRELOAD=\(library)"]
        try desktop.open(as: world.bystander, "/usr/bin/xterm", ["-class", "TheirTerm", "-e", "/bin/sleep", "600"])
        desktop.environment = ["XAUTHORITY=\(serverFile)"]
        #expect(eventually(30) { desktop.window("TheirTerm") != nil })
        try desktop.activate("TheirTerm")
        // The child only names the display.
        _ = try world.launch(as: world.child, "/bin/sleep", ["120"], environment: ["DISPLAY=:\(number)"])
        #expect(
            try eventually(15) {
                try world.status(of: world.child).sessions?.first?.problem?.contains("no program of the user") == true
            })
        Thread.sleep(forTimeInterval: 2)
        try desktop.input()
        let seen = try report(world)
        #expect(seen.totalSeconds == 0, "\(seen.applications)")

        // A program of the child's on it: the display is read, the child's window counted.
        let home = try world.childDirectory()
        let mine = home + "/.Xauthority"
        try xauthority([(ProcessInfo.processInfo.hostName, number, cookie)]).write(to: URL(fileURLWithPath: mine))
        _ = try run("/usr/bin/chown", [world.child, mine])
        desktop.environment = ["XAUTHORITY=\(mine)"]
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "childnote", "mine"])
        desktop.environment = ["XAUTHORITY=\(serverFile)"]
        #expect(eventually(30) { desktop.window("XMessage") != nil })
        try desktop.activate("XMessage")
        #expect(
            try eventually(20) {
                try desktop.input()
                return try world.status(of: world.child).sessions?.first?.inFrontName == "Notes"
            })
    }

    /// An X server of the child's that no program names in its environment (its client given
    /// `-display`): found from its socket, and its window counted.
    @Test func aDisplayNoEnvironmentNamesIsFoundFromItsSocket() throws {
        let world = try world()
        defer { world.tearDown() }
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        let number = XDesktop.freeNumber()
        let server = try world.launch(
            as: world.child, "/usr/bin/Xvfb", [":\(number)", "-screen", "0", "800x600x24", "-nolisten", "tcp"])
        defer {
            kill(server, SIGKILL)
            _ = world.wait(server, seconds: 5)
            unlink("/tmp/.X11-unix/X\(number)")
            unlink("/tmp/.X\(number)-lock")
        }
        #expect(eventually { Files.exists("/tmp/.X11-unix/X\(number)") })
        Thread.sleep(forTimeInterval: 0.5)
        _ = try world.launch(
            as: world.child, "/usr/bin/xmessage", ["-display", ":\(number)", "-name", "lone", "alone"])
        #expect(
            try eventually(15) {
                try world.status(of: world.child).sessions?.first { $0.display == ":\(number)" }?.inFrontName == "Notes"
            }, "\(String(describing: try? world.status(of: world.child).sessions))")
        let start = Date()
        Thread.sleep(forTimeInterval: 2)
        let notes = seconds(try report(world), "org.example.Notes")
        #expect(notes > Date().timeIntervalSince(start) - 0.5, "Notes: \(notes) s")
    }

    @Test func anXServerInTheChildsOwnPidNamespaceStillCounts() throws {
        let world = try world()
        defer { world.tearDown() }
        let number = XDesktop.freeNumber()
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        let script = world.directory + "/inside.sh"
        try """
        #!/bin/sh
        Xvfb :\(number) -screen 0 800x600x24 -nolisten tcp &
        sleep 1.5
        DISPLAY=:\(number) HOME=/tmp openbox &
        sleep 1
        DISPLAY=:\(number) xmessage -name nsnote "inside a namespace" &
        wait
        """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let outer = try world.launch(
            as: world.child, "/usr/bin/unshare", ["--user", "--map-root-user", "--pid", "--fork", "--mount", script])
        defer {
            kill(outer, SIGKILL)
            unlink("/tmp/.X11-unix/X\(number)")
            unlink("/tmp/.X\(number)-lock")
        }
        func xdotool(_ arguments: [String]) throws -> CommandResult {
            try run("/usr/bin/env", ["DISPLAY=:\(number)", "/usr/bin/xdotool"] + arguments)
        }
        // Its openbox woken while the window is not shown (as `XDesktop.shown` does).
        #expect(
            eventually(20) {
                guard (try? xdotool(["search", "--onlyvisible", "--class", "XMessage"]))?.status == 0 else {
                    XDesktop.wakeWindowManager(display: number)
                    return false
                }
                return true
            })
        let window =
            try xdotool(["search", "--onlyvisible", "--class", "XMessage"]).stdout
            .split(separator: "\n").first.map(String.init) ?? ""
        _ = try xdotool(["windowactivate", "--sync", window])
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.isEmpty == false })
        let start = Date()
        Thread.sleep(forTimeInterval: 3)
        let usage = try report(world)
        #expect(usage.totalSeconds > Date().timeIntervalSince(start) - 1.5, "\(usage.applications)")
    }

    @Test func aSiblingsDisplayIsNeitherSquattedNorGivenItsCookie() throws {
        let world = try world()
        defer { world.tearDown() }
        // A second child (the sibling), authorized too.
        let sibling = try world.makeUser("stsib")
        let result = try world.cli(as: world.guardian, "authorize", "--child", sibling)
        #expect(result.status == 0, "\(result.stderr)")
        let number = XDesktop.freeNumber()
        // The child names the sibling's display number first, and again and again.
        let squat = try world.launch(
            as: world.child, "/bin/sh", ["-c", "while true; do env DISPLAY=:\(number) /bin/true; sleep 0.2; done"])
        defer { kill(squat, SIGKILL) }
        Thread.sleep(forTimeInterval: 0.5)
        var desktop = try XDesktop(world: world, user: sibling, display: number)
        defer { desktop.stop() }
        try desktop.open(as: sibling, "/usr/bin/xterm", ["-class", "SibTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("SibTerm") != nil })
        try desktop.activate("SibTerm")
        #expect(try eventually(15) { try world.status(of: sibling).sessions?.first?.inFrontName == "Terminal" })
        let start = Date()
        Thread.sleep(forTimeInterval: 2)
        let usage = try report(world, user: sibling)
        #expect(seconds(usage, "org.example.Terminal") > Date().timeIntervalSince(start) - 1)
        // The child's own session for that number is refused: the server is the sibling's.
        #expect(
            try eventually {
                try world.status(of: world.child).sessions?.first?.problem?.contains("another user") == true
            })
    }

    @Test func aChildWritingTheActiveWindowOrKillingItsWindowManagerGainsNothing() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil && desktop.window("XMessage") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        try desktop.activate("ChildTerm")
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
        func asChild(_ arguments: [String]) throws {
            let result = try world.inNetwork(
                as: world.child, "/usr/bin/env", ["DISPLAY=:\(desktop.display)", "/usr/bin/xprop"] + arguments)
            guard result.status == 0 else { throw WorldError("xprop \(arguments): \(result.stderr)") }
        }

        // The child's own client says no window is active: every mapped window of the child's counts.
        var before = try report(world)
        try asChild(["-root", "-f", "_NET_ACTIVE_WINDOW", "32x", "-set", "_NET_ACTIVE_WINDOW", "0x0"])
        var start = Date()
        #expect(
            try eventually {
                try world.status(of: world.child).sessions?.first?.focusSource.contains("every mapped window") == true
            })
        Thread.sleep(until: start.addingTimeInterval(3))
        var after = try report(world)
        var elapsed = Date().timeIntervalSince(start)
        #expect(after.totalSeconds - before.totalSeconds > elapsed - 1, "\(after.totalSeconds - before.totalSeconds) s")
        #expect(seconds(after, "org.example.Notes") - seconds(before, "org.example.Notes") > elapsed - 1)

        // The active window said to be the notes while the keyboard stays with the terminal: both count.
        try desktop.activate("ChildTerm")
        let notes = try #require(desktop.window("XMessage"))
        before = try report(world)
        try asChild([
            "-root", "-f", "_NET_ACTIVE_WINDOW", "32x", "-set", "_NET_ACTIVE_WINDOW",
            "0x" + String(UInt32(notes) ?? 0, radix: 16),
        ])
        start = Date()
        Thread.sleep(forTimeInterval: 3)
        after = try report(world)
        elapsed = Date().timeIntervalSince(start)
        let terminal = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        #expect(terminal > elapsed - 1, "the terminal with the keyboard counted \(terminal) s of \(elapsed) s")

        // The window manager killed: the windows stay, and so does the counting.
        desktop.killWindowManager()
        before = try report(world)
        start = Date()
        Thread.sleep(forTimeInterval: 3)
        after = try report(world)
        elapsed = Date().timeIntervalSince(start)
        #expect(after.totalSeconds - before.totalSeconds > elapsed - 1, "\(after.totalSeconds - before.totalSeconds) s")
    }

    /// Her game shows a window no window manager manages, over everything, and takes the
    /// keyboard itself a moment later: `_NET_ACTIVE_WINDOW` still names her homework, and no
    /// event of the root window's says anything. The window with the keyboard counts at once.
    @Test func aWindowTakingTheKeyboardItselfCountsAtOnce() throws {
        let world = try world()
        defer { world.tearDown() }
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        // Her window manager gone (openbox would say no window is active once the keyboard left
        // its windows): the root window's properties stay as it left them, naming the notes.
        desktop.killWindowManager()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try world.status(of: world.child).sessions?.first?.inFrontName == "Notes")
        let before = try report(world)
        try desktop.open(as: world.child, game, ["6"])
        let start = Date()
        // Shown at 0.5 s, the keyboard taken then, gone at 6.5 s.
        Thread.sleep(until: start.addingTimeInterval(6))
        let after = try report(world)
        let played = xstealSeconds(after) - xstealSeconds(before)
        #expect(played > 4.5, "the game with the keyboard counted \(played) s of 5.5 s: \(after.applications)")

        // The keyboard given to PointerRoot instead (any client may): the keys go to the window
        // under the pointer, the game's over everything, and it counts.
        Thread.sleep(forTimeInterval: 1)
        let second = try report(world)
        try desktop.open(as: world.child, game, ["6", "pointer-root"])
        Thread.sleep(forTimeInterval: 6)
        let third = try report(world)
        let pointed = xstealSeconds(third) - xstealSeconds(second)
        #expect(pointed > 4.5, "the game under the pointer, PointerRoot the focus, counted \(pointed) s of 5.5 s")
    }

    /// Her game over everything grabs the keyboard (as xterm's "secure keyboard" does): the
    /// window manager's active window and the focus stay on her notes, and the keys go to the
    /// game. The game counts; with the grab on the root window (nothing tells where the keys go),
    /// every client of the display counts; after the grab, only what is active again.
    @Test func aWindowHoldingTheKeyboardCountsThoughTheFocusStays() throws {
        let world = try world()
        defer { world.tearDown() }
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world, withTerminal: true)
        for mode in ["grab", "grab-root"] {
            let before = try report(world)
            try desktop.open(as: world.child, game, ["6", mode])
            let start = Date()
            // Shown at 0.5 s, the keyboard grabbed then, gone at 6.5 s.
            Thread.sleep(until: start.addingTimeInterval(6))
            let after = try report(world)
            let played = xstealSeconds(after) - xstealSeconds(before)
            #expect(played > 4.5, "\(mode): the game holding the keyboard counted \(played) s of 5.5 s")
            if mode == "grab-root" {
                let terminal = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
                #expect(terminal > 4.5, "\(mode): the keys anyone's, her terminal counted \(terminal) s of 5.5 s")
            }
            Thread.sleep(forTimeInterval: 1.5)
        }
        // The grabs over (the game gone), her terminal behind the notes counts nothing.
        let quiet = try report(world)
        Thread.sleep(forTimeInterval: 3)
        let later = try report(world)
        let behind = seconds(later, "org.example.Terminal") - seconds(quiet, "org.example.Terminal")
        #expect(behind < 0.5, "the terminal behind counted \(behind) s of 3 s after the grabs")
        #expect(seconds(later, "org.example.Notes") - seconds(quiet, "org.example.Notes") > 2)
    }

    /// Her game grabs the server: it then serves the game alone, and answers the agent nothing.
    /// A request that waits counts every program of hers connected to the display, from a second
    /// after it was asked, until the server answers again; a grab made while the agent asks
    /// nothing is found by the next of its requests (one at least every 10 s).
    @Test func aServerGrabbedByHerGameCountsEveryProgramOnIt() throws {
        let world = try world()
        defer { world.tearDown() }
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world, withTerminal: true)
        // The grab, and the keyboard moved under it (the agent hears of that, and asks).
        var before = try report(world)
        try desktop.open(as: world.child, game, ["6", "grab-server"])
        var start = Date()
        #expect(
            try eventually {
                try world.status(of: world.child).sessions?.first?.problem?.contains("does not answer") == true
            }, "status never told the display's server does not answer")
        Thread.sleep(until: start.addingTimeInterval(6))
        var after = try report(world)
        let played = xstealSeconds(after) - xstealSeconds(before)
        // From 0.5 s (the grab) and a second of waiting, to 6.5 s (the game gone).
        #expect(played > 3.5, "the game holding the server counted \(played) s of 5.5 s")
        let terminal = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        #expect(terminal > 3.5, "her terminal, connected to the display, counted \(terminal) s of 5.5 s")
        // The game gone, the server answers: what is active again counts, alone.
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.problem == nil })
        Thread.sleep(forTimeInterval: 1)
        let quiet = try report(world)
        Thread.sleep(forTimeInterval: 3)
        let later = try report(world)
        let behind = seconds(later, "org.example.Terminal") - seconds(quiet, "org.example.Terminal")
        #expect(behind < 0.5, "the terminal behind counted \(behind) s of 3 s after the grab")
        #expect(seconds(later, "org.example.Notes") - seconds(quiet, "org.example.Notes") > 2)

        // A grab and nothing more: nothing makes the agent ask, until its next request.
        before = try report(world)
        try desktop.open(as: world.child, game, ["14", "grab-server-quiet"])
        start = Date()
        Thread.sleep(until: start.addingTimeInterval(14))
        after = try report(world)
        let quietly = xstealSeconds(after) - xstealSeconds(before)
        #expect(quietly > 2, "the game holding the server, nothing asked, counted \(quietly) s of 13.5 s")
    }

    /// Her game grabs the server 850 ms of every 950, takes the keyboard inside each grab and gives
    /// it back before letting go: no request of the agent's waits a second, and every answer names
    /// the notes. Each late answer counts every program of hers connected to the display for its
    /// wait, and the agent then asks closely, so the game counts most of its time (0 s before).
    @Test func herGameGrabbingTheServerInBurstsCounts() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        let played = try xstealPlayed(["12", "grab-server-bursts"], world, &desktop)
        // 12 s in bursts from 0.5 s: about 10 s inside grabs.
        #expect(played > 6, "the game grabbing the server in bursts counted \(played) s of about 10 s")
        #expect(try world.status(of: world.child).sessions?.first?.inFrontName == "Notes")
    }

    /// The same game with its grabs passed off as a busy machine (an attack on the installed
    /// agent did it): she pins her own server to one processor, renices it to 19 and runs a busy
    /// loop of hers there, and the game keeps the server drawing inside each grab, so that it never
    /// sleeps while the agent waits. Her server's wait for the processor is of her making and
    /// explains nothing: the game counts (0 s before).
    func herGameGrabbingTheServerBehindABusyMachineOfHerMakingCounts() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        let server = try #require(desktop.serverPID)
        let processor = RunQueueWait.ownProcessors() > 1 ? "1" : "0"
        // As the child, each on her own processes.
        for (program, arguments) in [
            ("/usr/bin/taskset", ["-a", "-p", "-c", processor, "\(server)"]),
            ("/usr/bin/renice", ["-n", "19", "-p", "\(server)"]),
        ] {
            let done = try world.command(as: world.child, program, arguments)
            #expect(done.status == 0, "\(program): \(done.stderr)")
        }
        let loop = try BusyLoops(1, on: processor, world)
        defer { loop.stop() }
        let played = try xstealPlayed(["12", "grab-server-bursts-busy"], world, &desktop, then: loop.stop)
        // 12 s in bursts from 0.5 s: about 10 s inside grabs.
        #expect(played > 6, "the game grabbing her slowed server counted \(played) s of about 10 s")
    }

    /// The same game, her server put by her under the idle or the batch scheduling policy (any
    /// user may, on her own processes; an attack on the installed agent tried both) while a busy
    /// loop of hers runs on each processor: under the idle policy the server runs only when nothing
    /// else would, and its waits for a processor would pass for a busy machine. A thread under
    /// either policy explains nothing: the game counts. (One policy at a time: the loops slow
    /// every test running beside.) Under the batch policy the server keeps its fair share, so its
    /// waits are never long enough to pass for a busy machine: that case counts even with the
    /// batch policy not taken as slowed on purpose (tried, also with four loops a processor); it
    /// stays as the attack that was tried, and `RunQueueWaitTests` holds the policy's check.
    func herGameBehindASchedulingPolicyOfHersCounts(policy: String) throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        let server = try #require(desktop.serverPID)
        let done = try world.command(as: world.child, "/usr/bin/chrt", [policy, "-a", "-p", "0", "\(server)"])
        #expect(done.status == 0, "chrt \(policy): \(done.stderr)")
        let set = (try? String(contentsOfFile: "/proc/\(server)/stat", encoding: .utf8))?.split(separator: ")").last?
            .split(separator: " ")
        // Field 41, the policy, counted after the name: 5 idle, 3 batch.
        #expect(set.map { $0.count > 38 ? String($0[38]) : "" } == (policy == "-i" ? "5" : "3"))
        let loops = try BusyLoops(RunQueueWait.ownProcessors(), on: nil, world)
        defer { loops.stop() }
        let played = try xstealPlayed(["12", "grab-server-bursts-busy"], world, &desktop, then: loops.stop)
        // 12 s in bursts from 0.5 s: about 10 s inside grabs.
        #expect(played > 6, "the game grabbing her server under chrt \(policy) counted \(played) s of about 10 s")
    }

    /// The same, her server slowed only while she grabs it (a second attack did it): inside each
    /// grab the game pins her server to the processor where ten busy loops of hers run, and lets
    /// it run everywhere again before letting go, so that it is as the system started it when
    /// the agent's wait begins and when it ends. The wait is looked at while it lasts (pinned,
    /// and the other processor sat idle): the game counts (0 s before).
    func herGameSlowingItsServerOnlyWhileItGrabsCounts() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        let server = try #require(desktop.serverPID)
        let processor = "\(max(0, RunQueueWait.ownProcessors() - 1))"
        let loops = try BusyLoops(10, on: processor, world)
        defer { loops.stop() }
        let played = try xstealPlayed(
            ["12", "grab-server-bursts-busy-pin", "\(server)", processor], world, &desktop, then: loops.stop)
        let allowed = (try? String(contentsOfFile: "/proc/\(server)/status", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list") }
        #expect(
            played > 6,
            "the game slowing its server while grabbing counted \(played) s of about 10 s (now \(allowed ?? "?"))")
    }

    /// Her game in a window the window manager keeps above the others and never gives the keyboard
    /// (WM_HINTS input false), played with the mouse beside the notes, which stay active: the
    /// window under the pointer counts while a button is used there, and no more 10 s after; also
    /// while the game grabs the pointer (XInput 2.0's raw events stop during grabs; 2.2's do not).
    /// A click on its title bar counts nothing for the window manager.
    @Test(arguments: ["no-focus", "no-focus-grab"])
    func aWindowPlayedWithTheMouseCountsThoughItNeverTakesTheKeyboard(mode: String) throws {
        let world = try world()
        defer { world.tearDown() }
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        try desktop.open(as: world.child, game, ["40", mode])
        #expect(eventually(30) { desktop.window("XSteal") != nil })
        let window = try #require(desktop.window("XSteal"))
        let notes = try #require(desktop.window("XMessage"))
        Thread.sleep(forTimeInterval: 1)
        let before = try report(world)
        let played = try clickFor(6, on: window, at: (40, 40), desktop)
        let after = try report(world)
        let active = try desktop.runXdotool(["getactivewindow"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(active == notes, "the window manager made \(active) active, not the notes (\(notes))")
        let counted = xstealSeconds(after) - xstealSeconds(before)
        #expect(counted > played - 2, "the game played with the mouse (\(mode)) counted \(counted) s of \(played) s")
        // Left alone (the pointer still over it): counted no more once 10 s passed.
        Thread.sleep(forTimeInterval: 11)
        let quiet = try report(world)
        Thread.sleep(forTimeInterval: 4)
        let later = try report(world)
        let unused = xstealSeconds(later) - xstealSeconds(quiet)
        #expect(unused < 0.5, "the game, no button used for 11 s, counted \(unused) s of 4 s")
        #expect(seconds(later, "org.example.Notes") - seconds(quiet, "org.example.Notes") > 3)
        if mode == "no-focus" {
            // Clicks on its title bar (the window manager's frame, above the window).
            func managerSeconds(_ report: UsageReport) -> Double {
                report.applications.filter { $0.name?.lowercased().hasPrefix("openbox") == true }.map(\.seconds)
                    .reduce(0, +)
            }
            let framed = try report(world)
            for _ in 0..<8 {
                _ = try desktop.runXdotool(["mousemove", "--window", window, "40", "-8", "click", "1"])
                Thread.sleep(forTimeInterval: 0.5)
            }
            let clickedFrame = try report(world)
            #expect(managerSeconds(clickedFrame) - managerSeconds(framed) < 0.5, "the window manager counted")
        }
    }

    /// Her game in a window that never takes the keyboard, played by moving the mouse alone (no
    /// button, no wheel) while her notes stay active: the window under a pointer that keeps
    /// moving counts, from its second second of moving on, and no more 3.5 s after it stops; so
    /// does play in bursts (a second of moves, then 1.7 s or 3.5 s still, as attacks played);
    /// passing over it on the way back to the notes now and then (every 5 s) counts nothing.
    @Test func aWindowPlayedByMovingTheMouseAloneCounts() throws {
        let world = try world()
        defer { world.tearDown() }
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        try desktop.open(as: world.child, game, ["90", "no-focus"])
        #expect(eventually(30) { desktop.window("XSteal") != nil })
        let window = try #require(desktop.window("XSteal"))
        let notes = try #require(desktop.window("XMessage"))
        Thread.sleep(forTimeInterval: 1)
        // Steering: the pointer moved over the game ten times a second, in a small square (as a
        // mouse moves it: relative motion; an absolute `mousemove` warps the pointer, which no
        // device does and XInput 2 tells no raw motion of).
        _ = try desktop.runXdotool(["mousemove", "--window", window, "60", "60"])
        let before = try report(world)
        let start = Date()
        var step = 0
        while Date() < start.addingTimeInterval(8) {
            let (dx, dy) = [(8, 0), (0, 8), (-8, 0), (0, -8)][step % 4]
            step += 1
            let moved = try desktop.runXdotool(["mousemove_relative", "--", "\(dx)", "\(dy)"])
            #expect(moved.status == 0, "xdotool mousemove_relative: \(moved.stderr)")
            Thread.sleep(forTimeInterval: 0.1)
        }
        let played = Date().timeIntervalSince(start)
        let after = try report(world)
        let active = try desktop.runXdotool(["getactivewindow"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(active == notes, "the window manager made \(active) active, not the notes (\(notes))")
        let counted = xstealSeconds(after) - xstealSeconds(before)
        #expect(counted > played - 3, "the game played by moving the mouse counted \(counted) s of \(played) s")
        // Still over it, not moving: counted no more once 3.5 s passed (2.5 s after the hearing,
        // back a second after the last move heard, finds it still there).
        Thread.sleep(forTimeInterval: 5)
        let still = try report(world)
        Thread.sleep(forTimeInterval: 4)
        let stillLater = try report(world)
        #expect(
            xstealSeconds(stillLater) - xstealSeconds(still) < 0.5,
            "the game under a pointer at rest counted \(xstealSeconds(stillLater) - xstealSeconds(still)) s of 4 s")
        // Bursts: a second of moves, then 1.7 s still, four times; then 3.5 s still, three times
        // (a second's burst is over before the hearing is back: one move heard in each).
        for (still, rounds, least) in [(1.7, 4, 4.0), (3.5, 3, 8.5)] {
            let bursting = try report(world)
            let burstStart = Date()
            for _ in 0..<rounds {
                let burst = Date()
                var step = 0
                while Date() < burst.addingTimeInterval(1) {
                    let (dx, dy) = [(8, 0), (0, 8), (-8, 0), (0, -8)][step % 4]
                    step += 1
                    _ = try desktop.runXdotool(["mousemove_relative", "--", "\(dx)", "\(dy)"])
                    Thread.sleep(forTimeInterval: 0.05)
                }
                Thread.sleep(forTimeInterval: still)
            }
            let burstTime = Date().timeIntervalSince(burstStart)
            let burstCount = xstealSeconds(try report(world)) - xstealSeconds(bursting)
            #expect(
                burstCount > burstTime - least,
                "the game played in bursts with \(still) s still counted \(burstCount) s of \(burstTime) s")
        }
        // Passing over it now and then: across it and back onto the notes, every 5 s.
        _ = try desktop.runXdotool(["mousemove", "--window", notes, "10", "10"])
        Thread.sleep(forTimeInterval: 5)
        let passing = try report(world)
        for _ in 0..<3 {
            _ = try desktop.runXdotool(["mousemove", "--window", window, "40", "40", "mousemove_relative", "2", "2"])
            Thread.sleep(forTimeInterval: 0.2)
            _ = try desktop.runXdotool(["mousemove", "--window", notes, "10", "10", "mousemove_relative", "1", "1"])
            Thread.sleep(forTimeInterval: 5)
        }
        let passed = try report(world)
        #expect(
            xstealSeconds(passed) - xstealSeconds(passing) < 0.5,
            "passing over the game counted \(xstealSeconds(passed) - xstealSeconds(passing)) s")
        #expect(seconds(passed, "org.example.Notes") - seconds(passing, "org.example.Notes") > 12)
    }

    /// Her game in a window over everything that lets every click through (its input shape
    /// empty), the clicks landing on her notes below: what shows where she clicks counts.
    @Test func aWindowClicksGoThroughCountsWhereItShows() throws {
        let world = try world()
        defer { world.tearDown() }
        let game = try world.compile("xsteal", libraries: ["xcb", "xcb-shape"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        let notes = try #require(desktop.window("XMessage"))
        try desktop.open(as: world.child, game, ["30", "see-through"])
        Thread.sleep(forTimeInterval: 1.5)
        let before = try report(world)
        let played = try clickFor(6, on: notes, at: (20, 20), desktop)
        let after = try report(world)
        let counted = xstealSeconds(after) - xstealSeconds(before)
        #expect(counted > played - 2, "the game over her notes counted \(counted) s of \(played) s")
    }

    /// Her display listening on TCP (`Xvfb -listen tcp`) and her terminal connected there
    /// (`DISPLAY=127.0.0.1:N`): the server cannot name that client's process, and the kernel's table
    /// of the server's connections does, so the terminal counts as itself (before: only as an
    /// unidentified program).
    @Test func aProgramConnectedOverTCPCountsAsItself() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child, serverArguments: ["-listen", "tcp"])
        defer { desktop.stop() }
        try openNotes(on: &desktop, world)
        try desktop.open(
            as: world.child, "/usr/bin/env",
            [
                "DISPLAY=127.0.0.1:\(desktop.display)", "/usr/bin/xterm", "-class", "ChildTerm", "-e", "/bin/sleep",
                "600",
            ])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil }, "her terminal over TCP did not show")
        let terminal = try secondsInFront(world, desktop, "ChildTerm", "org.example.Terminal", for: 5)
        #expect(terminal > 4, "her terminal connected over TCP counted \(terminal) s of 5 s")
    }

    /// How much of `duration` seconds with the window of `windowClass` in front `application` got.
    func secondsInFront(
        _ world: AgentWorld, _ desktop: XDesktop, _ windowClass: String, _ application: String, for duration: Double
    ) throws -> Double {
        try desktop.activate(windowClass)
        Thread.sleep(forTimeInterval: 1)
        let before = try report(world)
        Thread.sleep(forTimeInterval: duration)
        let after = try report(world)
        return seconds(after, application) - seconds(before, application)
    }

    /// Her own X server on an abstract socket only (`Xvfb -nolisten unix`; on a real PC `startx --
    /// :1 -nolisten unix`): the agent tried only `/tmp/.X11-unix/XN`, and 85 s of play counted 0 s
    /// against a one-minute limit (restrictions, second round). It connects to the abstract name
    /// too (asking the kernel who serves it), and her terminal there counts.
    @Test func herDisplayOnAnAbstractSocketOnlyIsRead() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child, serverArguments: ["-nolisten", "unix"])
        defer { desktop.stop() }
        #expect(!Files.exists("/tmp/.X11-unix/X\(desktop.display)"), "the server made its socket file after all")
        try openNotes(on: &desktop, world)
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil }, "her terminal did not show")
        let terminal = try secondsInFront(world, desktop, "ChildTerm", "org.example.Terminal", for: 5)
        #expect(terminal > 4, "her terminal on a display with only an abstract socket counted \(terminal) s of 5 s")
    }

    /// Her own X server over TCP alone (third attack: `Xvfb :N -listen tcp -nolisten unix
    /// -nolisten local`, her programs told `DISPLAY=127.0.0.1:N`): no session was ever found, and
    /// 349 s of play counted 0 s. A display named with a host that is this machine is read over
    /// TCP (port 6000 + N, its server the process holding the listening socket, from the
    /// kernel's table), and her terminal there counts (the server cannot name a TCP client's process:
    /// every program of hers connected to it over TCP counts).
    @Test(arguments: ["127.0.0.1", "localhost"])
    func herDisplayOverTCPAloneIsRead(host: String) throws {
        let world = try world()
        defer { world.tearDown() }
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        var number = XDesktop.freeNumber(in: 300...900)
        while (try? run("/bin/sh", ["-c", "ss -ltn | grep -q ':\(6000 + number)\\b'"]))?.status == 0 {
            number = XDesktop.freeNumber(in: 300...900)
        }
        let server = try world.launch(
            as: world.child, "/usr/bin/Xvfb",
            [
                ":\(number)", "-screen", "0", "800x600x24", "-listen", "tcp", "-nolisten", "unix", "-nolisten", "local",
                "-noreset",
            ])
        defer {
            kill(server, SIGTERM)
            _ = world.wait(server, seconds: 5)
        }
        #expect(
            eventually(20) {
                (try? run("/bin/sh", ["-c", "ss -ltn | grep -q ':\(6000 + number)\\b'"]))?.status == 0
            }, "her server never listened on TCP")
        #expect(!Files.exists("/tmp/.X11-unix/X\(number)"), "her server made its socket file after all")
        let before = try report(world)
        let terminal = try world.launch(
            as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"],
            environment: ["DISPLAY=\(host):\(number)"])
        func session() -> SessionReport? {
            (try? world.status(of: world.child).sessions?.first { $0.display == "localhost:\(number)" }) ?? nil
        }
        #expect(
            try eventually(20) {
                seconds(try report(world), "org.example.Terminal") > seconds(before, "org.example.Terminal")
            }, "her terminal never counted: \(String(describing: try? world.status(of: world.child).sessions))")
        #expect(session()?.problem == nil, "\(String(describing: session()))")
        let counting = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 5)
        let counted = seconds(try report(world), "org.example.Terminal") - seconds(counting, "org.example.Terminal")
        let shown = Date().timeIntervalSince(start)
        #expect(counted > shown - 1.5, "her terminal over TCP counted \(counted) s of \(shown) s")
        kill(terminal, SIGKILL)
    }

    /// A display the agent cannot read at all (restrictions, second round): her own server on an
    /// abstract socket that no program of hers names, and a socket of hers in /tmp/.X11-unix that
    /// passes her programs' connections on to it and closes the agent's. The session said why
    /// and counted nothing. It is counted the conservative way: every program of hers connected
    /// to it is in use, from when it connects until it goes. The third attack's ways: the
    /// listener made by a process that then ends (`--ghost`: the kernel names a pid gone as its
    /// server), or that stays having closed its copy (`--holder`): counted all the same, from
    /// the connections accepted at the display's address, whoever holds them.
    @Test(arguments: ["", "--ghost", "--holder"])
    func aDisplayTheAgentCannotReadCountsEveryProgramConnectedToIt(listener: String) throws {
        let world = try world()
        defer { world.tearDown() }
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        let hidden = XDesktop.freeNumber(in: 8000...8900)
        var shown = XDesktop.freeNumber(in: 8000...8900)
        while shown == hidden { shown = XDesktop.freeNumber(in: 8000...8900) }
        let gate = "/tmp/.X11-unix/X\(shown)"
        defer { unlink(gate) }
        let server = try world.launch(
            as: world.child, "/usr/bin/Xvfb",
            [":\(hidden)", "-screen", "0", "800x600x24", "-nolisten", "tcp", "-nolisten", "unix", "-noreset"])
        defer {
            kill(server, SIGTERM)
            _ = world.wait(server, seconds: 5)
        }
        let abstract = "@/tmp/.X11-unix/X\(hidden)"
        // Read whole: Foundation's `String(contentsOfFile:)` stops at the first 4 KiB of a file
        // the kernel makes as it is read, and the machine's sockets fill more while tests run.
        #expect(
            eventually(20) {
                String(decoding: (try? Files.read("/proc/net/unix")) ?? [], as: UTF8.self).contains(abstract)
            }, "her server never listened")
        _ = try world.launch(
            as: world.child, "/usr/bin/python3",
            [AgentWorld.fixture("display-relay.py"), gate, abstract, "--refuse-root"]
                + (listener.isEmpty ? [] : [listener]))
        #expect(eventually { Files.exists(gate) })
        let before = try report(world)
        let terminal = try world.launch(
            as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"],
            environment: ["DISPLAY=:\(shown)"])
        func session() -> SessionReport? {
            (try? world.status(of: world.child).sessions?.first { $0.display == ":\(shown)" }) ?? nil
        }
        #expect(
            eventually(20) {
                session()?.problem?.contains("every program of the user's connected to it counts") == true
            },
            "\(String(describing: session()))")
        #expect(
            try eventually(15) {
                seconds(try report(world), "org.example.Terminal") > seconds(before, "org.example.Terminal")
            },
            "her terminal never counted: \(String(describing: session()))")
        let counting = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 5)
        kill(terminal, SIGKILL)
        _ = world.wait(terminal, seconds: 5)
        let gone = Date()
        // Connections are looked at every 3 s or less: a program gone is seen gone at the next look.
        Thread.sleep(until: gone.addingTimeInterval(5))
        let after = try report(world)
        let counted = seconds(after, "org.example.Terminal") - seconds(counting, "org.example.Terminal")
        let shownFor = gone.timeIntervalSince(start)
        #expect(
            counted > shownFor - 1.5 && counted < shownFor + 3.5,
            "her terminal on a display the agent cannot read counted \(counted) s of \(shownFor) s")
        // Nothing else of hers counted: no other program was connected to it.
        #expect(
            after.applications.allSatisfy { $0.id == "org.example.Terminal" }, "\(after.applications.map(\.id))")
    }

    /// A display with two screens (each its own root window and windows; her window manager on the
    /// first only), her programs naming the first: the second is found and read too, and her
    /// terminal there counts beside the notes active on the first.
    @Test func everyScreenOfADisplayIsReadAsASessionOfItsOwn() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child, serverArguments: ["-screen", "1", "640x480x24"])
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        #expect(eventually(30) { desktop.window("XMessage") != nil })
        try desktop.activate("XMessage")
        let screens = [":\(desktop.display)", ":\(desktop.display).1"]
        let found = try eventually { try world.status(of: world.child).sessions?.map(\.display).sorted() == screens }
        #expect(found, "the sessions: \((try? world.status(of: world.child).sessions?.map(\.display)) ?? [])")
        let before = try report(world)
        try desktop.open(
            as: world.child, "/usr/bin/xterm",
            ["-display", ":\(desktop.display).1", "-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        let start = Date()
        Thread.sleep(forTimeInterval: 6)
        let after = try report(world)
        let shown = Date().timeIntervalSince(start)
        let terminal = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        #expect(terminal > shown - 2.5, "her terminal on the second screen counted \(terminal) s of \(shown) s")
        let notes = seconds(after, "org.example.Notes") - seconds(before, "org.example.Notes")
        #expect(notes > shown - 1, "the notes on the first counted \(notes) s of \(shown) s")
    }

    /// A display of her own making (a socket of hers in /tmp/.X11-unix that passes each connection
    /// on to the real display): the server knows only her relay as the client of her terminal's
    /// window, and the terminal, connected through the relay, counts.
    @Test func programsDrawingThroughARelayOfHersCount() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        // A number of a range no other test's display takes (the relay replaces what is there;
        // her socket goes with the world's tear-down).
        let relayed = XDesktop.freeNumber(in: 8000...8900)
        let relay = "/tmp/.X11-unix/X\(relayed)"
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        try desktop.open(
            as: world.child, "/usr/bin/python3",
            [AgentWorld.fixture("display-relay.py"), relay, "/tmp/.X11-unix/X\(desktop.display)"])
        #expect(eventually { Files.exists(relay) })
        try desktop.open(
            as: world.child, "/usr/bin/xterm",
            ["-display", ":\(relayed)", "-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil && desktop.window("XMessage") != nil })
        try desktop.activate("ChildTerm")
        #expect(try eventually { try world.status(of: world.child).sessions?.isEmpty == false })
        let before = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 6)
        let after = try report(world)
        let shown = Date().timeIntervalSince(start)
        let terminal = seconds(after, "org.example.Terminal") - seconds(before, "org.example.Terminal")
        #expect(terminal > shown - 1.5, "the terminal drawing through her relay counted \(terminal) s of \(shown) s")
        let notes = seconds(after, "org.example.Notes") - seconds(before, "org.example.Notes")
        #expect(notes < 0.5, "the notes behind counted \(notes) s")
    }

    /// A window she fills with hundreds of unmapped windows of another client's before moving her
    /// game inside it: what shows inside still counts (every client of the display, when there
    /// is more inside than the agent looks at), and still when no window is active.
    @Test func aWindowFilledWithDecoysStillShowsWhatIsInside() throws {
        let world = try world()
        defer { world.tearDown() }
        let decoys = try world.compile("xdecoys", libraries: ["xcb"])
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "a game, in disguise"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil && desktop.window("XMessage") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        let game = try #require(desktop.window("XMessage"))
        let terminal = try #require(desktop.window("ChildTerm"))
        try desktop.open(as: world.child, decoys, [terminal, "300"])
        Thread.sleep(forTimeInterval: 1)
        #expect(try desktop.moveInside(game, terminal), "the game never showed inside the terminal")
        try desktop.activate("ChildTerm")
        let before = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 5)
        let after = try report(world)
        let inFront = Date().timeIntervalSince(start)
        let counted = seconds(after, "org.example.Notes") - seconds(before, "org.example.Notes")
        #expect(counted > inFront - 1.5, "the game inside, behind 300 decoys, counted \(counted) s of \(inFront) s")

        // No window active (her own client says so): every mapped window counts, and what
        // shows inside one too.
        let cleared = try world.inNetwork(
            as: world.child, "/usr/bin/env",
            [
                "DISPLAY=:\(desktop.display)", "/usr/bin/xprop", "-root", "-f", "_NET_ACTIVE_WINDOW", "32x", "-set",
                "_NET_ACTIVE_WINDOW", "0x0",
            ])
        #expect(cleared.status == 0, "\(cleared.stderr)")
        Thread.sleep(forTimeInterval: 1)
        let second = try report(world)
        Thread.sleep(forTimeInterval: 4)
        let third = try report(world)
        let inside = seconds(third, "org.example.Notes") - seconds(second, "org.example.Notes")
        #expect(inside > 3, "the game inside, no window active, counted \(inside) s of 4 s")
    }

    /// logind (a mock of it on a bus of the test's own, as no logind runs here) names a display
    /// no program of the child's names, and its lock, seat and idle hints stop the clock.
    @Test func logindNamesTheSessionAndItsLockSeatAndIdleHintsStopTheClock() throws {
        let bus = try LogindMock()
        defer { bus.stop() }
        let world = try world(configuration: ["logindBus": "\"\(bus.address)\""])
        defer { world.tearDown() }
        // The child's display, root's server (as a display manager's: one of the child's own
        // would be found from its socket), its window manager the bystander's: no program of the
        // child's has DISPLAY in its environment (the notes are told their display by argument; a
        // terminal would set DISPLAY for the program it runs).
        let desktop = try XDesktop(
            world: world, user: "root", serverArguments: ["-ac"], windowManager: world.bystander)
        defer { desktop.stop() }
        let notes = try world.launch(
            as: world.child, "/usr/bin/xmessage", ["-display", ":\(desktop.display)", "-name", "notes", "homework"],
            environment: ["HOME=/tmp"])
        // Up to 30 s for the window: a fresh run, other desktop tests beside it on two busy
        // cores, once took longer than 10 s to show it (not what this test is about).
        #expect(eventually(30) { desktop.window("XMessage") != nil })
        try desktop.activate("XMessage")
        Thread.sleep(forTimeInterval: 1)
        #expect(try world.status(of: world.child).sessions?.isEmpty == true, "found before logind told")

        let uid = try UserDirectory().user(world.child).uid
        try bus.addSession("c7", uid: uid, name: world.child, display: ":\(desktop.display)", leader: notes)
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Notes" })
        let source = try world.status(of: world.child).sessions?.first?.focusSource ?? ""
        #expect(source.contains("logind (session c7)"), "\(source)")
        let start = Date()
        let before = seconds(try report(world), "org.example.Notes")
        Thread.sleep(until: start.addingTimeInterval(3))

        // Locked: nothing counts, though the notes stay in front.
        try bus.update("c7", ["LockedHint": "True"])
        let locked = Date()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.held == "locked (logind)" })
        Thread.sleep(until: locked.addingTimeInterval(3))
        try bus.update("c7", ["LockedHint": "False"])
        let unlocked = Date()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.held == nil })
        Thread.sleep(until: unlocked.addingTimeInterval(2))

        // Another user's session brought to the seat: this one is not active, and counts nothing.
        try bus.update("c7", ["Active": "False"])
        let away = Date()
        #expect(
            try eventually {
                try world.status(of: world.child).sessions?.first?.held?.contains("not the active session") == true
            })
        Thread.sleep(until: away.addingTimeInterval(2))
        try bus.update("c7", ["Active": "True"])
        let back = Date()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.held == nil })
        Thread.sleep(until: back.addingTimeInterval(3))
        // Idle as the desktop told logind, since a second ago: the clock stops back then.
        try bus.update("c7", ["IdleHint": "True", "IdleSinceHintMonotonic": "monotonic(-1)"])
        let idle = Date()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.held == "idle (logind)" })
        Thread.sleep(until: idle.addingTimeInterval(2))
        let usage = try report(world)
        let counted = seconds(usage, "org.example.Notes") - before
        let expected =
            locked.timeIntervalSince(start) + away.timeIntervalSince(unlocked) + idle.timeIntervalSince(back) - 1
        #expect(abs(counted - expected) < 1.5, "counted \(counted) s, expected \(expected) s")

        // The session ended in logind: its hints no longer hold the clock.
        try bus.removeSession("c7")
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.held == nil })
        #expect(try world.status(of: world.child).sessions?.first?.focusSource.contains("logind") == false)
    }

    /// A compositor the agent cannot read focus from (weston here; GNOME's and KDE's alike):
    /// every app connected to it counts, so such a desktop never means free time; the
    /// compositor's own helpers do not count; an app that quits stops counting.
    /// KWin's socket file renamed before any client (its listening socket keeps the name it was
    /// bound by), her apps told the new name: they are still found, by the file's inode. Once,
    /// nothing was counted at all.
    @Test func aCompositorWhoseSocketWasRenamedStillCountsItsClients() throws {
        let world = try world()
        defer { world.tearDown() }
        let desktop = try KWinDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        let moved = try world.command(
            as: world.child, "/bin/mv", [desktop.runtime + "/wayland-kw", desktop.runtime + "/wayland-mv"])
        #expect(moved.status == 0, "\(moved.stderr)")
        let shm = try world.launch(
            as: world.child, "/usr/bin/weston-simple-shm", [],
            environment: [
                "XDG_RUNTIME_DIR=\(desktop.runtime)", "WAYLAND_DISPLAY=wayland-mv", "HOME=\(desktop.runtime)",
            ])
        defer { kill(shm, SIGKILL) }
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.first?.kind == .wayland })
        Thread.sleep(forTimeInterval: 3)
        let before = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 4)
        let counted = seconds(try report(world), "org.example.Shm") - seconds(before, "org.example.Shm")
        #expect(
            counted > Date().timeIntervalSince(start) - 1.5,
            "Shm on the renamed socket: \(counted) s; \(String(describing: try? world.status(of: world.child).sessions))"
        )
    }

    @Test func aCompositorWhoseFocusCannotBeReadCountsEveryConnectedApp() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try WestonDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/weston-simple-shm", [])
        let painter = try desktop.open(as: world.child, world.directory + "/bin/paint", [])
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.kind == .wayland })
        let session = try #require(try world.status(of: world.child).sessions?.first)
        #expect(session.focusSource.contains("whose focus cannot be read"), "\(session.focusSource)")
        // Counting starts once the session is found and its clients looked for (soon after each
        // program the child starts, and every 3 s: a client slow to connect, on a loaded machine,
        // is found at the next look): measured from when both count.
        #expect(
            try eventually(15) {
                let usage = try report(world)
                return seconds(usage, "org.example.Shm") > 0 && seconds(usage, "org.example.Paint") > 0
            }, "both apps never counted")
        let before = try report(world)
        let start = Date()
        Thread.sleep(forTimeInterval: 5)
        kill(painter, SIGKILL)
        _ = world.wait(painter, seconds: 5)
        let painted = Date()
        Thread.sleep(until: painted.addingTimeInterval(5))
        let end = Date()
        let usage = try report(world)
        let shm = seconds(usage, "org.example.Shm") - seconds(before, "org.example.Shm")
        let paintSeconds = seconds(usage, "org.example.Paint") - seconds(before, "org.example.Paint")
        // An app that quit is seen gone at the next look (every 3 s).
        #expect(shm > end.timeIntervalSince(start) - 1.5 && shm < end.timeIntervalSince(start) + 0.5, "shm \(shm) s")
        #expect(
            paintSeconds > painted.timeIntervalSince(start) - 1.5
                && paintSeconds < painted.timeIntervalSince(start) + 3.5, "paint \(paintSeconds) s")
        // weston's keyboard and shell (under /usr/lib) are not apps.
        #expect(usage.applications.allSatisfy { ["org.example.Shm", "org.example.Paint"].contains($0.id) }, "\(usage)")
        #expect(abs(usage.totalSeconds - before.totalSeconds - shm) < 0.5)
    }

    /// GNOME Shell (headless, run by the child, on a logind of the test's own) with the
    /// screentime-focus extension: the window in front counts, not every connected app; a
    /// program of the child's writing focus lines to the agent is not the compositor and is not
    /// listened to; the window in front closed counts no more.
    @Test func gnomeShellsExtensionTellsTheWindowInFront() throws {
        let world = try world()
        defer { world.tearDown() }
        let logind = try LogindMock()
        defer { logind.stop() }
        var desktop = try GnomeDesktop(world: world, user: world.child, systemBus: logind.address)
        defer { desktop.stop() }
        let shm = try desktop.open(as: world.child, "/usr/bin/weston-simple-shm", [])
        let paint = try desktop.open(as: world.child, world.directory + "/bin/paint", [])
        func inFront() -> String? { (try? world.status(of: world.child).sessions?.first)??.inFrontName }
        // The extension's word believed (not every connected app counting, when `status` names
        // the first of them), and the same window still in front 2 s later: mutter may give the
        // focus to a window mapped late.
        func told() -> String? {
            guard let session = (try? world.status(of: world.child).sessions?.first) ?? nil,
                session.focusSource.contains("screentime-focus"),
                !session.focusSource.contains("now every connected app counts")
            else { return nil }
            return session.inFrontName
        }
        // A process of hers with no window, which her own program says is in front below.
        let sleeper = try world.launch(as: world.child, "/bin/sleep", ["600"])
        defer { kill(sleeper, SIGKILL) }
        // The name is kept as it was seen: a third `status` asked of a busy machine may time out.
        var seen: String?
        var first = ""
        // Up to three tries: on a loaded machine mutter may give the focus to a window mapped
        // late, after the first was picked (CI-like fresh run, 2026-12-03: the other window told
        // in front from 0.13 s into the measured 4.2 s). Such a try, told so by the extension at
        // its end, is measured again; a try in which the lie was believed is not one of them (the
        // agent would then name neither window).
        for attempt in 1...3 {
            seen = nil
            #expect(
                eventually(30) {
                    guard let name = told(), ["Shm", "Paint"].contains(name) else { return false }
                    Thread.sleep(forTimeInterval: 2)
                    seen = name
                    return told() == name
                },
                "\(String(describing: try? world.status(of: world.child).sessions))\ngnome-shell's log: \(desktop.log)")
            // Both connected, one in front.
            first = try #require(seen)
            let before = try report(world)
            let start = Date()
            // The child's own program says her windowless process is in front: it is not the
            // compositor.
            let liar = try world.launch(
                as: world.child, "/usr/bin/python3",
                [
                    "-c",
                    "import socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                        + "for _ in range(40):\n    s.sendall(b'{\"focus\": {\"pid\": ' + sys.argv[2].encode() + b'}}\\n')\n"
                        + "    time.sleep(0.1)\n",
                    world.directory + "/focus.socket", "\(sleeper)",
                ])
            Thread.sleep(forTimeInterval: 4)
            kill(liar, SIGKILL)
            let both = try report(world)
            let elapsed = Date().timeIntervalSince(start)
            let other = first == "Shm" ? "Paint" : "Shm"
            if attempt < 3, told() == other { continue }
            let firstSeconds = seconds(both, "org.example.\(first)") - seconds(before, "org.example.\(first)")
            let otherSeconds = seconds(both, "org.example.\(other)") - seconds(before, "org.example.\(other)")
            #expect(firstSeconds > elapsed - 1.5, "\(first) in front: \(firstSeconds) s of \(elapsed) s")
            #expect(otherSeconds < 0.5, "the other, connected, not in front: \(otherSeconds) s")
            break
        }
        let firstID = "org.example.\(first)"
        // The window in front closed: it counts no more (the shell then tells whichever window
        // it gives the focus, if any).
        kill(first == "Shm" ? shm : paint, SIGKILL)
        #expect(eventually(10) { inFront() != first }, "\(String(describing: inFront()))")
        let closed = try report(world)
        Thread.sleep(forTimeInterval: 2)
        #expect(seconds(try report(world), firstID) - seconds(closed, firstID) < 0.5)
    }

    /// KWin's screentime-focus script, through the agent's relay on the session bus: the window in
    /// front counts, not every connected app; a program of the child's calling the relay is not
    /// the compositor and is not listened to; the relay killed and its name taken, the session
    /// counts every app until the relay is back, and then the window brought to the front counts.
    func kwinsScriptTellsTheWindowInFrontThroughTheRelay() throws {
        let world = try world()
        defer { world.tearDown() }
        // A program KWin itself starts (its child, as a compositor of the child's choosing could
        // start any): once told, it calls the relay naming whatever pid it is given.
        let liarScript = world.directory + "/kwin-child-liar.py"
        let trigger = world.directory + "/kwin-child-liar.pid"
        let liarSource = """
            import dbus, os, time
            while not os.path.exists('\(trigger)'):
                time.sleep(0.1)
            pid = open('\(trigger)').read().strip()
            bus = dbus.SessionBus()
            focus = bus.get_object('org.screentime.Focus', '/org/screentime/Focus')
            for _ in range(40):
                try:
                    focus.Activated(pid, dbus_interface='org.screentime.Focus')
                except dbus.DBusException:
                    pass  # the relay killed later in the test: KWin must not end with this program
                time.sleep(0.1)
            time.sleep(3600)

            """
        try Files.writeAtomically(Array(liarSource.utf8), to: liarScript, mode: 0o644)
        var desktop = try KWinDesktop(
            world: world, user: world.child, sessionProgram: "/usr/bin/python3 \(liarScript)")
        defer { desktop.stop() }
        func session() -> SessionReport? { (try? world.status(of: world.child).sessions?.first) ?? nil }
        let shm = try desktop.open(as: world.child, "/usr/bin/weston-simple-shm", [])
        // The session found, its relay started: the next window KWin activates is told.
        #expect(
            eventually(30) { world.agentLog(naming: ["a focus relay serves"]).isEmpty == false },
            "\(String(describing: session())) \(world.agentLog())")
        let paint = try desktop.open(as: world.child, world.directory + "/bin/paint", [])
        // Brought to the front (again, until its window is there to be).
        // KWin may give the focus back: in front still after the script's next word (every 5 s).
        func staysInFront(_ name: String) -> Bool {
            guard session()?.focusSource.contains("relayed") == true, session()?.inFrontName == name else {
                return false
            }
            Thread.sleep(forTimeInterval: 5.5)
            return session()?.inFrontName == name
        }
        #expect(
            eventually(40) {
                try? desktop.activate(pid: paint, as: world.child)
                Thread.sleep(forTimeInterval: 0.3)
                return staysInFront("Paint")
            },
            "\(String(describing: session())) \(world.agentLog()) kwin: \(desktop.log())")
        // Idle is KWin's to tell, over its Wayland socket (ext_idle_notifier_v1).
        #expect(eventually(5) { session()?.focusSource.contains("idle from the compositor") == true })
        let before = try report(world)
        let start = Date()
        // The child's own program tells the relay that Shm is in front: not the compositor.
        let liar = try world.launch(
            as: world.child, "/bin/sh",
            [
                "-c",
                "for i in $(seq 10); do gdbus call --session --dest org.screentime.Focus --object-path "
                    + "/org/screentime/Focus --method org.screentime.Focus.Activated \(shm) >/dev/null; sleep 0.4; done",
            ],
            environment: ["DBUS_SESSION_BUS_ADDRESS=\(desktop.bus)", "PATH=/usr/bin:/bin"])
        _ = world.wait(liar, seconds: 20)
        // And KWin's own child says so: not the compositor either.
        try Files.writeAtomically(Array("\(shm)".utf8), to: trigger, mode: 0o644)
        Thread.sleep(forTimeInterval: 5)
        let both = try report(world)
        let elapsed = Date().timeIntervalSince(start)
        let paintSeconds = seconds(both, "org.example.Paint") - seconds(before, "org.example.Paint")
        let shmSeconds = seconds(both, "org.example.Shm") - seconds(before, "org.example.Shm")
        #expect(paintSeconds > elapsed - 1.5, "Paint in front: \(paintSeconds) s of \(elapsed) s")
        #expect(shmSeconds < 0.5, "Shm, connected, named by the child's program: \(shmSeconds) s")
        let ignored = world.agentLog(naming: ["not from the compositor was ignored"])
        let kwinChild =
            (try run("/usr/bin/pgrep", ["-u", world.child, "-f", "^/usr/bin/python3 .*kwin-child-liar"])).stdout
            .split(separator: "\n").first.map(String.init) ?? "?"
        #expect(!ignored.isEmpty)
        #expect(
            try run("/bin/sh", ["-c", "grep -q '^PPid:\t\(desktop.compositor ?? 0)$' /proc/\(kwinChild)/status"]).status
                == 0,
            "the liar is KWin's child")
        #expect(
            world.agentLog(naming: ["caller=pid \(kwinChild) "]).isEmpty == false,
            "KWin's child (pid \(kwinChild)): \(ignored) kwin: \(desktop.log())")
        // The relay killed (it is the child's process), and the name taken by a program of the
        // child's queued for it: every connected app counts until the squatter is gone and the
        // relay is back; then the window brought to the front is told.
        let squatter = try world.launch(
            as: world.child, "/usr/bin/python3",
            [
                "-c",
                "import dbus, time\nbus = dbus.SessionBus()\nbus.request_name('org.screentime.Focus', 0)\n"
                    + "time.sleep(120)\n",
            ],
            environment: ["DBUS_SESSION_BUS_ADDRESS=\(desktop.bus)"])
        Thread.sleep(forTimeInterval: 1)
        _ = try run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-f", "focus-relay"])
        #expect(eventually(10) { session()?.focusSource.contains("cannot be read") == true })
        #expect(
            eventually(15) { !world.agentLog(naming: ["org.screentime.Focus is taken"]).isEmpty },
            "\(world.agentLog(naming: ["relay"]))")
        kill(squatter, SIGKILL)
        _ = world.wait(squatter, seconds: 5)
        #expect(
            eventually(20) { world.agentLog(naming: ["a focus relay serves"]).split(separator: "\n").count >= 2 },
            "\(world.agentLog(naming: ["relay", "compositor"])) kwin: \(desktop.log())")
        #expect(
            eventually(15) {
                try? desktop.activate(pid: shm, as: world.child)
                Thread.sleep(forTimeInterval: 0.3)
                return session()?.focusSource.contains("relayed") == true && session()?.inFrontName == "Shm"
            },
            "\(String(describing: session()))")
        // The relay's pipe to the agent is not the child's to take (pidfd_getfd needs what a
        // tracer needs; the relay is not dumpable).
        let relay = try #require(
            (try run("/usr/bin/pgrep", ["-u", world.child, "-f", "focus-relay"])).stdout.split(separator: "\n").first
                .flatMap { Int32($0) })
        let taking = try world.command(
            as: world.child, "/usr/bin/python3",
            [
                "-c",
                "import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                    + "pidfd = libc.syscall(434, int(sys.argv[1]), 0)\n"
                    + "fd = libc.syscall(438, pidfd, 3, 0)\n"
                    + "print(fd, os.strerror(ctypes.get_errno()))\n",
                "\(relay)",
            ])
        #expect(taking.stdout.hasPrefix("-1 Operation not permitted"), "\(taking.stdout) \(taking.stderr)")
        // Stopped, it tells nothing while what it last told stands: ended and started again.
        let serving = world.agentLog(naming: ["a focus relay serves"]).split(separator: "\n").count
        kill(relay, SIGSTOP)
        #expect(eventually(10) { !world.agentLog(naming: ["KWin's focus relay was stopped"]).isEmpty })
        #expect(
            eventually(20) {
                world.agentLog(naming: ["a focus relay serves"]).split(separator: "\n").count > serving
            })

        // She replaces the screentime-focus script by her own, which names pid 1 (no window of
        // hers) every second: not a client of the compositor, so both connected apps count.
        #expect(
            eventually(15) {
                try? desktop.activate(pid: shm, as: world.child)
                Thread.sleep(forTimeInterval: 0.3)
                return session()?.inFrontName == "Shm"
            })
        try desktop.scripting(["unloadScript", "screentime-focus"], as: world.child)
        let liarName = try desktop.runScript(
            "var t = new QTimer(); t.interval = 1000; t.timeout.connect(function () { callDBus('org.screentime.Focus', "
                + "'/org/screentime/Focus', 'org.screentime.Focus', 'Activated', '1'); }); t.start();\n",
            as: world.child)
        Thread.sleep(forTimeInterval: 2)
        let lied = try report(world)
        Thread.sleep(forTimeInterval: 3)
        let afterLie = try report(world)
        for app in ["org.example.Paint", "org.example.Shm"] {
            #expect(seconds(afterLie, app) - seconds(lied, app) > 2, "\(app) counts while pid 1 is named")
        }
        // Hers unloaded, ours loaded again (as a guardian's login would).
        try desktop.scripting(["unloadScript", liarName], as: world.child)
        try desktop.scripting(
            ["loadScript", desktop.data + "/kwin/scripts/screentime-focus/contents/code/main.js", "screentime-focus"],
            as: world.child)
        try desktop.scripting(["start"], as: world.child)

        // Three more ways she tried, each once enough: a window whose connection another program
        // made and handed on (KWin names the one that connected); a flood of calls to the relay,
        // so that KWin's own call waited its turn; and, while every connected app counts, an app
        // run through the dynamic loader, whose program is in /usr/lib as the system's helpers are.
        do {
            // A cover connects and hands its connection to Paint (WAYLAND_SOCKET), keeping a copy:
            // KWin names the cover, and Paint, holding the same connection, counts with it.
            let cover = world.directory + "/cover.py"
            let coverSource = """
                import os, socket, sys, time
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(os.environ['XDG_RUNTIME_DIR'] + '/wayland-kw')
                os.set_inheritable(s.fileno(), True)
                if os.fork() == 0:
                    os.environ['WAYLAND_SOCKET'] = str(s.fileno())
                    os.execv(sys.argv[1], [sys.argv[1]])
                time.sleep(3600)

                """
            try Files.writeAtomically(Array(coverSource.utf8), to: cover, mode: 0o644)
            let coverPid = try desktop.open(
                as: world.child, "/usr/bin/python3", [cover, world.directory + "/bin/paint"])
            #expect(
                eventually(40) {
                    try? desktop.activate(pid: coverPid, as: world.child)
                    Thread.sleep(forTimeInterval: 0.3)
                    guard session()?.focusSource.contains("relayed") == true, session()?.inFrontName != "Shm" else {
                        return false
                    }
                    Thread.sleep(forTimeInterval: 5.5)
                    return session()?.inFrontName != "Shm"
                }, "\(String(describing: session()))")
            let before = try report(world)
            let start = Date()
            Thread.sleep(forTimeInterval: 4)
            let after = try report(world)
            let elapsed = Date().timeIntervalSince(start)
            let handedOn = seconds(after, "org.example.Paint") - seconds(before, "org.example.Paint")
            #expect(handedOn > elapsed - 1.5, "Paint on a handed-on connection: \(handedOn) s of \(elapsed) s")
            #expect(seconds(after, "org.example.Shm") - seconds(before, "org.example.Shm") < 0.5)

            // Her programs flood the relay naming the cover; KWin's call for Shm still gets through.
            let flood = """
                import dbus
                bus = dbus.SessionBus()
                focus = bus.get_object('org.screentime.Focus', '/org/screentime/Focus', introspect=False)
                call = focus.get_dbus_method('Activated', 'org.screentime.Focus')
                while True:
                    for i in range(2000):
                        call('\(coverPid)', ignore_reply=True)
                    bus.flush()

                """
            var flooders: [Int32] = []
            for _ in 0..<3 {
                flooders.append(
                    try world.launch(
                        as: world.child, "/usr/bin/python3", ["-c", flood],
                        environment: ["DBUS_SESSION_BUS_ADDRESS=\(desktop.bus)"]))
            }
            defer { for pid in flooders { kill(pid, SIGKILL) } }
            Thread.sleep(forTimeInterval: 3)
            try desktop.activate(pid: shm, as: world.child)
            #expect(eventually(5) { session()?.inFrontName == "Shm" }, "\(String(describing: session()))")
            for pid in flooders { kill(pid, SIGKILL) }

            // Paint run through the dynamic loader: its program is in /usr/lib, as the system's
            // helpers' are (counted below, once every connected app counts).
            _ = try run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-f", "cover.py"])
            kill(paint, SIGKILL)
            _ = try desktop.open(as: world.child, "/lib64/ld-linux-x86-64.so.2", [world.directory + "/bin/paint"])
        }

        // Shm told in front, then she unloads the screentime-focus script: its word stands 15 s
        // at most (it says it every 5 s), then every connected app counts again, Paint run by
        // the loader too.
        #expect(
            eventually(40) {
                try? desktop.activate(pid: shm, as: world.child)
                Thread.sleep(forTimeInterval: 0.3)
                return staysInFront("Shm")
            })
        // Told again and again while it runs: still Shm after longer than a word stands.
        Thread.sleep(forTimeInterval: 17)
        #expect(session()?.inFrontName == "Shm", "\(String(describing: session()))")
        #expect(world.agentLog(naming: ["has not told its focus"]).isEmpty)
        #expect(session()?.focusSource.contains("no word of a window in front stands") == false)
        try desktop.scripting(["unloadScript", "screentime-focus"], as: world.child)
        #expect(
            eventually(25) { !world.agentLog(naming: ["has not told its focus"]).isEmpty },
            "\(world.agentLog(naming: ["relay", "focus"]))")
        // And `status` says so.
        #expect(
            eventually(5) { session()?.focusSource.contains("no word of a window in front stands") == true },
            "\(String(describing: session()))")
        let unloaded = try report(world)
        Thread.sleep(forTimeInterval: 3)
        let afterUnload = try report(world)
        for app in ["org.example.Paint", "org.example.Shm"] {
            #expect(seconds(afterUnload, app) - seconds(unloaded, app) > 2, "\(app) counts once the script is gone")
        }
    }

    /// GNOME Shell's extension tells idle too (mutter's idle monitor, at the agent's timeout):
    /// no input, and the clock stops.
    @Test func gnomeShellsExtensionTellsIdle() throws {
        let world = try world(idleTimeout: 2)
        defer { world.tearDown() }
        let logind = try LogindMock()
        defer { logind.stop() }
        var desktop = try GnomeDesktop(world: world, user: world.child, systemBus: logind.address)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/weston-simple-shm", [])
        #expect(
            try eventually(30) {
                let session = try world.status(of: world.child).sessions?.first
                return session?.focusSource.contains("screentime-focus") == true && session?.idle == true
            }, "\(String(describing: try? world.status(of: world.child).sessions))")
        let idle = seconds(try report(world), "org.example.Shm")
        Thread.sleep(forTimeInterval: 3)
        #expect(seconds(try report(world), "org.example.Shm") == idle, "no time counts while idle")
    }

    @Test func aSwaySessionCountsTheFocusedWaylandWindow() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try SwayDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/foot", ["--app-id=term", "/bin/sleep", "600"])
        try desktop.open(as: world.child, world.directory + "/bin/chat", ["--app-id=chat", "/bin/sleep", "600"])
        // Foot again, claiming (as GNOME's launcher would say) to be Chat's desktop file.
        try desktop.open(
            as: world.child, "/usr/bin/foot", ["--app-id=forged", "/bin/sleep", "600"],
            environment: ["GIO_LAUNCHED_DESKTOP_FILE=\(world.directory)/data/applications/org.example.Chat.desktop"])
        #expect(
            eventually(30) { desktop.hasWindow("term") && desktop.hasWindow("chat") && desktop.hasWindow("forged") })
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.kind == .sway })

        try desktop.focus("term")
        let termStart = Date()
        // What the windows had while they opened (each new one takes the focus) is counted too:
        // the figures below are from here on.
        let before = try report(world)
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Foot" })
        Thread.sleep(until: termStart.addingTimeInterval(8))
        try desktop.focus("chat")
        let chatStart = Date()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Chat" })
        Thread.sleep(until: chatStart.addingTimeInterval(4))
        // What could be either counts for both: claiming another app's desktop file moves no time.
        try desktop.focus("forged")
        let forgedStart = Date()
        Thread.sleep(until: forgedStart.addingTimeInterval(3))
        // The windows closed: nothing in front.
        desktop.stop()
        let end = Date()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFront == nil })
        let usage = try report(world)
        let foot = seconds(usage, "org.example.Foot") - seconds(before, "org.example.Foot")
        let chat = seconds(usage, "org.example.Chat") - seconds(before, "org.example.Chat")
        let forged = end.timeIntervalSince(forgedStart)
        #expect(abs(foot - chatStart.timeIntervalSince(termStart) - forged) < 1.5, "foot counted \(foot) s")
        #expect(abs(chat - forgedStart.timeIntervalSince(chatStart) - forged) < 1.5, "chat counted \(chat) s")
        let total = usage.totalSeconds - before.totalSeconds
        #expect(abs(total - end.timeIntervalSince(termStart)) < 1.5, "total \(total) s")
    }

    @Test func aSwaySessionGoesIdleAsTheCompositorSays() throws {
        let world = try world(idleTimeout: 2)
        defer { world.tearDown() }
        var desktop = try SwayDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/foot", ["--app-id=term", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.hasWindow("term") })
        #expect(
            try eventually {
                try world.status(of: world.child).sessions?.first?.focusSource.contains("idle from the compositor")
                    == true
            })
        // No input device, no input: idle after 2 s, and what counted stops at the last input.
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.idle == true })
        let idle = seconds(try report(world), "org.example.Foot")
        Thread.sleep(forTimeInterval: 3)
        #expect(seconds(try report(world), "org.example.Foot") == idle)
        // Input again (the seat's cursor moved): the clock runs.
        _ = try desktop.swaymsg(["seat", "seat0", "cursor", "move", "10", "10"])
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.idle == false })
    }

    /// The child's client takes every client slot of the display and closes the agent's
    /// connection whenever it has one: the agent cannot read the display, and counts it as in use.
    @Test func aDisplayWhoseSlotsTheChildFillsStillCounts() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child, serverArguments: ["-maxclients", "64"])
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        try desktop.activate("ChildTerm")
        try desktop.input()
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
        let filler = world.directory + "/bin/xfill"
        _ = try run("/usr/bin/cc", ["-O1", "-o", filler, AgentWorld.fixture("xfill.c"), "-lxcb", "-lxcb-res"])
        let agent = try #require(world.agentPID)
        let before = seconds(try report(world), "org.example.Terminal")
        let output = world.directory + "/xfill.out"
        let start = Date()
        _ = try world.launch(
            as: world.child, filler, ["\(agent)"], output: output,
            environment: ["DISPLAY=:\(desktop.display)", "HOME=/tmp"])
        #expect(eventually { ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("full") })
        #expect(
            try eventually(15) {
                try world.status(of: world.child).sessions?.first?.problem?.contains("as in use") == true
            }, "\(String(describing: try? world.status(of: world.child).sessions))")
        Thread.sleep(forTimeInterval: 2)
        let counted = seconds(try report(world), "org.example.Terminal") - before
        let elapsed = Date().timeIntervalSince(start)
        #expect(counted > elapsed - 1.5, "\(counted) s counted of \(elapsed) s")
    }

    /// Any client may change any SYNC alarm: the child's points the agent's idle alarm at a
    /// counter of its own, far past the timeout. The agent asks the idle counter itself and goes
    /// on counting.
    @Test func aClientPointingTheAgentsIdleAlarmElsewhereDoesNotStopTheClock() throws {
        let world = try world()
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        try desktop.activate("ChildTerm")
        try desktop.input()
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
        let tamper = world.directory + "/bin/xalarm"
        _ = try run(
            "/usr/bin/cc", ["-O1", "-o", tamper, AgentWorld.fixture("xalarm.c"), "-lxcb", "-lxcb-res", "-lxcb-sync"])
        let agent = try #require(world.agentPID)
        let before = seconds(try report(world), "org.example.Terminal")
        let output = world.directory + "/xalarm.out"
        _ = try world.launch(
            as: world.child, tamper, ["\(agent)"], output: output,
            environment: ["DISPLAY=:\(desktop.display)", "HOME=/tmp"])
        func changed() -> Int {
            Int(
                ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(
                    in: .whitespacesAndNewlines))
                ?? 0
        }
        #expect(eventually { changed() > 0 }, "the child's client changed an alarm of the agent's")
        let start = Date()
        Thread.sleep(forTimeInterval: 3)
        #expect(try world.status(of: world.child).sessions?.first?.idle == false)
        let counted = seconds(try report(world), "org.example.Terminal") - before
        #expect(counted > Date().timeIntervalSince(start) - 1, "\(counted) s counted")
    }

    /// Her terminal (class ChildTerm) opened, made active and typed in (the session not idle):
    /// the agent finds the session and counts the terminal.
    private func terminalInFront(on desktop: inout XDesktop, _ world: AgentWorld) throws {
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        try desktop.activate("ChildTerm")
        try desktop.input()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Terminal" })
    }

    /// The clock stops at the last input also when what was in front was written meanwhile (a
    /// checkpoint every 10 s, and every report, write an open span up to then): with the real
    /// timeout of 5 minutes a child who walked away had those 5 minutes counted (a try by hand).
    @Test func idleTakesBackWhatWasWrittenSinceTheLastInput() throws {
        let world = try world(idleTimeout: 4)
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try terminalInFront(on: &desktop, world)
        let before = seconds(try report(world), "org.example.Terminal")
        let reported = Date()
        try desktop.input()
        let input = Date()
        // 3 s after the last input, before the timeout: a report writes the open span.
        Thread.sleep(until: input.addingTimeInterval(3))
        let meanwhile = seconds(try report(world), "org.example.Terminal")
        #expect(meanwhile > before + 2.5, "the open span written up to now: \(meanwhile - before) s")
        #expect(try eventually(10) { try world.status(of: world.child).sessions?.first?.idle == true })
        let after = seconds(try report(world), "org.example.Terminal")
        let used = input.timeIntervalSince(reported)
        #expect(after - before < used + 1, "\(after - before) s counted for \(used) s of use and 4 s idle")
    }

    @Test func idleStopsTheClockAndARestartedServerIsReadAgain() throws {
        let world = try world(idleTimeout: 2)
        defer { world.tearDown() }
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try terminalInFront(on: &desktop, world)
        // No input for 6 s: idle after 2, counted up to the last input only.
        Thread.sleep(forTimeInterval: 6)
        #expect(try world.status(of: world.child).sessions?.first?.idle == true)
        let idle = seconds(try report(world), "org.example.Terminal")
        #expect(idle < 1.5, "counted \(idle) s through an idle stretch")
        // Input again: the clock runs again.
        try desktop.input()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.idle == false })
        Thread.sleep(forTimeInterval: 1)
        try desktop.input()
        let active = seconds(try report(world), "org.example.Terminal")
        #expect(active > idle + 0.8)

        // The display server killed: the session shows the problem; started again: read again.
        desktop.stop()
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.problem != nil })
        desktop = try XDesktop(world: world, user: world.child, display: desktop.display)
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil })
        try desktop.activate("ChildTerm")
        try desktop.input()
        #expect(
            try eventually(15) {
                let session = try world.status(of: world.child).sessions?.first
                return session?.problem == nil && session?.inFrontName == "Terminal"
            })
        Thread.sleep(forTimeInterval: 1.5)
        try desktop.input()
        #expect(seconds(try report(world), "org.example.Terminal") > active + 1)
    }
}

/// A headless sway session of a test user's (sway refuses to run as root), with Wayland clients.
struct SwayDesktop {
    let world: AgentWorld
    let runtime: String
    let socket: String
    private var pids: [Int32] = []

    init(world: AgentWorld, user: String) throws {
        self.world = world
        let account = try UserDirectory().user(user)
        runtime = world.directory + "/run-\(account.uid)"
        try Files.makeDirectory(runtime, mode: 0o700)
        chmod(runtime, 0o700)
        try "xwayland disable\noutput HEADLESS-1 resolution 1024x768\n".write(
            toFile: runtime + "/config", atomically: true, encoding: .utf8)
        _ = try run("/usr/bin/chown", ["-R", user, runtime])
        let environment = [
            "XDG_RUNTIME_DIR=\(runtime)", "WLR_BACKENDS=headless", "WLR_LIBINPUT_NO_DEVICES=1",
            "WLR_RENDERER=pixman", "HOME=\(runtime)",
        ]
        let server = try world.launch(
            as: user, "/usr/bin/sway", ["-c", runtime + "/config"], output: world.directory + "/sway.log",
            environment: environment)
        pids.append(server)
        var found: String?
        let directory = runtime
        for _ in 0..<500 where found == nil {
            found = (try? FileManager.default.contentsOfDirectory(atPath: directory))?
                .first { $0.hasPrefix("sway-ipc.") && $0.hasSuffix(".sock") }
                .map { directory + "/" + $0 }
            if found == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        guard let found else {
            let log = (try? String(contentsOfFile: world.directory + "/sway.log", encoding: .utf8)) ?? ""
            throw WorldError("sway did not start: \(log.suffix(600))")
        }
        socket = found
        for _ in 0..<250 {
            if (try? run("/usr/bin/swaymsg", ["-s", found, "-t", "get_version"]))?.status == 0 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// A Wayland client of the user's, with the session's environment (as sway's own `exec` gives).
    mutating func open(as user: String, _ program: String, _ arguments: [String], environment: [String] = []) throws {
        pids.append(
            try world.launch(
                as: user, program, arguments,
                environment: environment + [
                    "XDG_RUNTIME_DIR=\(runtime)", "WAYLAND_DISPLAY=wayland-1", "SWAYSOCK=\(socket)", "HOME=\(runtime)",
                ]))
    }

    func swaymsg(_ arguments: [String]) throws -> CommandResult {
        try run("/usr/bin/swaymsg", ["-s", socket] + arguments)
    }

    /// Whether a window with this app_id is mapped.
    func hasWindow(_ appID: String) -> Bool {
        (try? swaymsg(["-t", "get_tree"]))?.stdout.contains("\"app_id\": \"\(appID)\"") ?? false
    }

    func focus(_ appID: String) throws {
        let result = try swaymsg(["[app_id=\"\(appID)\"] focus"])
        guard result.status == 0 else { throw WorldError("focus \(appID): \(result.stdout) \(result.stderr)") }
    }

    func stop() {
        for pid in pids.reversed() { kill(pid, SIGKILL) }
        for pid in pids { _ = world.wait(pid, seconds: 5) }
    }
}

/// weston with its headless back end, run by a test user: a Wayland compositor that is not
/// sway, whose focus the agent cannot read.
struct WestonDesktop {
    let world: AgentWorld
    let runtime: String
    private var pids: [Int32] = []

    init(world: AgentWorld, user: String) throws {
        self.world = world
        let account = try UserDirectory().user(user)
        runtime = world.directory + "/weston-\(account.uid)"
        try Files.makeDirectory(runtime, mode: 0o700)
        chmod(runtime, 0o700)
        _ = try run("/usr/bin/chown", ["-R", user, runtime])
        pids.append(
            try world.launch(
                as: user, "/usr/bin/weston",
                ["--backend=headless-backend.so", "--socket=wayland-st", "--idle-time=0"],
                output: world.directory + "/weston.log", environment: ["XDG_RUNTIME_DIR=\(runtime)", "HOME=\(runtime)"])
        )
        for _ in 0..<500 where !Files.exists(runtime + "/wayland-st") { Thread.sleep(forTimeInterval: 0.02) }
        guard Files.exists(runtime + "/wayland-st") else {
            let log = (try? String(contentsOfFile: world.directory + "/weston.log", encoding: .utf8)) ?? ""
            throw WorldError("weston did not start: \(log.suffix(600))")
        }
    }

    /// A Wayland client of the user's, with the session's environment (its socket by another
    /// name, when given); returns its pid.
    @discardableResult
    mutating func open(
        as user: String, _ program: String, _ arguments: [String], display: String = "wayland-st"
    )
        throws -> Int32
    {
        let pid = try world.launch(
            as: user, program, arguments,
            environment: ["XDG_RUNTIME_DIR=\(runtime)", "WAYLAND_DISPLAY=\(display)", "HOME=\(runtime)"])
        pids.append(pid)
        return pid
    }

    func stop() {
        for pid in pids.reversed() { kill(pid, SIGKILL) }
        for pid in pids { _ = world.wait(pid, seconds: 5) }
    }
}

/// GNOME Shell 43, headless (`--headless --wayland --no-x11`, a virtual monitor), run by a test
/// user in a session bus of its own (dbus-run-session), on a system bus with a mock logind (the
/// shell needs one), in a session mode of the test's that enables the screentime-focus extension
/// from the source tree (packaging/gnome-shell), as a locked extension of a real install would be.
struct GnomeDesktop {
    let world: AgentWorld
    let user: String
    let runtime: String
    let data: String
    private var pids: [Int32] = []

    init(world: AgentWorld, user: String, systemBus: String) throws {
        self.world = world
        self.user = user
        let account = try UserDirectory().user(user)
        runtime = world.directory + "/gnome-\(account.uid)"
        data = world.directory + "/gnome-data"
        try Files.makeDirectory(runtime, mode: 0o700)
        _ = try run("/usr/bin/chown", ["-R", user, runtime])
        let uuid = "screentime-focus@screentime.local"
        let source =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/packaging/gnome-shell/" + uuid
        try Files.makeDirectory(data + "/gnome-shell/extensions", mode: 0o755)
        try Files.makeDirectory(data + "/gnome-shell/modes", mode: 0o755)
        _ = try run("/bin/cp", ["-r", source, data + "/gnome-shell/extensions/"])
        try #"{"parentMode": "user", "enabledExtensions": ["\#(uuid)"]}"#.write(
            toFile: data + "/gnome-shell/modes/screentime-test.json", atomically: true, encoding: .utf8)
        _ = try run("/bin/chmod", ["-R", "a+rX", data])
        pids.append(
            try world.launch(
                as: user, "/usr/bin/dbus-run-session",
                [
                    "--", "/usr/bin/gnome-shell", "--headless", "--wayland", "--no-x11", "--virtual-monitor",
                    "1024x768", "--wayland-display=wayland-gs", "--mode=screentime-test",
                ],
                output: world.directory + "/gnome-shell.log",
                environment: [
                    "XDG_RUNTIME_DIR=\(runtime)", "HOME=\(runtime)", "DBUS_SYSTEM_BUS_ADDRESS=\(systemBus)",
                    "XDG_DATA_DIRS=\(data):/usr/share", "SCREENTIME_FOCUS_SOCKET=\(world.directory)/focus.socket",
                ]))
        for _ in 0..<1500 where !Files.exists(runtime + "/wayland-gs") { Thread.sleep(forTimeInterval: 0.02) }
        guard Files.exists(runtime + "/wayland-gs") else {
            let log = (try? String(contentsOfFile: world.directory + "/gnome-shell.log", encoding: .utf8)) ?? ""
            stop()
            throw WorldError("gnome-shell did not start: \(log.suffix(800))")
        }
    }

    /// The end of gnome-shell's log, for a failure's message (the log goes with the world).
    var log: String {
        String(
            ((try? String(contentsOfFile: world.directory + "/gnome-shell.log", encoding: .utf8)) ?? "").suffix(1_500))
    }

    /// A Wayland client of the user's, with the session's environment; returns its pid.
    @discardableResult
    mutating func open(as user: String, _ program: String, _ arguments: [String]) throws -> Int32 {
        let pid = try world.launch(
            as: user, program, arguments,
            environment: ["XDG_RUNTIME_DIR=\(runtime)", "WAYLAND_DISPLAY=wayland-gs", "HOME=\(runtime)"])
        pids.append(pid)
        return pid
    }

    func stop() {
        // dbus-run-session's children (the shell, the session bus) go with its process group.
        for pid in pids.reversed() {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
        for pid in pids { _ = world.wait(pid, seconds: 5) }
        // This world's shell only (its user's): another test's GNOME session, running beside this
        // one with the same display name, is not this test's to end.
        _ = try? run("/usr/bin/pkill", ["-KILL", "-u", user, "-f", "wayland-display=wayland-gs"])
    }
}

/// KDE's compositor, headless (`kwin_wayland --virtual`), as the user, on a session bus of its
/// own (dbus-run-session), with the screentime-focus script from packaging/kwin enabled (by its
/// metadata) from a data directory of the test's. kwin_wayland carries a file capability
/// (cap_sys_resource) some machines' bounding sets lack, which makes its exec fail there: a copy
/// without it runs, the compositor all the same.
struct KWinDesktop {
    let world: AgentWorld
    let runtime: String
    let data: String
    /// The session bus's address (kwin's, the relay's).
    let bus: String
    private var pids: [Int32] = []
    private var scripts = 0

    /// `sessionProgram`: a program kwin_wayland starts as its own child (`--exit-with-session`).
    init(world: AgentWorld, user: String, sessionProgram: String? = nil) throws {
        self.world = world
        let account = try UserDirectory().user(user)
        runtime = world.directory + "/kwin-\(account.uid)"
        data = world.directory + "/kwin-data"
        try Files.makeDirectory(runtime, mode: 0o700)
        _ = try run("/usr/bin/chown", ["-R", user, runtime])
        let source =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/packaging/kwin/screentime-focus"
        try Files.makeDirectory(data + "/kwin/scripts", mode: 0o755)
        _ = try run("/bin/cp", ["-r", source, data + "/kwin/scripts/"])
        _ = try run("/bin/cp", ["/usr/bin/kwin_wayland", world.directory + "/bin/kwin_wayland"])
        _ = try run("/bin/chmod", ["-R", "a+rX", data, world.directory + "/bin/kwin_wayland"])
        let started = try world.launch(
            as: user, "/usr/bin/dbus-run-session",
            [
                "--", "/bin/sh", "-c",
                "echo \"$DBUS_SESSION_BUS_ADDRESS\" > \(runtime)/bus.address; exec \(world.directory)/bin/kwin_wayland "
                    + "--virtual --no-lockscreen --no-global-shortcuts --socket wayland-kw"
                    + (sessionProgram.map { " --exit-with-session '\($0)'" } ?? ""),
            ],
            output: world.directory + "/kwin.log",
            environment: ["XDG_RUNTIME_DIR=\(runtime)", "HOME=\(runtime)", "XDG_DATA_DIRS=\(data):/usr/share"])
        pids.append(started)
        for _ in 0..<1500 where !Files.exists(runtime + "/wayland-kw") { Thread.sleep(forTimeInterval: 0.02) }
        let address = (try? String(contentsOfFile: runtime + "/bus.address", encoding: .utf8)) ?? ""
        bus = address.trimmingCharacters(in: .whitespacesAndNewlines)
        guard Files.exists(runtime + "/wayland-kw"), !bus.isEmpty else {
            let log = (try? String(contentsOfFile: world.directory + "/kwin.log", encoding: .utf8)) ?? ""
            stop()
            throw WorldError("kwin_wayland did not start: \(log.suffix(800))")
        }
    }

    /// A Wayland client of the user's, with the session's environment; returns its pid.
    @discardableResult
    mutating func open(as user: String, _ program: String, _ arguments: [String]) throws -> Int32 {
        let pid = try world.launch(
            as: user, program, arguments,
            environment: ["XDG_RUNTIME_DIR=\(runtime)", "WAYLAND_DISPLAY=wayland-kw", "HOME=\(runtime)"])
        pids.append(pid)
        return pid
    }

    /// Brings the window of `pid` to the front as the user would: a one-line KWin script loaded
    /// and started over the session bus (a new window does not always take the focus in KWin).
    mutating func activate(pid: Int32, as user: String) throws {
        try runScript(
            "var list = workspace.clientList(); for (var i = 0; i < list.length; i++) "
                + "{ if (list[i].pid == \(pid)) { workspace.activeClient = list[i]; } }\n", as: user)
    }

    /// Loads a KWin script of the user's and starts it, as a child can over the session bus;
    /// returns the name it was loaded by.
    @discardableResult
    mutating func runScript(_ source: String, as user: String) throws -> String {
        scripts += 1
        let path = runtime + "/script-\(scripts).js"
        try Files.writeAtomically(Array(source.utf8), to: path, mode: 0o644)
        try scripting(["loadScript", path, "script\(scripts)"], as: user)
        try scripting(["start"], as: user)
        return "script\(scripts)"
    }

    /// Calls a method of KWin's /Scripting as the user.
    func scripting(_ call: [String], as user: String) throws {
        let result = try run(
            "/usr/bin/setpriv",
            [
                "--reuid=\(user)", "--regid=users", "--init-groups", "--", "/usr/bin/gdbus", "call", "--session",
                "--dest", "org.kde.KWin", "--object-path", "/Scripting", "--method",
                "org.kde.kwin.Scripting.\(call[0])",
            ] + call.dropFirst(),
            environment: ["DBUS_SESSION_BUS_ADDRESS": bus, "PATH": "/usr/bin:/bin"])
        guard result.status == 0 else { throw WorldError("KWin's scripting \(call[0]): \(result.stderr)") }
    }

    /// kwin_wayland's pid (its session bus's grandchild).
    var compositor: Int32? {
        let found = try? run("/usr/bin/pgrep", ["-f", "^\(world.directory)/bin/kwin_wayland "])
        return found?.stdout.split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// The end of what kwin_wayland said.
    func log() -> String {
        String(((try? String(contentsOfFile: world.directory + "/kwin.log", encoding: .utf8)) ?? "").suffix(1500))
    }

    func stop() {
        for pid in pids.reversed() {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
        for pid in pids { _ = world.wait(pid, seconds: 5) }
        // This world's KWin only (another test's may be running beside it).
        _ = try? run("/usr/bin/pkill", ["-KILL", "-f", "^\(world.directory)/bin/kwin_wayland "])
    }
}

/// A system bus of the test's own (dbus-daemon) with python-dbusmock's logind on it, whose
/// sessions the test adds, changes and removes as logind would, signals and all.
struct LogindMock {
    let directory: String
    let address: String
    private let daemon: Process
    private let mock: Process

    init() throws {
        directory = "/tmp/screentime-logind-\(UUID().uuidString.prefix(8))"
        try Files.makeDirectory(directory, mode: 0o755)
        address = "unix:path=\(directory)/system_bus_socket"
        let configuration = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """
        try Files.writeAtomically(Array(configuration.utf8), to: directory + "/bus.conf", mode: 0o644)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"]
        try daemon.run()
        mock = Process()
        mock.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        mock.arguments = ["-m", "dbusmock", "--template", "logind"]
        mock.environment = ["DBUS_SYSTEM_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        mock.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        for _ in 0..<200 where !Files.exists(directory + "/system_bus_socket") { Thread.sleep(forTimeInterval: 0.02) }
        try mock.run()
        var up = false
        for _ in 0..<250 where !up {
            up = (try? python("mock.ListSessions(dbus_interface=MANAGER)")) != nil
            if !up { Thread.sleep(forTimeInterval: 0.04) }
        }
        guard up else {
            stop()
            throw WorldError("dbusmock's logind did not come up on \(address)")
        }
    }

    /// Runs `code` with `mock` (logind's manager object), `bus` and `session(id)` at hand.
    @discardableResult
    func python(_ code: String) throws -> String {
        let script = """
            import dbus, sys, time
            bus = dbus.bus.BusConnection(sys.argv[1])
            MANAGER = 'org.freedesktop.login1.Manager'
            MOCK = 'org.freedesktop.DBus.Mock'
            mock = bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1')
            def session(id):
                return bus.get_object('org.freedesktop.login1', '/org/freedesktop/login1/session/' + id)
            def monotonic(offset):
                return dbus.UInt64(int((time.clock_gettime(time.CLOCK_MONOTONIC) + offset) * 1000000))
            print(\(code))
            """
        let result = try run("/usr/bin/python3", ["-c", script, address])
        guard result.status == 0 else { throw WorldError("dbusmock: \(result.stderr.suffix(600))") }
        return result.stdout
    }

    /// A user session on seat0, active, of type x11 on `display`, announced as logind does.
    func addSession(_ id: String, uid: UInt32, name: String, display: String, leader: Int32) throws {
        try python(
            """
            mock.AddSession('\(id)', 'seat0', dbus.UInt32(\(uid)), '\(name)', True, dbus_interface=MOCK) and \
            session('\(id)').UpdateProperties('org.freedesktop.login1.Session', {'Type': 'x11', \
                'Display': '\(display)', 'Leader': dbus.UInt32(\(leader))}, dbus_interface=MOCK) is None and \
            mock.EmitSignal(MANAGER, 'SessionNew', 'so', ['\(id)', '/org/freedesktop/login1/session/\(id)'], \
                dbus_interface=MOCK)
            """)
    }

    /// Changes properties (Python expressions) and sends PropertiesChanged, as logind does.
    func update(_ id: String, _ properties: [String: String]) throws {
        let dictionary = properties.map { "'\($0.key)': \($0.value)" }.joined(separator: ", ")
        try python(
            "session('\(id)').UpdateProperties('org.freedesktop.login1.Session', {\(dictionary)}, dbus_interface=MOCK)")
    }

    func removeSession(_ id: String) throws {
        try python(
            """
            mock.RemoveObject('/org/freedesktop/login1/session/\(id)', dbus_interface=MOCK) is None and \
            mock.EmitSignal(MANAGER, 'SessionRemoved', 'so', ['\(id)', '/org/freedesktop/login1/session/\(id)'], \
                dbus_interface=MOCK)
            """)
    }

    func stop() {
        for process in [mock, daemon] where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = AgentWorld.ended(process, within: 10)
        }
        _ = try? FileManager.default.removeItem(atPath: directory)
    }
}

/// An X11 desktop of a test user's: Xvfb and openbox, and X clients, all killed by `stop`.
struct XDesktop {
    let world: AgentWorld
    let display: Int
    private var pids: [Int32] = []

    /// The desktop's Xvfb (the first program it started).
    var serverPID: Int32? { pids.first }

    /// A display number in `range` no server has now (tests running beside this one take
    /// numbers too; a test that must know its number before the server starts takes one here).
    static func freeNumber(in range: ClosedRange<Int> = 4100...4900) -> Int {
        var number = Int.random(in: range)
        while Files.exists("/tmp/.X11-unix/X\(number)") || Files.exists("/tmp/.X\(number)-lock") {
            number = Int.random(in: range)
        }
        return number
    }

    /// What the desktop's clients get besides `DISPLAY` (an `XAUTHORITY`, an `LD_PRELOAD`).
    var environment: [String] = []

    /// `windowManager`: the user openbox runs as (by default the desktop's user).
    init(
        world: AgentWorld, user: String, display chosen: Int? = nil, serverArguments: [String] = [],
        environment: [String] = [], windowManager: String? = nil
    ) throws {
        self.world = world
        self.environment = environment
        // Made by root, as a display manager would: else the first user's Xvfb owns it.
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        chmod("/tmp/.X11-unix", 0o1777)
        func taken(_ number: Int) -> Bool {
            Files.exists("/tmp/.X11-unix/X\(number)") || Files.exists("/tmp/.X\(number)-lock")
        }
        // -noreset: an Xvfb resets when its last client leaves (the readiness probe), and a client
        // connecting during the reset (openbox) is refused.
        // Tests run side by side: a number another test took between the look and the start
        // makes this Xvfb exit, and the socket is the other's; then another number.
        var number = 0
        var ready = false
        for _ in 0..<5 where !ready {
            number = chosen ?? Int.random(in: 200...4000)
            while chosen == nil, taken(number) { number = Int.random(in: 200...4000) }
            let server = try world.launch(
                as: user, "/usr/bin/Xvfb",
                [":\(number)", "-screen", "0", "800x600x24", "-nolisten", "tcp", "-noreset"] + serverArguments)
            pids.append(server)
            for _ in 0..<300 where !ready {
                ready =
                    (try? run(
                        "/usr/bin/env",
                        ["DISPLAY=:\(number)"] + environment + ["/usr/bin/xdotool", "getdisplaygeometry"]))?
                    .status == 0 && (try? X11FocusWatch.server(of: X11Display(":\(number)")!))?.pid == server
                if !ready { Thread.sleep(forTimeInterval: 0.02) }
            }
            if !ready {
                kill(server, SIGKILL)
                _ = world.wait(server, seconds: 5)
                pids.removeAll { $0 == server }
                if chosen != nil { break }
            }
        }
        display = number
        guard ready else { throw WorldError("Xvfb :\(number) did not start") }
        let log = world.directory + "/openbox-\(number).log"
        pids.append(
            try world.launch(
                as: windowManager ?? user, "/usr/bin/openbox", [], output: log,
                environment: ["DISPLAY=:\(number)", "HOME=/tmp"] + environment))
        // openbox manages the screen once it has set its desktops and client lists on the root
        // window. It announces _NET_SUPPORTED earlier, before it takes the windows already there:
        // a client mapped between the two (on a busy machine, tests side by side) could be left
        // unmapped and unmanaged, its window never shown.
        var managed = false
        for _ in 0..<1500 where !managed {
            let listing = try? run("/usr/bin/env", ["DISPLAY=:\(number)"] + environment + ["/usr/bin/xprop", "-root"])
            managed = ["_NET_ACTIVE_WINDOW", "_NET_WORKAREA", "_NET_CLIENT_LIST_STACKING"].allSatisfy {
                listing?.stdout.contains($0) == true
            }
            if !managed { Thread.sleep(forTimeInterval: 0.02) }
        }
        guard managed else {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw WorldError("openbox did not manage :\(number): \(said.suffix(500))")
        }
    }

    /// SIGKILL to openbox (the second program started).
    func killWindowManager() {
        kill(pids[1], SIGKILL)
        _ = world.wait(pids[1], seconds: 5)
    }

    /// What each program opened here printed (a file per program, in the world's directory).
    private var outputs: [Int32: String] = [:]

    mutating func open(as user: String, _ program: String, _ arguments: [String]) throws {
        let output =
            world.directory + "/x\(display)-\(pids.count)-" + (program.split(separator: "/").last ?? "") + ".log"
        let pid = try world.launch(
            as: user, program, arguments, output: output,
            environment: ["DISPLAY=:\(display)", "HOME=/tmp"] + environment)
        pids.append(pid)
        outputs[pid] = output
    }

    /// For a test whose window did not show: each program of the desktop (running and in what
    /// state and kernel wait, or ended), what it printed, whether the display's socket is still
    /// there, and the windows of `windowClass` mapped or not.
    func explain(_ windowClass: String) -> String {
        var lines = ["display :\(display), socket \(Files.exists("/tmp/.X11-unix/X\(display)") ? "there" : "gone")"]
        for pid in pids {
            let name = world.command(of: pid) ?? "?"
            let state = world.processState(pid).map { String($0) } ?? "gone"
            let waiting = (try? String(contentsOfFile: "/proc/\(pid)/wchan", encoding: .utf8)) ?? "?"
            let group = world.cgroup(of: pid) ?? "?"
            var line = "\(pid) \(name): state \(state), waiting in \(waiting), group \(group)"
            if let output = outputs[pid], let said = try? String(contentsOfFile: output, encoding: .utf8), !said.isEmpty
            {
                line += ", printed: " + said.suffix(300).replacingOccurrences(of: "\n", with: " | ")
            }
            lines.append(line)
        }
        let all = try? runXdotool(["search", "--class", windowClass])
        let windows = all?.stdout.split(separator: "\n").map(String.init) ?? []
        lines.append("windows of class \(windowClass), mapped or not: \(windows)")
        // What the server and the window manager say of each: mapped or not, inside which
        // parent, on which desktop, in which state.
        func said(_ program: String, _ arguments: [String], keeping wanted: [String]) -> String {
            let result = try? run("/usr/bin/env", ["DISPLAY=:\(display)"] + environment + [program] + arguments)
            return (result?.stdout ?? "").split(separator: "\n")
                .filter { line in wanted.contains { line.contains($0) } }
                .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; ")
        }
        for window in windows {
            lines.append(
                "  \(window): "
                    + said(
                        "/usr/bin/xwininfo", ["-id", window], keeping: ["Map State", "Absolute", "Width", "Height"])
                    + "; " + said("/usr/bin/xwininfo", ["-children", "-id", window], keeping: ["Parent window id"])
                    + "; "
                    + said(
                        "/usr/bin/xprop", ["-id", window],
                        keeping: ["WM_STATE", "_NET_WM_DESKTOP", "_NET_WM_STATE", "window state", "_OB_"]))
        }
        lines.append(
            "root: "
                + said(
                    "/usr/bin/xprop", ["-root"],
                    keeping: [
                        "_NET_CURRENT_DESKTOP", "_NET_CLIENT_LIST(", "_NET_ACTIVE_WINDOW", "_NET_SHOWING_DESKTOP",
                    ]))
        let log = world.directory + "/openbox-\(display).log"
        if let openbox = try? String(contentsOfFile: log, encoding: .utf8), !openbox.isEmpty {
            lines.append("openbox said: " + openbox.suffix(400).replacingOccurrences(of: "\n", with: " | "))
        }
        return lines.joined(separator: "\n")
    }

    /// The first window of a class, if one is mapped.
    func window(_ windowClass: String) -> String? {
        shown(["--class", windowClass])
    }

    /// The first mapped window `xdotool search` finds with `criteria` (`--name`, `--class`).
    ///
    /// When none is, the window manager is woken. Started in a loop (Xvfb, openbox, xmessage) with
    /// both processors busy and no agent, 6 starts of 400 showed no window for 10 s: openbox had
    /// not handled even the events of its own start (its --debug log stopped before "UPDATE
    /// DESKTOP NAMES"), and gdb found it waiting in poll with no timeout, as if those events sat
    /// read in Xlib's queue. A change of a root property, which openbox watches, showed the
    /// window each of the 3 times it was tried.
    func shown(_ criteria: [String]) -> String? {
        if let result = try? runXdotool(["search", "--onlyvisible"] + criteria), result.status == 0,
            let first = result.stdout.split(separator: "\n").first
        {
            return String(first)
        }
        Self.wakeWindowManager(display: display, environment: environment)
        return nil
    }

    /// Changes a property of the root window of `display`, which its window manager watches.
    static func wakeWindowManager(display: Int, environment: [String] = []) {
        _ = try? run(
            "/usr/bin/env",
            ["DISPLAY=:\(display)"] + environment + [
                "/usr/bin/xprop", "-root", "-f", "_SCREENTIME_TEST_NUDGE", "32c", "-set", "_SCREENTIME_TEST_NUDGE", "1",
            ])
    }

    /// Makes the window of a class the active one (through the window manager, as a click would).
    func activate(_ windowClass: String) throws {
        guard let window = window(windowClass) else {
            throw WorldError("no \(windowClass) window:\n\(explain(windowClass))")
        }
        let result = try runXdotool(["windowactivate", "--sync", window])
        guard result.status == 0 else { throw WorldError("windowactivate \(windowClass): \(result.stderr)") }
    }

    /// Input, as a person moving the mouse (XTEST).
    func input() throws {
        let x = Int.random(in: 100...700)
        let result = try runXdotool(["mousemove", "\(x)", "300"])
        guard result.status == 0 else { throw WorldError("mousemove: \(result.stderr)") }
    }

    /// Whether the server shows `window` (decimal id) as a child of `parent`.
    func isViewable(_ window: String, inside parent: String) throws -> Bool {
        let info = try run("/usr/bin/env", ["DISPLAY=:\(display)", "/usr/bin/xwininfo", "-id", window])
        let tree = try run("/usr/bin/env", ["DISPLAY=:\(display)", "/usr/bin/xwininfo", "-children", "-id", window])
        guard let parentID = UInt32(parent) else { return false }
        let parentHex = "0x" + String(parentID, radix: 16)
        return info.stdout.contains("Map State: IsViewable")
            && tree.stdout.split(separator: "\n").contains { $0.contains("Parent window id: \(parentHex)") }
    }

    /// Moves a window inside another (xdotool, as a child's own client would). The window manager
    /// may still be letting go of the window it framed (and unmap it): mapped again until it
    /// shows inside, for 20 s at most; whether it does.
    func moveInside(_ window: String, _ parent: String) throws -> Bool {
        let end = Date().addingTimeInterval(20)
        repeat {
            for arguments in [["windowreparent", window, parent], ["windowmap", window]] {
                let result = try runXdotool(arguments)
                guard result.status == 0 else { throw WorldError("xdotool \(arguments): \(result.stderr)") }
            }
            Thread.sleep(forTimeInterval: 0.5)
            if try isViewable(window, inside: parent) { return true }
        } while Date() < end
        return false
    }

    func runXdotool(_ arguments: [String]) throws -> CommandResult {
        try run("/usr/bin/env", ["DISPLAY=:\(display)"] + environment + ["/usr/bin/xdotool"] + arguments)
    }

    func stop() {
        for pid in pids.reversed() { kill(pid, SIGKILL) }
        for pid in pids { _ = world.wait(pid, seconds: 5) }
        unlink("/tmp/.X11-unix/X\(display)")
        unlink("/tmp/.X\(display)-lock")
    }
}

extension UsageIntegrationTests {
    /// Her games behind busy loops of hers and scheduling policies: they make the machine busy
    /// on purpose and count what the scheduler gives her server, so they run with no other test
    /// beside them (`scripts/run-tests` runs every `Alone` suite by itself, one test at a time).
    @Suite(.threadsOfTheirOwn, .serialized, .enabled(if: isRoot, "needs root: users, the proc connector, X servers"))
    struct Alone {
        @Test func herGameGrabbingTheServerBehindABusyMachineOfHerMakingCounts() throws {
            try UsageIntegrationTests().herGameGrabbingTheServerBehindABusyMachineOfHerMakingCounts()
        }

        @Test(arguments: ["-i", "-b"])
        func herGameBehindASchedulingPolicyOfHersCounts(policy: String) throws {
            try UsageIntegrationTests().herGameBehindASchedulingPolicyOfHersCounts(policy: policy)
        }

        @Test func herGameSlowingItsServerOnlyWhileItGrabsCounts() throws {
            try UsageIntegrationTests().herGameSlowingItsServerOnlyWhileItGrabsCounts()
        }
    }
}

extension UsageIntegrationTests {
    /// Tests that wait out minutes of real time (a limit, a grant, a schedule's boundary):
    /// `scripts/run-tests` starts every `Long` suite's tests first, beside the others, so that
    /// none starts late and holds up the end of the run. (Their threads of their own are the
    /// parent suite's trait, which covers nested suites.)
    @Suite(.enabled(if: isRoot, "needs root: users, the proc connector, other users' X servers"))
    struct Long {
        @Test func kwinsScriptTellsTheWindowInFrontThroughTheRelay() throws {
            try UsageIntegrationTests().kwinsScriptTellsTheWindowInFrontThroughTheRelay()
        }
    }
}
