import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// Logins through real PAM: a PAM application (`Fixtures/pamlogin.c`, what login, sshd and su do)
/// runs a stack with the module as the package installs it (`pam_screentime.so`), against a
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
            let module =
                "\(try world.compilePAMModule()) socket=\(world.socket) state_dir=\(world.directory)/state timeout=\(timeout)"
            try """
            account required pam_unix.so
            account required \(module)
            session required \(module)

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

    /// A text session of the child's on a terminal the test holds, once it says it is open: the
    /// terminal's master end (the caller closes it), the tty, the session's leader and its log.
    private func openSession(
        _ world: AgentWorld, _ logins: Logins
    ) throws -> (master: Int32, tty: String, leader: Int32, log: String) {
        let (master, tty) = try terminal()
        let log = world.directory + "/session.log"
        do {
            let leader = try logins.open(world.child, tty: tty, output: log)
            #expect(eventually { contents(log).contains("session: ok") }, "\(contents(log))")
            return (master, tty, leader, log)
        } catch {
            close(master)
            throw error
        }
    }

    private func contents(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    @Test func downtimeWithNoLoginRefusesTheChildsLoginLocksItsOpenSessionAndAGrantLiftsIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        // A text session open before downtime, on a terminal the test reads, and a program of the child's.
        let (master, tty, _, sessionLog) = try openSession(world, logins)
        defer { close(master) }
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

    /// The module speaks the control socket's protocol itself (it is C, in the login's own
    /// process): a name with quotes, backslashes, a control character and non-ASCII reaches the
    /// agent as written; the agent's message comes back unescaped (a surrogate pair too); a reply it
    /// does not understand, or none, fails closed for a listed child and open for anyone else.
    @Test func theModuleSaysTheNameAsWrittenAndTheAgentsMessageAsSaid() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let state = world.directory + "/fake-state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/fake-agent.py"
        let socket = world.directory + "/fake.sock"
        let service = "screentime-fake-\(world.id)"
        try """
        account required \(try world.compilePAMModule()) socket=\(socket) state_dir=\(state) timeout=1
        session required pam_permit.so

        """.write(toFile: "/etc/pam.d/\(service)", atomically: true, encoding: .utf8)
        defer { unlink("/etc/pam.d/\(service)") }
        let login = try world.compile("pamlogin", libraries: ["pam"])
        func attempt(_ user: String, reply: String, listed: String? = nil) throws -> (CommandResult, LoginRequest?) {
            let requestFile = world.directory + "/fake-request.json"
            unlink(requestFile)
            unlink(socket)
            if let listed { try listed.write(toFile: state + "/login-children", atomically: true, encoding: .utf8) }
            let fake = try world.launch(as: nil, "/usr/bin/python3", [script, socket, requestFile, reply])
            defer { kill(fake, SIGKILL) }
            #expect(eventually { Files.exists(socket) })
            let result = try run(login, [service, user, "tty7", "0"])
            struct Envelope: Decodable {
                var version: Int
                var kind: String
                var body: LoginRequest
            }
            let request = (try? Data(contentsOf: URL(fileURLWithPath: requestFile))).flatMap {
                try? JSONDecoder().decode(Envelope.self, from: $0)
            }
            #expect(request == nil || (request?.version == 1 && request?.kind == "login"))
            return (result, request?.body)
        }
        // No list (the agent never wrote one): everyone is asked about.
        let name = "o\"brien\\x\u{1}y-\u{e9}"
        let (refused, asked) = try attempt(
            name, reply: #"{"version":1,"result":{"allowed":false,"message":"nein \u00fc \ud83d\ude00 \"q\"\n"}}"#)
        #expect(asked?.user == name && asked?.phase == .account && asked?.tty == "tty7" && asked?.service == service)
        #expect(
            refused.status == 1 && refused.stdout.contains("say: nein \u{fc} \u{1F600} \"q\"\n"), "\(refused.stdout)")
        let (allowed, _) = try attempt("kim", reply: #"{"version":1,"result":{"allowed":true}}"#)
        #expect(allowed.status == 0 && !allowed.stdout.contains("say:"), "\(allowed.stdout)")
        // What it does not understand, or no answer: closed for a listed child only.
        for reply in [
            #"{"version":2,"result":{"allowed":true}}"#, #"{"version":1,"result":{"allowed":"yes"}}"#, "{", "--silent",
        ] {
            let (child, _) = try attempt("kim", reply: reply, listed: "1234 kim child\n")
            #expect(
                child.status == 1 && child.stdout.contains("say: Screen Time is not answering"),
                "\(reply): \(child.stdout)")
            let (individual, _) = try attempt("kim", reply: reply, listed: "1234 kim individual\n")
            #expect(individual.status == 0, "\(reply): \(individual.stdout)")
        }
        // Listed, and not the user logging in: the agent is not asked at all (it would refuse).
        let (other, unasked) = try attempt(
            "sam", reply: #"{"version":1,"result":{"allowed":false}}"#, listed: "1234 kim child\n")
        #expect(other.status == 0 && unasked == nil, "\(other.stdout)")
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
        let opened = Date()
        let (master, tty, _, sessionLog) = try openSession(world, logins)
        defer { close(master) }
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--screen-time", "1m", "--no-login")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("screen time, no login"), "\(set.stdout)")
        // Warned at once (less than the 1-minute warning is left: with the minute it has), locked
        // once the minute is used.
        #expect(eventually { drain(master).contains("Today's screen time ends in 1 minute") })
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

    @Test func aGuardianLocksTheChildNowOrForTheRestOfTheDayAndNoGrantButUnlockLiftsIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let (master, _, _, _) = try openSession(world, logins)
        defer { close(master) }
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        #expect(eventually { world.count(output) != nil })

        // The child cannot lock or unlock; a guardian locks until unlocked.
        // (While locked, nothing of the child's runs: not even its own screentime.)
        #expect(try world.cli(as: world.child, "lock", "--user", world.child).status == 77)
        #expect(try world.cli(as: world.child, "lock", "--user", world.child, "--off").status == 77)
        let locked = try world.cli(as: world.guardian, "lock", "--user", world.child)
        #expect(
            locked.status == 0 && locked.stdout.contains("locked until a guardian unlocks it"),
            "\(locked.stdout) \(locked.stderr)")
        #expect(try world.status(of: world.child).loginLock?.reason == "guardian")
        #expect(world.isFrozen(counter), "the session ran on after 'lock' returned")
        #expect(eventually { drain(master).contains("A guardian locked this account") })
        let refused = try logins.login(world.child)
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stdout.contains("once a guardian unlocks it"), "\(refused.stdout)")
        // More screen time does not lift it, and says what does.
        let grant = try world.cli(as: world.guardian, "grant", "--user", world.child, "--screen-time", "--for", "1h")
        #expect(grant.status != 0 && grant.stderr.contains("locked by a guardian"), "\(grant.stderr)")
        let off = try world.cli(as: world.guardian, "lock", "--user", world.child, "--off")
        #expect(off.status == 0 && off.stdout.contains("is unlocked"), "\(off.stdout)")
        #expect(eventually { !world.isFrozen(counter) })
        #expect(try logins.login(world.child).status == 0)

        // For the rest of the day: until the next midnight, by the machine's clock.
        let rest = try world.cli(as: world.guardian, "lock", "--user", world.child, "--for", "rest-of-day")
        #expect(rest.status == 0, "\(rest.stderr)")
        let midnight = Calendar.current.startOfDay(for: Date().addingTimeInterval(86_400))
        let until = try #require(try world.status(of: world.child).loginLock?.until)
        #expect(abs(until.timeIntervalSince(midnight)) < 2, "locked until \(until), not midnight \(midnight)")
        #expect(world.isFrozen(counter))
        let tonight = try logins.login(world.child)
        #expect(
            tonight.status == 1 && tonight.stdout.contains("A guardian locked this account until"), "\(tonight.stdout)")
        // A restart keeps it.
        world.kill9()
        try world.start()
        #expect(try logins.login(world.child).status == 1)
        // `unlock` lifts it as well.
        let unlocked = try world.cli(as: world.guardian, "unlock", "--user", world.child)
        #expect(unlocked.status == 0 && unlocked.stdout.contains("a guardian's lock was lifted"), "\(unlocked.stdout)")
        #expect(eventually { !world.isFrozen(counter) })
        #expect(try logins.login(world.child).status == 0)
    }

    @Test func aLockLogsTheChildOutLocksItsScreenOrSuspendsAsTheGuardianChose() throws {
        // What suspends the computer here: a script that writes down that it ran.
        let marker = "/tmp/screentime-suspended-\(UUID().uuidString)"
        let script = marker + ".sh"
        try "#!/bin/sh\necho suspended > \(marker)\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        defer {
            unlink(script)
            unlink(marker)
        }
        // logind: a mock on a bus of the test's own (no logind runs here), which writes down the
        // calls made to it.
        let logind = try LogindMock()
        defer { logind.stop() }
        let world = try AgentWorld(
            configuration: ["suspendCommand": "\"\(script)\"", "logindBus": "\"\(logind.address)\""])
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        #expect(try world.cli(as: world.child, "lockout", "--user", world.child, "logout").status == 77)
        let wrong = try world.cli(as: world.guardian, "lockout", "--user", world.child, "reboot")
        #expect(wrong.status != 0 && wrong.stderr.contains("hold, lock-screen, logout or suspend"), "\(wrong.stderr)")
        let chosen = try world.cli(as: world.guardian, "lockout", "--user", world.child, "logout")
        #expect(chosen.status == 0 && chosen.stdout.contains("logout"), "\(chosen.stdout) \(chosen.stderr)")

        // Logged out: the session's leader and every program of the child's end.
        let (master, _, leader, _) = try openSession(world, logins)
        defer { close(master) }
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        #expect(eventually { world.count(output) != nil })
        #expect(try world.cli(as: world.guardian, "lock", "--user", world.child).status == 0)
        // (Both are the test's children: ended, they wait as zombies to be reaped.)
        func ended(_ pid: Int32) -> Bool { [nil, "Z"].contains(world.processState(pid)) }
        #expect(
            eventually(15) { ended(counter) && ended(leader) },
            "counter \(world.processState(counter).map { String($0) } ?? "gone"), leader \(world.processState(leader).map { String($0) } ?? "gone")"
        )
        #expect(try eventually { try world.status(of: world.child).logins == nil })
        #expect(try logins.login(world.child).status == 1, "logged out, and still locked")
        #expect(!Files.exists(marker))
        #expect(try world.cli(as: world.guardian, "lock", "--user", world.child, "--off").status == 0)
        // Started as soon as the lock is lifted, while the logout's passes of kills (1.5 s) would
        // still be going: it is left alone.
        let second = try world.launch(as: world.child, world.counter, [output + "-2"])
        #expect(eventually { world.count(output + "-2") != nil })
        Thread.sleep(forTimeInterval: 2)
        #expect(!ended(second), "killed after the lock was lifted")

        // Suspend: held, and the computer suspended (the script ran).
        #expect(try world.cli(as: world.guardian, "lockout", "--user", world.child, "suspend").status == 0)
        #expect(try world.cli(as: world.guardian, "lock", "--user", world.child).status == 0)
        #expect(eventually { Files.exists(marker) }, "the suspend command did not run")
        #expect(world.isFrozen(second), "held while suspended")
        // A restart with the lock in force only holds: the computer is not suspended again.
        unlink(marker)
        world.kill9()
        try world.start()
        Thread.sleep(forTimeInterval: 2)
        #expect(!Files.exists(marker), "suspended again at the agent's restart")
        #expect(world.isFrozen(second))
        #expect(try world.cli(as: world.guardian, "lockout", "--user", world.child).stdout.contains("suspend"))
        #expect(try world.cli(as: world.guardian, "lock", "--user", world.child, "--off").status == 0)

        // Lock the screen: held, and logind asked to lock each of the child's sessions (the
        // desktop then shows its lock screen), not the guardian's.
        let directory = UserDirectory()
        try logind.addSession(
            "c4", uid: try directory.user(world.child).uid, name: world.child, display: ":97", leader: second)
        try logind.addSession(
            "c5", uid: try directory.user(world.guardian).uid, name: world.guardian, display: ":96", leader: getpid())
        func lockCalls(_ session: String) throws -> Int {
            Int(
                try logind.python(
                    "len([c for c in session('\(session)').GetCalls(dbus_interface=MOCK) if c[1] == 'Lock'])"
                ).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        #expect(try world.cli(as: world.guardian, "lockout", "--user", world.child, "lock-screen").status == 0)
        #expect(try world.cli(as: world.guardian, "lock", "--user", world.child).status == 0)
        #expect(try eventually { try lockCalls("c4") == 1 }, "the child's screen was not locked")
        #expect(try lockCalls("c5") == 0, "the guardian's screen was locked")
        #expect(world.isFrozen(second), "held behind the locked screen")
        #expect(!Files.exists(marker), "suspended on lock-screen")
    }

    @Test func timeInAFreePeriodCountsTowardNoScreenTimeAndCountsOnceItIsRemoved() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let now = Date()
        let free = try world.cli(
            as: world.guardian, "free", "--user", world.child, "--from", clock(now.addingTimeInterval(-60)), "--to",
            clock(now.addingTimeInterval(30 * 60)))
        #expect(free.status == 0 && free.stdout.contains("[free time]"), "\(free.stdout) \(free.stderr)")
        let (master, _, _, _) = try openSession(world, logins)
        defer { close(master) }
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--screen-time", "1m", "--no-login")
        #expect(set.status == 0, "\(set.stderr)")
        // Over a minute of a text session in free time: nothing counted, nothing locked.
        Thread.sleep(forTimeInterval: 70)
        let status = try world.status(of: world.child)
        #expect(status.loginLock == nil, "locked in free time")
        let used = status.limits?.first { $0.name == "screen time" }?.usedSeconds ?? -1
        #expect(used >= 0 && used < 5, "counted \(used) s of free time")
        #expect(try logins.login(world.child).status == 0)
        // The free period removed: the minute was used, and the lock comes at once.
        let off = try world.cli(as: world.guardian, "free", "--user", world.child, "--off")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(eventually(15) { (try? world.status(of: world.child).loginLock?.reason) == "screen time" })
    }

    @Test func theWeeksScreenTimeUsedUpLocksTheChildUntilMonday() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let logins = try Logins(world)
        defer { logins.remove() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let opened = Date()
        let (master, _, _, _) = try openSession(world, logins)
        defer { close(master) }
        // A day's time far from used, a week's of a minute: the tighter holds.
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--screen-time", "8h", "--weekly-screen-time", "1m",
            "--no-login")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("screen time (week)"), "\(set.stdout)")
        #expect(eventually { drain(master).contains("This week's screen time ends in 1 minute") })
        #expect(eventually(90) { (try? world.status(of: world.child).loginLock?.reason) == "weekly screen time" })
        #expect(Date().timeIntervalSince(opened) >= 59, "locked only once the minute was used")
        let status = try world.status(of: world.child)
        #expect(status.stores.contains { $0.name == "screen-time-weekly" })
        #expect(!status.stores.contains { $0.name == "screen-time" }, "the day's 8 hours are not used up")
        // Until Monday 00:00.
        let monday = Calendar.current.nextDate(
            after: Date(), matching: DateComponents(hour: 0, minute: 0, weekday: 2), matchingPolicy: .nextTime)
        #expect(status.loginLock?.until == monday)
        let refused = try logins.login(world.child)
        #expect(
            refused.status == 1 && refused.stdout.contains("This week's screen time is used up."), "\(refused.stdout)")
        // A grant of screen time lifts the week's too.
        #expect(
            try world.cli(as: world.guardian, "grant", "--user", world.child, "--screen-time", "--for", "5m").status
                == 0)
        #expect(try logins.login(world.child).status == 0)
        // The week's alone removed: the day's stays.
        let off = try world.cli(as: world.guardian, "limit", "--user", world.child, "--weekly-screen-time", "off")
        #expect(
            off.status == 0 && !off.stdout.contains("(week)") && off.stdout.contains("screen time"), "\(off.stdout)")
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
        let (master, tty, leader, _) = try openSession(world, logins)
        defer { close(master) }
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

extension LoginIntegrationTests {
    /// Storms of forks, and floods of connections, with both processors kept busy: every agent on
    /// the machine reads each of them, so they run with no other test beside them
    /// (`scripts/run-tests` runs every `Alone` suite by itself).
    @Suite(.threadsOfTheirOwn, .serialized, .enabled(if: isRoot, "needs root: users, freezing"))
    struct Alone {
        /// Anyone may fill the agent's queue of waiting connections: a helper's attack as a
        /// sibling (two loops of connects for 8 s, which also keep both processors busy) made
        /// every login of an allowed child fail closed, "not answering". The module tries again
        /// until its deadline: the child the agent allows gets in.
        @Test func anAllowedChildLogsInWhileASiblingFloodsTheAgentsSocket() throws {
            let world = try AgentWorld()
            defer { world.tearDown() }
            let logins = try Logins(world, timeout: 5)
            defer { logins.remove() }
            #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
            let flood = """
                import socket, sys, time
                end = time.time() + 8
                while time.time() < end:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        s.connect(sys.argv[1])
                    except OSError:
                        pass
                    s.close()
                """
            let began = Date()
            let floods = try (0..<2).map { _ in
                try world.launch(as: world.bystander, "/usr/bin/python3", ["-c", flood, world.socket])
            }
            defer { for pid in floods { kill(pid, SIGKILL) } }
            Thread.sleep(forTimeInterval: 1)
            for attempt in 0..<3 {
                let login = try logins.login(world.child)
                #expect(login.status == 0 && login.stdout.contains("session: ok"), "\(attempt): \(login.stdout)")
            }
            for pid in floods { _ = world.wait(pid, seconds: 10) }
            // The connections turned away are written down once every 10 s with their count, not
            // a line each (a helper's flood like this one wrote 4 MB of them in 5 s): the first at
            // once, the rest with the first connection 10 s later.
            func lines() -> [Substring] {
                world.agentLog(naming: ["turned connections away"], last: 100).split(separator: "\n")
            }
            Thread.sleep(until: began.addingTimeInterval(10))
            while lines().count < 2 && Date() < began.addingTimeInterval(25) {
                #expect(try world.cli(as: world.guardian, "ping").status == 0)
                Thread.sleep(forTimeInterval: 0.5)
            }
            let lines = lines()
            #expect(lines.count == 2, "\(lines.count) lines: \(lines.prefix(3))")
            #expect(lines.first?.contains("count=1 ") == true)
            let rest = lines.dropFirst().first.flatMap { line in
                line.split(separator: " ").first { $0.hasPrefix("count=") }.flatMap { Int($0.dropFirst(6)) }
            }
            // Several turned away, in one line. (How many depends on how fast the flood runs
            // beside the agent: 23 and 83 on a loaded machine, hundreds on an idle one.)
            #expect((rest ?? 0) > 1, "\(lines)")
        }

        /// Found by a hostile child's try: grandchildren born of a process that had already
        /// exited (a double fork) when the lock came in force were not held, and ran until the
        /// agent next read the policy.
        @Test func nothingBornOfADoubleForkRunsThroughALock() throws {
            let world = try AgentWorld()
            defer { world.tearDown() }
            #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
            let program = try world.compile("doublefork")
            let uid = try #require(getpwnam(world.child)?.pointee.pw_uid)
            let inspector = ProcessInspector()
            func processes() -> [Int32] { inspector.pids().filter { inspector.status(pid: $0)?.uid == uid } }
            /// The child's processes that run: not held, not ended.
            func running() -> [Int32] {
                processes().filter { !world.isFrozen($0) && ![nil, "Z"].contains(world.processState($0)) }
            }
            // Both processors busy, as on a family PC with a game and a browser (the agent's
            // reading of the forks falls behind, which is when the lock lands between them).
            var busy: [Int32] = []
            for _ in 0..<2 { busy.append(try world.launch(as: nil, "/bin/sh", ["-c", "while :; do :; done"])) }
            defer {
                for pid in busy { kill(pid, SIGKILL) }
                for pid in busy { _ = world.wait(pid, seconds: 5) }
            }
            var escaped: [String] = []
            // A race: each try is a chance for the lock to land between a middle process's fork
            // and its child's (5 in 8 of the helper's tries on a busy machine).
            for trial in 0..<12 {
                let spawner = try world.launch(as: world.child, program, [])
                Thread.sleep(forTimeInterval: 0.7)
                let locked = try world.cli(as: world.guardian, "lock", "--user", world.child)
                #expect(locked.status == 0, "\(locked.stderr)")
                // Held when the command returns: a moment for what was being judged then.
                Thread.sleep(forTimeInterval: 0.7)
                let loose = running()
                if !loose.isEmpty { escaped.append("trial \(trial): \(loose)") }
                #expect(try world.cli(as: world.guardian, "lock", "--user", world.child, "--off").status == 0)
                // The grandchildren first, reaped by the spawner, then the spawner.
                for pid in processes() where pid != spawner { kill(pid, SIGKILL) }
                Thread.sleep(forTimeInterval: 0.3)
                kill(spawner, SIGKILL)
                _ = world.wait(spawner, seconds: 5)
                for pid in processes() { kill(pid, SIGKILL) }
            }
            #expect(escaped.isEmpty, "ran through the lock: \(escaped)")
        }
    }
}
