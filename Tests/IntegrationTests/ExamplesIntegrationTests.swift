import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// The seeds' apps, ported (Examples/), built with the package and run against the real agent as a
/// real guardian and child (Homework) and a real individual (Worklog), checked by what they do: the
/// app frozen in the hours, the extensions called, the shield's title from the configuration
/// extension, the week's report.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: users, the agent, the launcher, other users' X servers"))
struct ExamplesIntegrationTests {
    private func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    private func clock(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// The examples' extensions, installed as a guardian would: root's, in a root-owned directory.
    private func install(_ names: [String], for world: AgentWorld) throws -> String {
        let directory = "/usr/local/lib/screentime-test-\(world.id)-examples"
        try Files.makeDirectory(directory, mode: 0o755)
        for name in names {
            try system("/usr/bin/install", "-m", "0755", AgentWorld.binaries + "/" + name, directory + "/" + name)
        }
        return directory
    }

    /// Runs an example program as a user, with the world's socket.
    private func example(
        _ name: String, as user: String, _ arguments: [String], environment extra: [String: String] = [:]
    ) throws -> CommandResult {
        var environment = ["SCREENTIME_SOCKET": "", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
        environment.merge(extra) { $1 }
        return try run(
            "/usr/bin/setpriv",
            ["--reuid=\(user)", "--regid=users", "--init-groups", "--", AgentWorld.binaries + "/" + name] + arguments,
            environment: environment)
    }

    private func window(_ desktop: XDesktop, titled title: String) -> String? {
        desktop.shown(["--name", "^\(title)$"])
    }

    @Test func homeworkShieldsThePickedAppDuringHomeworkHoursWithItsOwnShield() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let directory = try install(["homework-monitor", "homework-shield", "homework-action"], for: world)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The app's library, as its installer makes it: the guardians may write it, the extension
        // account may read what is in it.
        let library = "/var/lib/homework"
        try Files.makeDirectory(library, mode: 0o755)
        try system("/usr/bin/chgrp", world.guardianGroup, library)
        chmod(library, 0o2775)
        defer { Files.remove("\(library)/\(world.child).json") }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        #expect(try eventually(15) { try world.status(of: world.child).sessions?.isEmpty == false })

        var start = Calendar.current.nextDate(
            after: Date(), matching: DateComponents(second: 0), matchingPolicy: .nextTime)!
        if start.timeIntervalSinceNow < 15 { start.addTimeInterval(60) }
        let environment = ["SCREENTIME_SOCKET": world.socket, "HOMEWORK_EXTENSIONS": directory]
        let setup = try example(
            "homework", as: world.guardian,
            [
                "setup", "--child", world.child, "--app", "org.example.Counter", "--from", clock(start), "--to",
                clock(start.addingTimeInterval(20 * 60)),
            ], environment: environment)
        #expect(setup.status == 0, "\(setup.stderr)")
        #expect(setup.stdout.contains("homework hours set for \(world.child): 1 apps"), "\(setup.stdout)")
        // The app's monitor, of the app's own client.
        let listed = try world.cli(as: world.guardian, "monitor", "list", "--user", world.child)
        #expect(listed.stdout.contains("homework/homework"), "\(listed.stdout)")
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        Thread.sleep(until: start.addingTimeInterval(-2))
        #expect(!world.isFrozen(counter), "shielded before homework time")
        // Homework time: the monitor extension shields it, and the shield is the app's own.
        #expect(eventually(10) { world.isFrozen(counter) })
        var shown: String?
        #expect(
            eventually(5) {
                shown = window(desktop, titled: "Homework first"); return shown != nil
            })
        let status = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(status.stdout.contains("homework/homework"), "the store is the app's: \(status.stdout)")
        // "Ask for more time": the action extension defers; the shield stays.
        _ = try desktop.runXdotool(["windowactivate", "--sync", try #require(shown)])
        _ = try desktop.runXdotool(["key", "--clearmodifiers", "Tab", "Return"])
        Thread.sleep(forTimeInterval: 2)
        #expect(window(desktop, titled: "Homework first") != nil)
        #expect(world.isFrozen(counter))
        let asked = try example(
            "homework", as: world.guardian, ["status", "--child", world.child], environment: environment)
        #expect(asked.stdout.contains("shielded now: 1 apps"), "\(asked.stdout)")
        // Stopped: lifted.
        let stopped = try example(
            "homework", as: world.guardian, ["stop", "--child", world.child], environment: environment)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(eventually(5) { !world.isFrozen(counter) })
    }

    @Test func worklogWarnsThenShieldsDistractionsAndReportsTheWeek() throws {
        let world = try AgentWorld(configuration: ["idleTimeout": "600"])
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Terminal", name: "Terminal", exec: "/usr/bin/xterm", categories: "System;")
        let directory = try install(["worklog-monitor", "worklog-report"], for: world)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let individual = try world.makeUser("stwork")
        var desktop = try XDesktop(world: world, user: individual)
        defer { desktop.stop() }
        try desktop.open(as: individual, "/usr/bin/xterm", ["-class", "Distraction", "-e", "/bin/sleep", "600"])
        #expect(eventually(30) { desktop.window("Distraction") != nil })
        let environment = ["SCREENTIME_SOCKET": world.socket, "WORKLOG_EXTENSIONS": directory]
        let now = Date()
        let setup = try example(
            "worklog", as: individual,
            [
                "setup", "--app", "org.example.Terminal", "--from", clock(now.addingTimeInterval(-60)), "--to",
                clock(now.addingTimeInterval(30 * 60)), "--after", "1",
            ], environment: environment)
        #expect(setup.status == 0, "\(setup.stderr)")
        #expect(setup.stdout.contains("worklog is on: approved"), "\(setup.stdout)")
        // The individual's own monitor, of the app's client; the session found.
        #expect(try eventually(15) { try world.status(of: individual).sessions?.isEmpty == false })
        let terminal = try #require(
            try run("/usr/bin/pgrep", ["-u", individual, "-f", "xterm -class Distraction"]).stdout
                .split(separator: "\n").first.flatMap { Int32($0) })
        try desktop.activate("Distraction")
        // The warning first (5 minutes before a 1-minute threshold: at once), a notice.
        #expect(eventually(10) { window(desktop, titled: "5 minutes of distractions left") != nil })
        // A minute in front: shielded for the rest of the work day, with a notice.
        #expect(eventually(90) { world.isFrozen(terminal) })
        #expect(eventually(10) { window(desktop, titled: "Back to work") != nil })
        let report = try example("worklog", as: individual, ["report"], environment: environment)
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains("Worklog, week of") && report.stdout.contains("Terminal"), "\(report.stdout)")
        let stopped = try example("worklog", as: individual, ["stop"], environment: environment)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(eventually(5) { !world.isFrozen(terminal) })
    }
}
