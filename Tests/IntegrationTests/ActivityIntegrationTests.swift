import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// Monitors in real time, end to end: the agent's scheduler at real minute boundaries, real
/// extension programs (shell scripts a guardian installed) run through the launcher as the
/// extension account, a daily limit on a real X11 app kept in front, downtime freezing a real
/// program of the child's, and kill -9 around a boundary.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: users, the launcher, the proc connector, freezing"))
struct ActivityIntegrationTests {
    /// A guardian's extension: a root-owned script in a root-owned directory, and a directory the
    /// extension account may write its notes to (an extension's /tmp is its own).
    final class Installed {
        let directory: String
        let notes: String

        init(_ world: AgentWorld) throws {
            directory = "/usr/local/lib/screentime-test-\(world.id)"
            // Not /tmp or /var/tmp: an extension has its own of each.
            notes = "/var/lib/screentime-test-notes-\(world.id)"
            try Files.makeDirectory(directory, mode: 0o755)
            try Files.makeDirectory(notes, mode: 0o777)
            chmod(notes, 0o777)
        }

        /// Installs a script; returns its path.
        func script(_ name: String, _ body: String) throws -> String {
            let path = directory + "/" + name
            try ("#!/bin/bash\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
            return path
        }

        /// The built CLI, copied here: an extension has its own /tmp, where a build may live.
        func cli() throws -> String {
            let path = directory + "/screentime"
            if !FileManager.default.fileExists(atPath: path) {
                try FileManager.default.copyItem(atPath: AgentWorld.binaries + "/screentime", toPath: path)
                chmod(path, 0o755)
            }
            return path
        }

        func lines(_ file: String) -> [String] {
            ((try? String(contentsOfFile: notes + "/" + file, encoding: .utf8)) ?? "").split(separator: "\n").map(
                String.init)
        }

        func remove() {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: notes)
        }
    }

