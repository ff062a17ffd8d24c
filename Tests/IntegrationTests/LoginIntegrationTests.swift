import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import Testing

/// Logins through real PAM: a PAM application (`Fixtures/pamlogin.c`, what login, sshd and su do)
/// runs a stack with the hook as the package installs it (pam_exec, `screentime-pam`), against a
/// real agent: downtime and the day's screen time with `--no-login` refuse a child's login with a
/// message and lock its open sessions, a guardian's grant lifts it, a text session's time counts,
/// and a stopped or hung agent fails closed for the child and open for everyone else.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: users, PAM as root, freezing"))
struct LoginIntegrationTests {
    /// A PAM stack of the world's own with the hook, and the fixture that logs in through it.
    final class Logins {
        let world: AgentWorld
        let service: String
        let program: String

        init(_ world: AgentWorld, timeout: Int = 2) throws {
            self.world = world
            service = "screentime-login-\(world.id)"
            program = try world.compile("pamlogin", libraries: ["pam"])
            let hook =
                "\(AgentWorld.binaries)/screentime-pam --socket \(world.socket) --state-dir \(world.directory)/state --timeout \(timeout)"
            try """
            account required pam_unix.so
            account required pam_exec.so quiet stdout seteuid \(hook)
            session required pam_exec.so quiet stdout seteuid \(hook)

            """.write(toFile: "/etc/pam.d/\(service)", atomically: true, encoding: .utf8)
        }

        /// Logs a user in and out at once: the fixture's exit status and what it printed.
        func login(_ user: String, tty: String = "tty63") throws -> CommandResult {
            try run(program, [service, user, tty, "0"])
        }

        /// Logs a user in and keeps the session open (until tear-down); its output goes to `output`.
        func open(_ user: String, tty: String, output: String) throws -> Int32 {
            try world.launch(as: nil, program, [service, user, tty, "3600"], output: output)
        }

        func remove() { unlink("/etc/pam.d/\(service)") }
    }

    /// A pseudo-terminal to log in on: its master (read for what the agent writes to the
    /// session) and its name.
    private func terminal() throws -> (master: Int32, name: String) {
        let terminal = try PseudoTerminal.open()
        return (terminal.master, terminal.path)
    }