    /// `HH:MM` of a moment, in the machine's time zone (the agent's).
    private func clock(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// The next whole minute at least `margin` seconds ahead.
    private func nextMinute(margin: Double = 15) -> Date {
        var minute = Calendar.current.nextDate(
            after: Date(), matching: DateComponents(second: 0), matchingPolicy: .nextTime)!
        if minute.timeIntervalSinceNow < margin { minute.addTimeInterval(60) }
        return minute
    }

    func monitors(_ world: AgentWorld, _ user: String) throws -> MonitorListReply {
        let result = try world.cli(as: nil, "monitor", "list", "--user", user, "--json")
        guard result.status == 0 else { throw WorldError("monitor list: \(result.stderr)") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(MonitorListReply.self, from: Data(result.stdout.utf8))
    }

    func authorize(_ world: AgentWorld, _ users: String...) throws {
        for user in users {
            let result = try world.cli(as: world.guardian, "authorize", "--child", user)
            guard result.status == 0 else { throw WorldError("authorize \(user): \(result.stderr)") }
        }
    }

    @Test func anExtensionRunsAtTheIntervalsStartAsTheExtensionAccountWithoutNetworkAndActsOnlyForItsOwn() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let installed = try Installed(world)
        defer { installed.remove() }
        try authorize(world, world.child, world.bystander)
        let cli = try installed.cli()
        let program = try installed.script(
            "monitor",
            """
            input=$(cat)
            notes=\(installed.notes)/calls
            { echo "when $(date +%s.%N)"; echo "uid $(id -u)"; echo "links $(/usr/sbin/ip -o link | wc -l)"
              echo "pids $(ls -d /proc/[0-9]* | wc -l)"; echo "input $input"; } >> $notes
            case "$input" in *intervalDidStart*) ;; *) exit 0;; esac
            \(cli) shield --store school --app-category Game >/dev/null 2>&1; echo "own $?" >> $notes
            \(cli) shield --user \(world.bystander) --store school --app-category Game >/dev/null 2>&1; echo "other-user $?" >> $notes
            \(cli) shield --client org.example.Other --store school --app-category Game >/dev/null 2>&1; echo "other-client $?" >> $notes
            \(cli) status >/dev/null 2>&1; echo "status $?" >> $notes
            \(cli) authorize --child \(world.bystander) >/dev/null 2>&1; echo "authorize $?" >> $notes
            \(cli) report >/dev/null 2>&1; echo "report $?" >> $notes
            \(cli) clear --client screentime.agent --store limits >/dev/null 2>&1; echo "agent-store $?" >> $notes
            \(cli) --socket \(world.socket) shield --store sneaky --app-category Game >/dev/null 2>&1; echo "socket $?" >> $notes
            echo '{"log": "done"}'
            """)
        let start = nextMinute()
        let started = try world.cli(
            as: world.guardian, "monitor", "start", "homework", "--user", world.child, "--from", clock(start), "--to",
            clock(start.addingTimeInterval(20 * 60)), "--repeats", "--extension", program)
        #expect(started.status == 0, "\(started.stderr)")
        #expect(started.stdout.contains("monitoring screentime/homework for \(world.child)"), "\(started.stdout)")
        // Nothing before the boundary.
        Thread.sleep(until: start.addingTimeInterval(-3))
        #expect(installed.lines("calls").isEmpty, "\(installed.lines("calls"))")
        #expect(eventually(20) { installed.lines("calls").contains { $0.hasPrefix("socket ") } })
        let lines = installed.lines("calls")
        func value(_ key: String) -> String? {
            lines.first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) }
        }
        let ran = Double(value("when") ?? "") ?? 0
        #expect(ran >= start.timeIntervalSince1970 && ran - start.timeIntervalSince1970 < 3, "ran at \(ran)")
        #expect(value("uid") == "\(getpwnam("nobody")!.pointee.pw_uid)")
        #expect(value("links") == "1", "only loopback: no network")
        #expect(Int(value("pids") ?? "99") ?? 99 < 10, "it sees only its own processes")
        let input = value("input") ?? ""
        for part in [
            #""event":"intervalDidStart""#, #""activity":"homework""#, #""user":"\#(world.child)""#,
            #""client":"screentime""#,
        ] {
            #expect(input.contains(part), "\(input)")
        }
        #expect(value("own") == "0")
        #expect(value("other-user") == "77" && value("other-client") == "77", "\(lines)")
        #expect(value("authorize") == "77" && value("report") == "77", "\(lines)")
        // The agent's own limits and downtime are no client's but the agent's.
        #expect(value("agent-store") == "77", "\(lines)")
        #expect(value("status") == "0")
        // Given the agent's socket, it is only the extension account there: refused.
        #expect(value("socket") != "0", "\(lines)")
        // What it did is in force, for that child, in that client's store, and nowhere else.
        let status = try world.status(of: world.child)
        #expect(status.stores.contains { $0.client == "screentime" && $0.name == "school" })
        #expect(!status.stores.contains { $0.name == "sneaky" })
        #expect(!(try world.status(of: world.bystander)).stores.contains { $0.name == "school" })
        let listed = try monitors(world, world.child).monitors.first { $0.name == "homework" }
        #expect(listed?.inInterval == true)
        #expect(
            listed?.lastRun?.callback == "intervalDidStart" && listed?.lastRun?.outcome == "ok",
            "\(String(describing: listed))")
        // Once per interval: nothing more a few seconds on.
        Thread.sleep(forTimeInterval: 3)
        #expect(installed.lines("calls").filter { $0.contains("intervalDidStart") }.count == 1)
        // A child may not start or stop monitors.
        let refused = try world.cli(as: world.child, "monitor", "stop", "homework", "--user", world.child)
        #expect(refused.status == 77, "\(refused.stderr)")
        let stopped = try world.cli(as: world.guardian, "monitor", "stop", "homework", "--user", world.child)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(try monitors(world, world.child).monitors.isEmpty)
    }

    @Test func hangingCrashingGarbageAndFloodingExtensionsAreStoppedAndShownAndTheScheduleGoesOn() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let installed = try Installed(world)
        defer { installed.remove() }
        try authorize(world, world.child)
        let scripts = [
            "hang": "exec -a screentime-hang-\(world.id) sleep 300",
            // A real crash: a signal it sent itself would not end it (it is the first process of
            // its pid namespace), one the processor raises does.
            "crash": "echo 'about to crash' >&2; exec python3 -c 'import ctypes; ctypes.string_at(0)'",
            "fails": "echo 'no luck' >&2; exit 3",
            "garbage": "printf '\\001\\002not json at all\\n'", "flood": "exec yes flood",
            "fine": "cat > /dev/null; echo '{\"log\": \"all well\"}'",
            "leaves": "(exec -a screentime-left-\(world.id) sleep 300) & echo '{\"log\": \"left one\"}'",
        ]
        // Each monitor's interval is in progress: it starts at once.
        let now = Date()
        for (name, body) in scripts.sorted(by: { $0.key < $1.key }) {
            let result = try world.cli(
                as: world.guardian, "monitor", "start", name, "--user", world.child, "--from",
                clock(now.addingTimeInterval(-60)), "--to", clock(now.addingTimeInterval(30 * 60)), "--extension",
                try installed.script(name, body))
            #expect(result.status == 0, "\(name): \(result.stderr)")
        }
        func lastRun(_ name: String) throws -> MonitorReport.Run? {
            try monitors(world, world.child).monitors.first { $0.name == name }?.lastRun
        }
        #expect(try eventually(25) { try scripts.keys.allSatisfy { try lastRun($0) != nil } })
        let hang = try lastRun("hang")
        #expect(
            hang?.outcome == "stopped" && hang?.problem?.contains("longer than 10 s") == true,
            "\(String(describing: hang))")
        let crash = try lastRun("crash")
        #expect(
            crash?.outcome == "failed" && crash?.problem?.contains("signal 11") == true, "\(String(describing: crash))")
        #expect(crash?.problem?.contains("about to crash") == true)
        let fails = try lastRun("fails")
        #expect(
            fails?.outcome == "failed" && fails?.problem == "it exited with status 3: no luck",
            "\(String(describing: fails))")
        let garbage = try lastRun("garbage")
        #expect(garbage?.outcome == "failed" && garbage?.problem?.contains("not a JSON line") == true)
        let flood = try lastRun("flood")
        #expect(
            flood?.outcome == "stopped" && flood?.problem?.contains("more than 64 KiB") == true,
            "\(String(describing: flood))")
        #expect(try lastRun("fine")?.outcome == "ok")
        #expect(try lastRun("leaves")?.outcome == "ok")
        // Nothing they started lives on.
        for marker in ["screentime-left-\(world.id)", "screentime-hang-\(world.id)"] {
            let left = try run("/usr/bin/pgrep", ["-f", marker])
            #expect(left.status == 1, "left running: \(marker) \(left.stdout)")
        }
        // status shows the problems; the agent runs on and still answers.
        let text = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(
            text.stdout.contains("screentime/hang") && text.stdout.contains("its extension stopped"), "\(text.stdout)")
        #expect(world.agentIsRunning)
        // Programs a child could change, or that are not there, are refused when the monitor starts.
        let home = try world.childDirectory()
        for name in ["mine", "placed"] {
            try "#!/bin/sh\nexit 0\n".write(toFile: home + "/" + name, atomically: true, encoding: .utf8)
            chmod(home + "/" + name, 0o755)
        }
        try system("/usr/bin/chown", world.child, home + "/mine")
        for (path, reason) in [
            (home + "/mine", "not owned by root"), (home + "/placed", "which someone other than root may change"),
            ("/nonexistent/monitor", "does not exist"),
            ("relative/monitor", "absolute path"),
        ] {
            let refused = try world.cli(
                as: world.guardian, "monitor", "start", "bad", "--user", world.child, "--from", "08:00", "--to",
                "09:00", "--extension", path)
            #expect(refused.status == 65 && refused.stderr.contains(reason), "\(path): \(refused.stderr)")
        }
        // Named through a link in a directory the child controls: it could point the link
        // elsewhere between the check and the run.
        let link = home + "/link"
        #expect(symlink(try installed.script("linked", "exit 0"), link) == 0)
        let linked = try world.cli(
            as: world.guardian, "monitor", "start", "bad", "--user", world.child, "--from", "08:00", "--to", "09:00",
            "--extension", link)
        #expect(linked.status == 65 && linked.stderr.contains("symbolic link"), "\(linked.stderr)")
        let writable = try installed.script("writable", "exit 0")
        chmod(writable, 0o777)
        let refused = try world.cli(
            as: world.guardian, "monitor", "start", "bad", "--user", world.child, "--from", "08:00", "--to", "09:00",
            "--extension", writable)
        #expect(refused.status == 65 && refused.stderr.contains("may be changed by others"), "\(refused.stderr)")
        // Apple's rules: 15 minutes at least, and 20 activities per client.
        let short = try world.cli(
            as: world.guardian, "monitor", "start", "short", "--user", world.child, "--from", "08:00", "--to", "08:10")
        #expect(short.status == 65 && short.stderr.contains("intervalTooShort"), "\(short.stderr)")
        for index in 0..<(20 - scripts.count) {
            let result = try world.cli(
                as: world.guardian, "monitor", "start", "many\(index)", "--user", world.child, "--from", "08:00",
                "--to", "09:00")
            #expect(result.status == 0, "\(result.stderr)")
        }
        let twentyFirst = try world.cli(
            as: world.guardian, "monitor", "start", "one-too-many", "--user", world.child, "--from", "08:00", "--to",
            "09:00")
        #expect(twentyFirst.status == 65 && twentyFirst.stderr.contains("excessiveActivities"), "\(twentyFirst.stderr)")
        // Another client has its own twenty.
        let other = try world.cli(
            as: world.guardian, "monitor", "start", "one-too-many", "--user", world.child, "--client",
            "org.example.App",
            "--from", "08:00", "--to", "09:00")
        #expect(other.status == 0, "\(other.stderr)")
    }

    func aDailyLimitFreezesTheAppAfterItsTimeInFrontAndNotBefore() throws {
        let world = try AgentWorld(configuration: ["idleTimeout": "600"])
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Terminal", name: "Terminal", exec: "/usr/bin/xterm", categories: "System;")
        try world.installDesktopEntry(
            id: "org.example.Notes", name: "Notes", exec: "/usr/bin/xmessage", categories: "Office;")
        try authorize(world, world.child)
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildTerm", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        #expect(eventually(30) { desktop.window("ChildTerm") != nil && desktop.window("XMessage") != nil })
        #expect(try eventually { try world.status(of: world.child).sessions?.count == 1 })
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--app", "org.example.Terminal", "--daily", "1m")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("limit: org.example.Terminal"), "\(set.stdout)")
        // The child, not shown names, sees the limit by its token, not by what it limits.
        let hers = try world.cli(as: world.child, "monitor", "list", "--user", world.child)
        #expect(hers.status == 0 && hers.stdout.contains("limit: 1 item"), "\(hers.stdout) \(hers.stderr)")
        #expect(!hers.stdout.contains("org.example.Terminal") && !hers.stdout.contains("Terminal"), "\(hers.stdout)")
        let herStatus = try world.cli(as: world.child, "status", "--json")
        #expect(!herStatus.stdout.contains("org.example.Terminal"), "\(herStatus.stdout)")
        func terminal() -> Int32? {
            let found = try? run("/usr/bin/pgrep", ["-u", world.child, "-f", "xterm -class ChildTerm"])
            return found?.stdout.split(separator: "\n").first.flatMap { Int32($0) }
        }
        let pid = try #require(terminal())
        func used() throws -> Double {
            try monitors(world, world.child).monitors.first { $0.builtIn == "limit" }?.events.first?.usedSeconds ?? 0
        }
        // Notes in front for 20 s: none of it counts toward the terminal's minute. What the
        // terminal had in front before (opened first, it was in front until the notes came: on a
        // busy machine, several seconds) counts toward its minute too, so the 20 s are measured
        // from when the agent sees the notes in front.
        try desktop.activate("XMessage")
        #expect(try eventually { try world.status(of: world.child).sessions?.first?.inFrontName == "Notes" })
        let atNotes = try used()
        Thread.sleep(forTimeInterval: 20)
        #expect(!world.isFrozen(pid))
        let before = try used()
        #expect(before - atNotes < 2, "counted \(before - atNotes) s while the notes were in front")
        // From before the switch: the agent may see the terminal in front before xdotool returns.
        let front = Date()
        try desktop.activate("ChildTerm")
        Thread.sleep(until: front.addingTimeInterval(45))
        #expect(!world.isFrozen(pid), "frozen after 45 s in front")
        let counted = try used()
        #expect(abs(counted - before - 45) < 5, "counted \(counted) s, \(before) s of it before")
        #expect(eventually(30) { world.isFrozen(pid) })
        let after = Date().timeIntervalSince(front)
        #expect(after >= 59 - before && after < 66 - before, "frozen after \(after) s in front (\(before) s before)")
        // The child sees why: the shield, saying the day's time is used up.
        #expect(
            eventually(5) {
                desktop.shown(["--name", "^Terminal is shielded$"]) != nil
            })
        let status = try world.status(of: world.child)
        #expect(status.stores.contains { $0.name == "limits" })
        #expect(status.monitors?.first { $0.builtIn == "limit" }?.events.first?.reached == true)
        // Removing the limit lifts its shield.
        let removed = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--app", "org.example.Terminal", "--remove")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(eventually { !world.isFrozen(pid) })
    }

    @Test func aWebDomainCountsWhileABrowserIsInFrontAfterTheChildUsedItAndReachesItsThreshold() throws {
        let world = try AgentWorld(configuration: ["idleTimeout": "600"])
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Browser", name: "Browser", exec: "/usr/bin/xterm", categories: "Network;WebBrowser;")
        try world.installDesktopEntry(
            id: "org.example.Notes", name: "Notes", exec: "/usr/bin/xmessage", categories: "Office;")
        try authorize(world, world.child)
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(as: world.child, "/usr/bin/xterm", ["-class", "ChildBrowser", "-e", "/bin/sleep", "600"])
        try desktop.open(as: world.child, "/usr/bin/xmessage", ["-name", "notes", "homework notes"])
        #expect(eventually(30) { desktop.window("ChildBrowser") != nil && desktop.window("XMessage") != nil })
        try desktop.activate("ChildBrowser")
        let started = try world.cli(
            as: world.guardian, "monitor", "start", "web", "--user", world.child, "--from", "00:00", "--to", "00:00",
            "--repeats", "--event", "site", "--threshold", "12s", "--domain", "www.allowed.test")
        #expect(started.status == 0, "\(started.stderr)")
        // The browser in front for a while before the site is used: not the site's time.
        Thread.sleep(forTimeInterval: 3)
        func event() throws -> MonitorReport.Event? { try monitors(world, world.child).monitors.first?.events.first }
        #expect(try event()?.usedSeconds ?? -1 < 0.5)
        // The child's program looks the site up (no server answers: the query alone is use).
        let lookedUp = Date()
        _ = try run(
            "/usr/bin/setpriv",
            [
                "--reuid=\(world.child)", "--regid=users", "--init-groups", "--", "/usr/bin/dig", "+tries=1", "+time=1",
                "@127.0.0.1", "sub.allowed.test", "A",
            ])
        Thread.sleep(until: lookedUp.addingTimeInterval(6))
        let used = try event()?.usedSeconds ?? 0
        #expect(abs(used - 6) < 2, "counted \(used) s of allowed.test")
        #expect(try event()?.reached == false)
        // In front elsewhere, the site's time stops.
        try desktop.activate("XMessage")
        Thread.sleep(forTimeInterval: 4)
        #expect(abs((try event()?.usedSeconds ?? 0) - used) < 1.5)
        try desktop.activate("ChildBrowser")
        #expect(try eventually(15) { try event()?.reached == true })
        // A service of the catalogue whose site this is: the report gives its time too.
        try "name = Allowed Site\ndomains = allowed.test\n".write(
            toFile: world.directory + "/services/allowedsite.service", atomically: true, encoding: .utf8)
        let report = try world.cli(as: world.guardian, "report", "--user", world.child, "--today", "--json")
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains("\"domain\" : \"allowed.test\""), "\(report.stdout)")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let services = try decoder.decode(UsageReport.self, from: Data(report.stdout.utf8)).services ?? []
        let site = services.first { $0.id == "allowedsite" }
        #expect(
            site?.name == "Allowed Site" && (site?.webSeconds ?? 0) >= 8 && site?.applicationSeconds == 0, "\(services)"
        )
        #expect(!services.contains { $0.id == "tubesite" }, "a service not used is not in the report")
    }

    /// A program of the child's that the agent holds for a moment while it judges it (a new
    /// file, a script, under downtime's "every app") is frozen, never stopped: a parent that waits
    /// with WUNTRACED (su, sudo, a shell's job control) sees nothing. su, seeing its shell stopped,
    /// stops itself and was never continued: 'su - child -c CMD' hung in a by-hand trial.
    @Test func aParentThatWaitsAsSuDoesNeverSeesItsChildStoppedByAHold() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try authorize(world, world.child)
        let now = Date()
        let set = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", clock(now.addingTimeInterval(-120)),
            "--to", clock(now.addingTimeInterval(30 * 60)))
        #expect(set.status == 0, "\(set.stderr)")
        #expect(
            try eventually { try world.status(of: world.child).effective.applicationCategoryShields.isEmpty == false })
        // New files each time (not hashed yet: judged), and a script.
        let directory = try world.childDirectory()
        var programs: [String] = []
        for index in 0..<4 {
            let copy = "\(directory)/true-\(index)"
            try Data(contentsOf: URL(fileURLWithPath: "/bin/true")).write(to: URL(fileURLWithPath: copy))
            chmod(copy, 0o755)
            programs.append(copy)
        }
        let script = "\(directory)/script.sh"
        try "#!/bin/sh\n/bin/true\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        programs += [script, "/bin/true"]
        let childUID = try UserDirectory().user(world.child).uid
        for path in programs { chown(path, childUID, 0) }
        let watched = try world.inNetwork(
            as: world.child, "/usr/bin/python3", [AgentWorld.fixture("watchstop.py"), "25"] + programs)
        #expect(watched.status == 0, "\(watched.stderr)")
        #expect(watched.stdout.contains("runs=150 stops=0"), "\(watched.stdout)")
    }

    @Test func downtimeFreezesTheChildsRunningAppButTheAllowedOneAndOffThawsIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Sleeper", name: "Sleeper", exec: "/bin/sleep", categories: "Utility;")
        try authorize(world, world.child)
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        let sleeper = try world.launch(as: world.child, "/bin/sleep", ["600"])
        #expect(eventually { world.count(output) != nil })
        let start = nextMinute()
        let set = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", clock(start), "--to",
            clock(start.addingTimeInterval(30 * 60)), "--allow", "org.example.Sleeper")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("[downtime (allowed: org.example.Sleeper)]"), "\(set.stdout)")
        Thread.sleep(until: start.addingTimeInterval(-2))
        #expect(!world.isFrozen(counter), "frozen before downtime")
        #expect(eventually(8) { world.isFrozen(counter) })
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(!world.isFrozen(sleeper), "the allowed app runs on")
        // A new program during downtime is held as it starts.
        let late = try world.launch(as: world.child, world.counter, [output + "-late"])
        #expect(eventually { world.isFrozen(late) })
        let off = try world.cli(as: world.guardian, "downtime", "--user", world.child, "--off")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(eventually { !world.isFrozen(counter) && !world.isFrozen(late) })
        let before = world.count(output) ?? 0
        #expect(eventually { (world.count(output) ?? 0) > before }, "counting again")
    }

    @Test func anAlwaysAllowedAppRunsThroughScreenTimeUsedUpAndDowntimeWhileTheRestIsHeld() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Sleeper", name: "Sleeper", exec: "/bin/sleep", categories: "Utility;")
        try authorize(world, world.child)
        let allowed = try world.cli(as: world.guardian, "allow", "--user", world.child, "--app", "org.example.Sleeper")
        #expect(allowed.status == 0 && allowed.stdout.contains("apps: Sleeper"), "\(allowed.stdout) \(allowed.stderr)")
        // The child reads its own list (that is what it may use), and changes nothing.
        let hers = try world.cli(as: world.child, "allow")
        #expect(hers.stdout.contains("apps: Sleeper"), "\(hers.stdout) \(hers.stderr)")
        #expect(
            try world.cli(as: world.child, "allow", "--user", world.child, "--app", "org.example.Counter").status == 77)

        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        let sleeper = try world.launch(as: world.child, "/bin/sleep", ["600"])
        #expect(eventually { world.count(output) != nil })

        // A day's screen time of nothing: used up at once; everything is held but the sleeper.
        let none = try world.cli(as: world.guardian, "limit", "--user", world.child, "--screen-time", "0")
        #expect(none.status == 0, "\(none.stderr)")
        #expect(eventually { world.isFrozen(counter) })
        #expect(!world.isFrozen(sleeper), "the always-allowed app is held")
        let newSleeper = try world.launch(as: world.child, "/bin/sleep", ["600"])
        let newCounter = try world.launch(as: world.child, world.counter, [output + "-new"])
        #expect(eventually { world.isFrozen(newCounter) })
        Thread.sleep(forTimeInterval: 1)
        #expect(!world.isFrozen(newSleeper) && !world.isFrozen(sleeper))
        // Her program claiming to be the allowed one (launched "from" its desktop file, or from
        // an entry of her own with its ID) is still her program: held.
        let home = try world.makeHome(for: world.child)
        try "[Desktop Entry]\nType=Application\nName=Sleeper\nExec=\(world.counter)\nCategories=Utility;\n".write(
            toFile: home + "/.local/share/applications/org.example.Sleeper.desktop", atomically: true, encoding: .utf8)
        try system("/usr/bin/chown", "-R", world.child, home)
        let dressed = try world.launch(
            as: world.child, world.counter, [output + "-dressed"],
            environment: ["GIO_LAUNCHED_DESKTOP_FILE=\(world.directory)/data/applications/org.example.Sleeper.desktop"])
        #expect(eventually { world.isFrozen(dressed) }, "a counter dressed as the always-allowed app ran")
        #expect(try world.status(of: world.child).stores.contains { $0.name == "screen-time" })
        let off = try world.cli(as: world.guardian, "limit", "--user", world.child, "--screen-time", "off")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(eventually { !world.isFrozen(counter) && !world.isFrozen(newCounter) })

        // Downtime with nothing of its own allowed: the always-allowed app runs through it.
        let start = nextMinute()
        let set = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", clock(start), "--to",
            clock(start.addingTimeInterval(30 * 60)))
        #expect(set.status == 0, "\(set.stderr)")
        Thread.sleep(until: start.addingTimeInterval(-2))
        #expect(!world.isFrozen(counter), "frozen before downtime")
        #expect(eventually(10) { world.isFrozen(counter) })
        #expect(!world.isFrozen(sleeper) && !world.isFrozen(newSleeper), "the always-allowed app is held in downtime")
        // Taken off the list during downtime: held at once.
        let removed = try world.cli(
            as: world.guardian, "allow", "--user", world.child, "--remove", "--app", "org.example.Sleeper")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(eventually { world.isFrozen(sleeper) && world.isFrozen(newSleeper) })
        #expect(try world.cli(as: world.guardian, "downtime", "--user", world.child, "--off").status == 0)
        #expect(eventually { !world.isFrozen(counter) && !world.isFrozen(sleeper) })
    }

    @Test func grantsAddUpAndOneEndedEarlyHoldsTheAppAgainByTheTimeTheGuardiansCommandReturns() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        #expect(eventually { world.isFrozen(counter) })
        let asked = try world.cli(as: world.child, "ask", "--app", "org.example.Counter", "--minutes", "5", "--json")
        #expect(asked.status == 0, "\(asked.stderr)")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let ask = try decoder.decode(TimeRequestReport.self, from: Data(asked.stdout.utf8))
        // 15 minutes, then 15 more on top of them: half an hour from now.
        let start = Date()
        let first = try world.cli(as: world.guardian, "grant", "\(ask.id)", "--for", "15m", "--json")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(eventually { !world.isFrozen(counter) })
        let second = try world.cli(as: world.guardian, "grant", "\(ask.id)", "--for", "15m", "--json")
        let added = try decoder.decode(TimeRequestReport.self, from: Data(second.stdout.utf8))
        let until = try #require(added.until)
        #expect(abs(until.timeIntervalSince(start) - 1_800) < 30, "until \(until), granted at \(start)")
        #expect(!world.isFrozen(counter))
        // The child cannot end it; a guardian ends it, and the app is held when the command returns.
        #expect(try world.cli(as: world.child, "grant", "--end", "\(ask.id)").status == 77)
        let ended = try world.cli(as: world.guardian, "grant", "--end", "\(ask.id)")
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(world.isFrozen(counter), "still running when 'grant --end' returned")
        let requests = try world.cli(as: world.guardian, "requests", "--json")
        let listed = try decoder.decode([TimeRequestReport].self, from: Data(requests.stdout.utf8))
        #expect(listed.first { $0.id == ask.id }?.state == .ended)
        // Ended for good: a restart does not bring it back.
        world.kill9()
        try world.start()
        Thread.sleep(forTimeInterval: 2)
        #expect(world.isFrozen(counter))
    }

    func killedAroundABoundaryTheAgentTellsTheStartOnceAfterItsRestart() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let installed = try Installed(world)
        defer { installed.remove() }
        try authorize(world, world.child)
        let program = try installed.script(
            "monitor", "input=$(cat); echo \"$(date +%s) $input\" >> \(installed.notes)/calls")
        let start = nextMinute(margin: 20)
        let set = try world.cli(
            as: world.guardian, "monitor", "start", "evening", "--user", world.child, "--from", clock(start), "--to",
            clock(start.addingTimeInterval(20 * 60)), "--repeats", "--extension", program)
        #expect(set.status == 0, "\(set.stderr)")
        // Down across the boundary.
        Thread.sleep(until: start.addingTimeInterval(-3))
        world.kill9()
        Thread.sleep(until: start.addingTimeInterval(4))
        #expect(installed.lines("calls").isEmpty)
        try world.start()
        #expect(eventually(10) { installed.lines("calls").count == 1 })
        #expect(installed.lines("calls").first?.contains("intervalDidStart") == true)
        // Killed again once the run is recorded, and restarted: nothing is told twice. (Killed
        // while the extension still runs, it is run again at the restart: at least once.)
        #expect(
            eventually(10) {
                (try? monitors(world, world.child).monitors.first?.lastRun?.callback) == "intervalDidStart"
            })
        world.kill9()
        try world.start()
        Thread.sleep(forTimeInterval: 4)
        world.kill9()
        try world.start()
        Thread.sleep(forTimeInterval: 3)
        #expect(installed.lines("calls").count == 1, "\(installed.lines("calls"))")
    }
}

extension ActivityIntegrationTests {
    /// Tests that wait out minutes of real time (a limit, a grant, a schedule's boundary):
    /// `scripts/run-tests` starts every `Long` suite's tests first, beside the others, so that
    /// none starts late and holds up the end of the run. (Their threads of their own are the
    /// parent suite's trait, which covers nested suites.)
    @Suite(.enabled(if: isRoot, "needs root: users, the launcher, the proc connector, freezing"))
    struct Long {
        @Test func aDailyLimitFreezesTheAppAfterItsTimeInFrontAndNotBefore() throws {
            try ActivityIntegrationTests().aDailyLimitFreezesTheAppAfterItsTimeInFrontAndNotBefore()
        }

        @Test func killedAroundABoundaryTheAgentTellsTheStartOnceAfterItsRestart() throws {
            try ActivityIntegrationTests().killedAroundABoundaryTheAgentTellsTheStartOnceAfterItsRestart()
        }
    }
}