    private func drain(_ master: Int32) -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(master, &buffer, buffer.count)
            guard count > 0 else { break }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        return text
    }

    private func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try condition()
    }

    private func weekday(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_GB")
        formatter.dateFormat = "EEEE"
        return formatter.string(from: date)
    }

    private func clock(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// An Xvfb of the child's on a display number no other test has, up and listening. Tests run
    /// side by side and take numbers too: one taken between the look and the start makes this
    /// Xvfb exit, and then another number is tried.
    private func startXvfb(_ world: AgentWorld, environment: [String] = []) throws -> Int32 {
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        chmod("/tmp/.X11-unix", 0o1777)
        for _ in 0..<5 {
            let number = XDesktop.freeNumber(in: 7000...7900)
            let pid = try world.launch(
                as: world.child, "/usr/bin/Xvfb", [":\(number)", "-nolisten", "tcp"], environment: environment)
            let listening = eventually { Files.exists("/tmp/.X11-unix/X\(number)") || kill(pid, 0) != 0 }
            // Still there a moment after the socket appeared: the socket is its own.
            Thread.sleep(forTimeInterval: 0.3)
            if listening, kill(pid, 0) == 0, world.processState(pid) != "Z" { return pid }
            kill(pid, SIGKILL)
            _ = world.wait(pid, seconds: 5)
        }
        throw WorldError("no Xvfb of the child's came up in five tries")
    }

    private func contents(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    @Test func downtimeWithNoLoginRefusesTheChildsLoginLocksItsOpenSessionAndAGrantLiftsIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        // A text session open before downtime, on a terminal the test reads, and a program of the child's.
        let (master, tty) = try terminal()
        defer { close(master) }
        let sessionLog = world.directory + "/session.log"
        _ = try logins.open(world.child, tty: tty, output: sessionLog)
        #expect(eventually { contents(sessionLog).contains("session: ok") }, "\(contents(sessionLog))")
        // Terminal names leading to a file of the child's (PAM_TTY comes from the login program,
        // but nothing of it is trusted): the lock's message is written to terminals only.
        let bait = try world.childDirectory() + "/bait"
        try system(
            "/usr/bin/setpriv", "--reuid=\(world.child)", "--regid=users", "--init-groups", "--", "/usr/bin/touch", bait
        )
        let fifo = try world.childDirectory() + "/fifo"
        try system(
            "/usr/bin/setpriv", "--reuid=\(world.child)", "--regid=users", "--init-groups", "--", "/usr/bin/mkfifo",
            fifo)
        for (index, name) in ["/dev/pts/../..\(bait)", bait, "../..\(bait)", fifo].enumerated() {
            _ = try logins.open(world.child, tty: name, output: world.directory + "/bait\(index).log")
        }
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        #expect(eventually { world.count(output) != nil })
        var status = try world.status(of: world.child)
        #expect(status.logins?.contains { $0.kind == "tty" && $0.tty == tty && $0.service == logins.service } == true)
        #expect(status.sessions?.contains { $0.kind == .tty && $0.display == tty } == true, "counted as a session")
        #expect(status.loginLock == nil)

        // The child cannot tell the agent of logins itself (its hook runs as itself).
        let forgedLog = world.directory + "/forged.log"
        _ = try world.launch(
            as: world.child, logins.program, [logins.service, world.child, "tty62", "3600"], output: forgedLog)
        #expect(eventually { contents(forgedLog).contains("session:") }, "\(contents(forgedLog))")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try world.status(of: world.child).logins?.contains { $0.tty == "tty62" } != true)

        // Downtime in progress, with --no-login: in force when the command returns.
        let now = Date()
        let set = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", clock(now.addingTimeInterval(-60)), "--to",
            clock(now.addingTimeInterval(30 * 60)), "--no-login")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("downtime, no login"), "\(set.stdout)")
        status = try world.status(of: world.child)
        #expect(status.loginLock?.reason == "downtime")
        #expect(eventually { world.isFrozen(counter) }, "the open session's programs are held")
        #expect(eventually { drain(master).contains("This session is locked. It is downtime until") })
        #expect(contents(bait).isEmpty, "the agent wrote to a file the child named as its terminal")
        #expect(try world.status(of: world.child).loginLock != nil, "the agent answers after a FIFO as terminal")

        let refused = try logins.login(world.child)
        #expect(refused.status == 1, "\(refused.stdout)")
        // The end, said with its day when it is past midnight (a run near midnight: "until Friday at 00:13").
        let end = now.addingTimeInterval(30 * 60)
        let day = Calendar.current.isDate(end, inSameDayAs: Date()) ? "" : weekday(end) + " at "
        #expect(refused.stdout.contains("say: It is downtime until \(day)\(clock(end))."), "\(refused.stdout)")
        #expect(refused.stdout.contains("\(world.child) may log in again then."), "\(refused.stdout)")
        // Everyone else logs in as before.
        for user in [world.bystander, world.guardian, "root"] {
            let other = try logins.login(user)
            #expect(other.status == 0 && other.stdout.contains("session: ok"), "\(user): \(other.stdout)")
        }
        let grant = try world.cli(
            as: world.guardian, "grant", "--user", world.child, "--screen-time", "--minutes", "10")
        #expect(grant.status == 0, "\(grant.stderr)")
        #expect(grant.stdout.contains("granted \(world.child) 10 minutes of screen time"), "\(grant.stdout)")
        #expect(try logins.login(world.child).status == 0)
        #expect(eventually { !world.isFrozen(counter) }, "a grant thaws the session")
        status = try world.status(of: world.child)
        #expect(status.loginLock?.grantedUntil != nil)
        #expect(
            try world.cli(as: world.child, "grant", "--user", world.child, "--screen-time", "--minutes", "600")
                .status != 0, "a child grants itself nothing")

        #expect(try world.cli(as: world.guardian, "downtime", "--user", world.child, "--off").status == 0)
        #expect(try world.status(of: world.child).loginLock == nil)
    }

    @Test func anAgentThatIsDownOrHungRefusesTheChildAndLetsEveryoneElseIn() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world, timeout: 2)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        #expect(try logins.login(world.child).status == 0, "allowed while the agent answers")
        // The list the hook falls back on: root's alone.
        let listed = world.directory + "/state/login-children"
        #expect(contents(listed).contains(" \(world.child) child\n"), "\(contents(listed))")
        #expect(try Files.mode(of: listed) == 0o600)

        // Hung: the hook waits no longer than its timeout, then fails closed for the child.
        let agent = try #require(world.agentPID)
        kill(agent, SIGSTOP)
        let started = Date()
        let hung = try logins.login(world.child)
        let waited = Date().timeIntervalSince(started)
        #expect(hung.status == 1 && hung.stdout.contains("Screen Time is not answering"), "\(hung.stdout)")
        #expect(waited < 10, "waited \(waited) s")
        let guardianStarted = Date()
        #expect(try logins.login(world.guardian).status == 0, "the guardian is never locked out")
        // Not an authorized user: the hook does not even ask the agent.
        #expect(Date().timeIntervalSince(guardianStarted) < 2, "the guardian waited for a hung agent")
        kill(agent, SIGCONT)
        #expect(try logins.login(world.child).status == 0)

        // Down: the same.
        world.kill9()
        let down = try logins.login(world.child)
        #expect(down.status == 1 && down.stdout.contains("Screen Time is not answering"), "\(down.stdout)")
        for user in [world.bystander, world.guardian, "root"] {
            #expect(try logins.login(user).status == 0, "\(user) logs in while the agent is down")
        }
        try world.start()
        #expect(try logins.login(world.child).status == 0)
    }

    @Test func aTextSessionCountsAsScreenTimeAndTheDaysScreenTimeWithNoLoginThenRefusesLogins() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let (master, tty) = try terminal()
        defer { close(master) }
        let sessionLog = world.directory + "/session.log"
        let opened = Date()
        _ = try logins.open(world.child, tty: tty, output: sessionLog)
        #expect(eventually { contents(sessionLog).contains("session: ok") }, "\(contents(sessionLog))")
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--screen-time", "1m", "--no-login")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("screen time, no login"), "\(set.stdout)")
        // Warned at once (less than 5 minutes are left), locked once the minute is used.
        #expect(eventually { drain(master).contains("Today's screen time ends in 5 minutes") })
        #expect(eventually(90) { (try? world.status(of: world.child).loginLock?.reason) == "screen time" })
        #expect(Date().timeIntervalSince(opened) >= 59, "locked only once the minute was used")
        let refused = try logins.login(world.child)
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stdout.contains("say: Today's screen time is used up."), "\(refused.stdout)")
        let report = try world.cli(as: world.guardian, "report", "--user", world.child, "--today", "--json")
        let decoded = try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any]
        let applications = decoded?["applications"] as? [[String: Any]] ?? []
        let text = applications.first { ($0["name"] as? String) == "Text session (tty)" }
        #expect(((text?["seconds"] as? Double) ?? 0) >= 59, "\(report.stdout)")
        #expect(
            try world.cli(as: world.guardian, "grant", "--user", world.child, "--screen-time", "--minutes", "5")
                .status == 0)
        #expect(try logins.login(world.child).status == 0)
        let off = try world.cli(as: world.guardian, "limit", "--user", world.child, "--screen-time", "off")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(try world.status(of: world.child).loginLock == nil)
    }

    /// A session whose leader is killed, its close hook never run (an sshd ended with SIGKILL):
    /// the agent sees the leader end (its pidfd) and ends the session, which `status` then no
    /// longer lists.
    @Test func aLoginWhoseLeaderIsKilledEndsWithoutItsCloseHook() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let (master, tty) = try terminal()
        defer { close(master) }
        let sessionLog = world.directory + "/session.log"
        let leader = try logins.open(world.child, tty: tty, output: sessionLog)
        #expect(eventually { contents(sessionLog).contains("session: ok") }, "\(contents(sessionLog))")
        #expect(try world.status(of: world.child).logins?.contains { $0.tty == tty } == true)
        kill(leader, SIGKILL)
        #expect(world.wait(leader, seconds: 5) == 128 + SIGKILL)
        #expect(
            eventually {
                guard let status = try? world.status(of: world.child) else { return false }
                return status.logins?.contains { $0.tty == tty } != true
            }, "the session of a killed leader is still listed")
    }

    /// Only what draws the screen runs on while locked, as the system installed it: a copy of a
    /// program named as a display server, a real one that preloads the child's code, and a
    /// program bind-mounted over a compositor's path in a namespace of the child's are held. So
    /// are (restrictions, second round) a real one into which she loaded a library of hers with
    /// `gdb -p` before the lock, one started with a module path of hers (GIO_EXTRA_MODULES), and
    /// a shield window she started herself from the system's copy.
    @Test func whileLockedOnlyTheSystemsOwnDisplayServerRunsNothingDressedAsOne() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let home = try world.childDirectory()
        let server = try startXvfb(world)
        let preloading = try startXvfb(world, environment: ["LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6"])
        try world.giveChild(copyOf: "/bin/sleep", at: home + "/Xvfb")
        let copy = try world.launch(as: world.child, home + "/Xvfb", ["600"])
        let mounted = try world.launch(
            as: world.child, "/usr/bin/unshare",
            ["-r", "-m", "/bin/sh", "-c", "mount --bind /bin/sleep /usr/bin/sway && exec /usr/bin/sway 600"])
        let injected = try startXvfb(world)
        let library = home + "/evil.so"
        try system("/usr/bin/cc", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("evil.c"))
        try system("/usr/bin/chown", world.child, library)
        let gdb = try world.command(
            as: world.child, "/usr/bin/gdb",
            ["-p", "\(injected)", "-batch", "-ex", "call (void*)dlopen(\"\(library)\", 2)", "-ex", "detach"])
        let maps = (try? run("/bin/cat", ["/proc/\(injected)/maps"]))?.stdout ?? ""
        #expect(maps.contains(library), "her library is not in the server: \(gdb.stdout) \(gdb.stderr)")
        let modules = try startXvfb(world, environment: ["GIO_EXTRA_MODULES=\(home)/modules"])
        // A program installed as the system's shield window, started by her (not by the agent's
        // launcher). (A copy of sleep: the test's own build of the window maps the toolchain's
        // Swift libraries from /opt, which alone would hold it.)
        let installed = "/usr/local/libexec/screentime-test-\(world.id)"
        try Files.makeDirectory(installed, mode: 0o755)
        defer { try? FileManager.default.removeItem(atPath: installed) }
        try system("/usr/bin/install", "-m", "0755", "/bin/sleep", installed + "/screentime-shield")
        let window = try world.launch(as: world.child, installed + "/screentime-shield", ["600"])
        Thread.sleep(forTimeInterval: 1)
        let now = Date()
        let set = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", clock(now.addingTimeInterval(-60)), "--to",
            clock(now.addingTimeInterval(30 * 60)), "--no-login")
        #expect(set.status == 0, "\(set.stderr)")
        for (pid, what) in [
            (preloading, "a display server preloading the child's code"), (copy, "a copy named Xvfb"),
            (mounted, "a program mounted over sway's path"), (injected, "a display server with her library loaded"),
            (modules, "a display server with a module path of hers"), (window, "a shield window she started"),
        ] {
            #expect(
                eventually { world.isFrozen(pid) },
                "\(what) runs on while locked (state \(world.processState(pid).map { String($0) } ?? "gone"))")
        }
        Thread.sleep(forTimeInterval: 1)
        #expect(!world.isFrozen(server), "the system's Xvfb draws the lock")
        #expect(try world.cli(as: world.guardian, "downtime", "--user", world.child, "--off").status == 0)
        #expect(eventually { !world.isFrozen(copy) })
    }
}
