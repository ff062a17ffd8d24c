import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// A child who knows Linux, against a real agent: each test is one way around (the commands of
/// the issue that found it, where they apply), made by a real process of the child's, and checks
/// that the shield holds while the agent goes on serving everyone else.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: users, the agent, other users' processes"))
struct HostileChildIntegrationTests {
    /// The control server's connections per non-guardian user (`ControlServer.perUserLimit`).
    static let perUserLimit = 4

    private func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    private func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    // MARK: the control socket

    /// Finding 9: forty connections trickling a byte at a time kept every slot. Now the child gets
    /// four, the rest are told "busy", the guardian is answered meanwhile, and each trickled frame
    /// is dropped at its deadline however many bytes came.
    /// Thousands of programs started at once, each judged: judgements run late, and the agent's
    /// judge timer and the process shield once waited on each other for good (status and a
    /// guardian's shield hung; a new program ran unshielded). The agent answers through it, and
    /// after it a newly shielded program is held.
    func anExecStormLeavesTheAgentAnsweringAndShielding() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let storm = try world.launch(
            as: world.child, "/bin/sh",
            ["-c", "for j in $(seq 30); do (for i in $(seq 200); do /bin/true; done) & done; wait"])
        let ended = world.wait(storm, seconds: 120)
        #expect(ended == 0, "the storm did not end in 120 s; what is left of it:\n\(leftOfStorm(world))")
        let asked = Date()
        let status = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(Date().timeIntervalSince(asked) < 10, "status took \(Date().timeIntervalSince(asked)) s")
        let again = try world.launch(as: world.child, world.counter, [world.directory + "/after-storm"])
        #expect(eventually { world.isFrozen(again) })
    }

    /// An exec that waits on its own process (the attack of 2026-12-02, second round): the game
    /// is started from a second thread while the first process traces a third, so the exec waits
    /// in the kernel until that tracer reaps it, four seconds on; the first thread is a zombie
    /// meanwhile. The gate's late hold was taken for an ended process and let go, and the game
    /// ran once the tracer let the exec finish. Held through it now.
    @Test func anExecWaitingOnATracedSiblingIsHeldThroughIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let program = world.directory + "/bin/tracedsibling"
        try system("/usr/bin/cc", "-O1", "-pthread", "-o", program, AgentWorld.fixture("tracedsibling.c"))
        let output = home + "/traced.out"
        let tracer = try world.launch(
            as: world.child, program, ["4", world.counter, home + "/traced"], output: output)
        var game: Int32?
        #expect(
            eventually(10) {
                game = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").first
                    .flatMap { Int32($0) }
                return game != nil
            })
        let pid = try #require(game)
        // Held by the gate at once, and never let go while the exec waits (the gate's late looks
        // come after a second) nor after it.
        #expect(eventually(5) { world.isFrozen(pid) })
        var loose: [Double] = []
        let start = Date()
        while Date().timeIntervalSince(start) < 6 {
            if !world.isFrozen(pid) { loose.append(Date().timeIntervalSince(start)) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(loose.isEmpty, "out of the frozen group at \(loose.prefix(5)) s: \(world.agentLog())")
        #expect(eventually(20) { world.isHeld(pid, running: world.counter) }, "\(world.agentLog())")
        Thread.sleep(forTimeInterval: 1)
        #expect(!Files.exists(home + "/traced"), "the game reached main()")
        #expect(world.processState(tracer) != nil)
    }

    /// The attack of 2026-12-02: thousands of forks at once, each an exec of the shielded game.
    /// The gate held each inside its exec; but with the machine that busy an exec could take
    /// longer than a second after the gate's answer, and the gate's hold was then taken for one
    /// whose exec had failed and let go — the game ran (176 of 12,000 by hand). Every one stays
    /// held: none of them makes its counter's file, which it does first thing in `main()`.
    func aStormOfShieldedExecsHoldsEveryOne(_ count: Int) throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let storm = world.directory + "/bin/execstorm"
        try system("/usr/bin/cc", "-O1", "-o", storm, AgentWorld.fixture("execstorm.c"))
        #expect(try asChild(world, "mkdir \(home)/storm").status == 0)
        let output = home + "/storm.out"
        let forker = try world.launch(
            as: world.child, storm, ["\(count)", world.counter, home + "/storm"], output: output)
        let counter = URL(fileURLWithPath: world.counter).resolvingSymlinksInPath().path
        var running: [(pid: Int32, uid: UInt32)] = []
        #expect(
            eventually(180) {
                running = processes(running: counter)
                return running.count == count
            },
            "\(running.count) of \(count) counters: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        // Every one held, once the agent has read what the storm made.
        var loose: [Int32] = []
        let settled = eventually(180) {
            loose = running.map(\.pid).filter { !world.isFrozen($0) && world.processState($0) != nil }
            return loose.isEmpty
        }
        #expect(
            settled, "\(loose.count) counters not held, \(loose.prefix(5)): \(world.agentLog(naming: nil, last: 20))")
        let ran = ((try? FileManager.default.contentsOfDirectory(atPath: home + "/storm")) ?? []).count
        #expect(ran == 0, "\(ran) of \(count) reached main(): \(world.agentLog(naming: nil, last: 20))")
        #expect(world.processState(forker) != nil)
        // Her thousands of held processes do not make the guardian's status too long to send.
        let status = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(
            status.stdout.contains("and \(count - ProcessShieldReport.frozenListed) more"),
            "\(status.stdout.suffix(500))")
    }

    /// The child slows her own exec of the game down (2026-12-02): it runs as `SCHED_IDLE` while
    /// forty loops of hers keep both cores busy, so the rest of its exec, after the gate's
    /// answer, waits seconds for a core. The gate's hold was taken, after a second, for one whose
    /// exec had failed, and let go: the game ran once its exec was done. Held through it now.
    func anExecTheChildSlowsDownIsHeldThroughIt() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let busy = try world.launch(
            as: world.child, "/bin/sh",
            ["-c", "for i in $(seq 40); do (while :; do :; done) & done; wait"])
        defer { _ = try? run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-x", "sh"]) }
        Thread.sleep(forTimeInterval: 0.5)
        var games: [Int32] = []
        for index in 0..<4 {
            games.append(
                try world.launch(as: world.child, "/usr/bin/chrt", ["-i", "0", world.counter, home + "/slow-\(index)"]))
        }
        Thread.sleep(forTimeInterval: 8)
        kill(busy, SIGKILL)
        _ = try? run("/usr/bin/pkill", ["-KILL", "-u", world.child, "-x", "sh"])
        // Run as SCHED_IDLE, they wait for every other runnable task on the machine first.
        #expect(
            eventually(60) { games.allSatisfy { world.isHeld($0, running: world.counter) } },
            "\(games.map { "\($0): \(world.processState($0).map(String.init) ?? "gone") \(Files.readLink("/proc/\($0)/exe") ?? "?") \(world.isFrozen($0) ? "frozen" : "not frozen")" })\n\(world.agentLog())"
        )
        Thread.sleep(forTimeInterval: 0.3)
        let ran = (0..<4).filter { (world.count(home + "/slow-\($0)") ?? 0) > 0 || Files.exists(home + "/slow-\($0)") }
        #expect(ran.isEmpty, "reached main(): \(ran)")
    }

    /// The child's processes still there (state, freezer group, program), what the agent says of
    /// its holds, and its log's end: what a storm that does not end was waiting on.
    private func leftOfStorm(_ world: AgentWorld) -> String {
        var out = ""
        let uid = (try? UserDirectory().user(world.child).uid) ?? UInt32.max
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), FileStatus.of(path: "/proc/\(entry)")?.owner == uid else { continue }
            let program = Files.readLink("/proc/\(entry)/exe") ?? "?"
            let state = world.processState(pid).map { String($0) } ?? "gone"
            out += "  \(pid) \(state) \(world.cgroup(of: pid) ?? "?") \(program)\n"
            if out.count > 3_000 { break }
        }
        if let status = try? world.cli(as: world.guardian, "status", "--user", world.child) {
            out += String(status.stdout.prefix(2_000)) + "\n"
        }
        return out + world.agentLog(naming: nil, last: 30)
    }

    @Test func theChildCannotTieUpTheControlSocket() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let output = world.directory + "/trickle.out"
        let trickle = try world.launch(
            as: world.child, "/usr/bin/python3",
            [AgentWorld.fixture("trickle.py"), world.socket, "40", "1", "16"], output: output)
        #expect(eventually { lines(output).contains { $0.hasPrefix("open ") } })
        let report = lines(output)
        #expect(report.contains("busy 36"), "\(report)")
        #expect(report.contains("open \(Self.perUserLimit)"), "\(report)")

        // While the child holds its four: the guardian is served, the child's fifth is told busy.
        let status = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(status.status == 0, "\(status.stderr)")
        let childsOwn = try world.cli(as: world.child, "status")
        #expect(childsOwn.status == 75, "\(childsOwn.stderr)")
        #expect(childsOwn.stderr.contains("[busy]"))

        // Each trickled frame ends at its deadline (10 s from its first byte), not when the
        // child stops sending.
        #expect(world.wait(trickle, seconds: 30) == 0)
        let closed = lines(output).filter { $0.hasPrefix("closed ") }.compactMap { Double($0.dropFirst(7)) }
        #expect(closed.count == Self.perUserLimit, "\(lines(output))")
        #expect(closed.allSatisfy { $0 < 14 }, "\(closed)")
        #expect(lines(output).contains("still-open 0"))
        #expect(try world.cli(as: world.child, "status").status == 0)
    }

    /// Limits a guardian's request never meets: root and guardians find a slot while every
    /// other user holds all theirs.
    @Test func guardiansFindASlotWhileOthersHoldTheirs() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        // Every user made first: on a loaded machine making one takes seconds, and the holders'
        // connections end 10 s after their first byte (the agent's deadline).
        let users = try (0..<6).map { try world.makeUser("sth\($0)") }
        let late = try world.makeUser("stlate")
        // Six other users hold four connections each: 24, all that non-guardians may have.
        let outputs = users.indices.map { world.directory + "/hold\($0).out" }
        let holders = try zip(users, outputs).map { user, output in
            try world.launch(
                as: user, "/usr/bin/python3", [AgentWorld.fixture("trickle.py"), world.socket, "4", "1", "8"],
                output: output)
        }
        for output in outputs {
            #expect(eventually { lines(output).contains("open 4") }, "\(lines(output))")
        }
        // A seventh is turned away: the rest is kept for guardians.
        #expect(try world.cli(as: late, "ping").status == 75)
        #expect(try world.cli(as: world.guardian, "ping").status == 0)
        #expect(try world.cli(as: nil, "status", "--user", world.child).status == 0)
        for holder in holders { _ = world.wait(holder, seconds: 30) }
        #expect(try world.cli(as: late, "ping").status == 0)
    }

    // MARK: files read for callers

    /// Finding 7: the agent hashed whatever path a caller named, as root. Now the caller opens
    /// the program and passes it; the agent takes regular files only, and a path in a request
    /// is refused.
    @Test func theAgentReadsNoPathForACallerAndOnlyRegularFiles() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        // An individual may mint tokens for themself.
        #expect(try world.cli(as: world.bystander, "authorize", "--individual").status == 0)
        let home = try world.childDirectory()
        try system("/usr/bin/chown", world.bystander, home)
        let fifo = home + "/fifo"
        #expect(mkfifo(fifo, 0o644) == 0)
        try system("/usr/bin/chown", world.bystander, fifo)

        for path in ["/dev/zero", fifo] {
            let result = try world.cli(as: world.bystander, "token", "app", path)
            #expect(result.status == 65, "\(path): \(result.stderr)")
            #expect(result.stderr.contains("not a regular file"), "\(path): \(result.stderr)")
        }
        // A secret the caller cannot read: no token of it, whatever is tried.
        let secret = world.directory + "/secret-pin"
        try "4711\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let refused = try world.cli(as: world.bystander, "token", "app", secret)
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(!refused.stdout.contains("="))
        // Asked by path in a hand-made request, as an old client would: refused, nothing read.
        let request = String(
            decoding: try RequestEnvelope.encode(TokenRequest(kind: .app, identity: secret)), as: UTF8.self)
        let raw = try world.inNetwork(
            as: world.bystander, "/usr/bin/python3", [AgentWorld.fixture("raw-request.py"), world.socket, request])
        #expect(raw.stdout.contains("invalidArgument"), "\(raw.stdout) \(raw.stderr)")
        // The agent is not held by any of it.
        #expect(try world.cli(as: nil, "ping").status == 0)

        // A guardian names a program by path as before; its copy has the same token.
        let copy = home + "/copy"
        try system("/usr/bin/cp", world.counter, copy)
        let original = try world.cli(as: world.guardian, "token", "app", world.counter)
        let copied = try world.cli(as: world.bystander, "token", "app", copy)
        #expect(original.status == 0 && copied.status == 0, "\(original.stderr) \(copied.stderr)")
        #expect(original.stdout == copied.stdout)
    }

    /// A report's time zone is a name the child sends: the agent reads it only as a name of the
    /// system's zone database, never as a path (`..`, `/`, a FIFO or a device of hers), and a
    /// name that is none is refused, saying so, at once. Sent by a real child's process, as a
    /// hand-made request.
    @Test func aChildsTimeZoneIsANameNeverAPath() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let home = world.directory + "/child-home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let fifo = home + "/zone"
        #expect(mkfifo(fifo, 0o644) == 0)
        // A real zone file of hers: read as a path, it would be taken.
        let copy = home + "/tokyo"
        try system("/usr/bin/cp", "/usr/share/zoneinfo/Asia/Tokyo", copy)
        try system("/usr/bin/chown", "-R", world.child, home)
        func ask(_ zone: String) throws -> (reply: String, seconds: Double) {
            let now = Date()
            let request = String(
                decoding: try RequestEnvelope.encode(
                    ReportRequest(user: nil, from: now - 86_400, to: now, segments: .daily, timeZone: zone)),
                as: UTF8.self)
            let started = Date()
            let raw = try world.inNetwork(
                as: world.child, "/usr/bin/python3", [AgentWorld.fixture("raw-request.py"), world.socket, request])
            return (raw.stdout + raw.stderr, Date().timeIntervalSince(started))
        }
        let hostile = [
            "../../../../etc/shadow", "/etc/shadow", "Europe/../../../../etc/shadow", fifo, "/dev/zero",
            "../../../../\(fifo)", copy, "../../../..\(copy)", "Europe/Paris\u{0}x", "",
            String(repeating: "A/", count: 5000), "Europe",
        ]
        for zone in hostile {
            let (reply, seconds) = try ask(zone)
            #expect(
                reply.contains("invalidArgument") && reply.contains("unknown time zone"), "\(zone.prefix(80)): \(reply)"
            )
            #expect(!reply.contains("root:"), "\(zone.prefix(80)): \(reply)")
            print(
                "time zone \(String(reflecting: String(zone.prefix(40)))): refused after \(String(format: "%.2f", seconds)) s"
            )
        }
        // Her own zone by name is read, and the agent was held by none of it.
        let (paris, _) = try ask("Europe/Paris")
        #expect(!paris.contains("\"code\"") && paris.contains("applications"), "\(paris)")
        #expect(try world.cli(as: nil, "ping").status == 0)
        #expect(world.agentIsRunning)
    }

    /// The fourth attack, finding 1: a child's program posing as sway answered the agent's request
    /// for the window tree with one legal reply of millions of empty nodes (12 s of CPU and
    /// 320 MB a session), then closed, and the agent connected again twice a second. Now a reply
    /// of more than 200,000 values is refused before it is decoded, and a compositor that answers
    /// and then fails is tried less and less often: its session is one failing streak.
    @Test func aFakeSwayWithAWideTreeCostsTheAgentLittle() throws {
        // 650,000 empty nodes: 1.9 MB, under the 2 MB a message may have.
        let (tries, cpu, grown, world) = try fakeSway(["650000"], problem: "tree is not JSON")
        defer { world.tearDown() }
        // Backing off: 0.5, 1, 2, 4, 5, 5… s apart (twice a second before: about 40).
        #expect(tries <= 10, "\(tries) connections in 20 s")
        #expect(grown < 50_000, "the agent grew by \(grown) kB")
        print("her fake sway's wide tree: \(tries) connections in 20 s, \(cpu) s of the agent's CPU, RSS +\(grown) kB")
    }

    /// And one that floods window events once the tree is read: events faster than sway sends
    /// end the watch, which is tried less and less often.
    @Test func aFakeSwayFloodingEventsCostsTheAgentLittle() throws {
        let (tries, cpu, grown, world) = try fakeSway(["10", "flood"], problem: "larger or faster than sway sends")
        defer { world.tearDown() }
        #expect(tries <= 10, "\(tries) connections in 20 s")
        print(
            "her fake sway's flood of events: \(tries) connections in 20 s, \(cpu) s of the agent's CPU, RSS +\(grown) kB"
        )
    }

    /// Runs `wide-sway.py` with `arguments` as a real child's program, names its socket in the
    /// environment of another of hers, and watches the agent 20 s: the connections it made, its
    /// CPU seconds and its RSS growth (kB); its log must name `problem`, and it must answer.
    private func fakeSway(_ arguments: [String], problem: String) throws -> (Int, Double, Int, AgentWorld) {
        let world = try AgentWorld()
        do {
            #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
            let home = try world.childDirectory()
            let socket = home + "/sway.sock"
            let connections = home + "/connections"
            _ = try world.launch(
                as: world.child, "/usr/bin/python3",
                [AgentWorld.fixture("wide-sway.py"), socket, connections] + arguments)
            #expect(eventually(10) { Files.exists(socket) })
            let (cpuBefore, rssBefore) = (try world.agentCPUSeconds(), try world.agentMemory())
            // Her program that names it: the agent finds the session from its environment.
            _ = try world.launch(as: world.child, "/bin/sleep", ["120"], environment: ["SWAYSOCK=\(socket)"])
            #expect(eventually(10) { Files.exists(connections) }, "the agent never read her fake sway")
            Thread.sleep(forTimeInterval: 20)
            let tries = ((try? String(contentsOfFile: connections, encoding: .utf8)) ?? "").split(separator: "\n").count
            #expect(world.agentLog(naming: [problem], last: 1).contains(problem), "\(world.agentLog())")
            #expect(try world.cli(as: nil, "ping").status == 0)
            return (tries, try world.agentCPUSeconds() - cpuBefore, (try world.agentMemory() - rssBefore) / 1024, world)
        } catch {
            world.tearDown()
            throw error
        }
    }

    // MARK: guardian passwords

    /// Finding 10: thirty parallel connections gave twelve guesses a second. Now one check at a
    /// time per asker, waits that grow, every failure counted and shown, lifted by a guardian.
    @Test func guardianPasswordsCannotBeGuessedAtSpeed() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let script = """
            for i in $(seq 30); do
              echo wrong | \(AgentWorld.binaries)/screentime authorize --socket \(world.socket) --child \(world.child) --guardian \(world.guardian) >/dev/null 2>&1 &
            done
            wait
            """
        let started = Date()
        let guesses = try world.inNetwork(as: world.child, "/bin/sh", ["-c", script])
        #expect(guesses.status == 0)
        let elapsed = Date().timeIntervalSince(started)
        let status = try world.status(of: world.child)
        let failures = try #require(status.passwordFailures)
        // At most one guess per second of trying, plus the first (pam_unix answers a wrong
        // password in about two seconds, during which the others are turned away).
        #expect(failures.failures >= 1 && Double(failures.failures) <= 1 + elapsed, "\(failures) in \(elapsed) s")
        #expect(status.authorization.status == .notDetermined)
        let text = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(text.stdout.contains("Wrong guardian passwords: \(failures.failures)"))

        // More wrong guesses, until one is turned away with a wait of at least 5 s (the waits
        // double: 1, 2, 4, 8 s): then, straight after, the right password is refused without a
        // check, and the refusal says how long to wait. (Tried straight after the burst, or after
        // one more guess, the wait of a few failures had run out on a busy machine by then, three
        // times, and the right password went through.)
        var waitLeft = 0
        for _ in 0..<12 where waitLeft < 5 {
            let guess = try world.cli(
                as: world.child, arguments: ["authorize", "--child", world.child, "--guardian", world.guardian],
                input: "wrong\n")
            waitLeft =
                guess.stderr.firstMatch(of: /try again in ([0-9]+) s/).flatMap { Int($0.output.1) } ?? 0
            // (Locked out by then, on a very slow machine: refused until a guardian unlocks.)
            if guess.stderr.contains("is locked out") { waitLeft = .max }
            if waitLeft > 0, waitLeft < 5 { Thread.sleep(forTimeInterval: Double(waitLeft)) }
        }
        #expect(waitLeft >= 5, "no wait of 5 s or more after 12 wrong guesses")
        let again = try world.cli(
            as: world.child, arguments: ["authorize", "--child", world.child, "--guardian", world.guardian],
            input: world.guardianPassword + "\n")
        #expect(again.status == 77)
        #expect(again.stderr.contains("[tooManyAttempts]"), "\(again.stderr)")
        // A guardian lifts it; the right password works at once.
        let unlock = try world.cli(as: world.guardian, "unlock", "--user", world.child)
        #expect(unlock.status == 0, "\(unlock.stderr)")
        let right = try world.cli(
            as: world.child, arguments: ["authorize", "--child", world.child, "--guardian", world.guardian],
            input: world.guardianPassword + "\n")
        #expect(right.status == 0, "\(right.stderr)")
        #expect(try world.status(of: world.child).passwordFailures == nil)
        // Only a guardian lifts a lockout.
        #expect(try world.cli(as: world.child, "unlock", "--user", world.child).status == 77)
    }

    // MARK: the process shield

    private static let barely = ProcessShieldIntegrationTests.barely

    /// A time of day as the CLI takes it (HH:MM).
    static func clock(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    private func guardian(_ world: AgentWorld, _ arguments: String...) throws {
        let result = try world.cli(as: world.guardian, arguments: arguments)
        guard result.status == 0 else { throw WorldError("\(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    /// Runs a shell command as the child (with the world's socket), to its end.
    private func asChild(_ world: AgentWorld, _ command: String) throws -> CommandResult {
        try world.inNetwork(as: world.child, "/bin/sh", ["-c", command])
    }

    /// The processes of this machine running a file, with their uids.
    private func processes(running file: String) -> [(pid: Int32, uid: UInt32)] {
        let inspector = ProcessInspector()
        return inspector.pids().compactMap { pid in
            guard inspector.executable(pid: pid) == file, let uid = inspector.status(pid: pid)?.uid else { return nil }
            return (pid, uid)
        }
    }

    /// Finding 1: a FIFO as `.flatpak-info` in a sandbox the child made (`unshare -Ur chroot`),
    /// and a FIFO as a desktop entry, hung the watcher, every policy change and the agent's start.
    /// Now neither is waited on: the sandboxed program is judged and runs, shields apply to the
    /// child meanwhile, changes return, and the agent starts again with both in place.
    @Test func aFIFOInASandboxOrAsAnEntryHoldsNothingUp() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let sleeper = try world.compile("sleeper", static: true)
        let sandbox = home + "/fr"
        #expect(try asChild(world, "mkdir \(sandbox) && mkfifo \(sandbox)/.flatpak-info").status == 0)
        try world.giveChild(copyOf: sleeper, at: sandbox + "/static")
        #expect(try asChild(world, "mkfifo \(home)/.local/share/applications/x.desktop").status == 0)
        let sandboxed = try world.launch(
            as: world.child, "/usr/bin/unshare", ["-Ur", "/usr/sbin/chroot", sandbox, "/static", "/up"])
        // Judged (its .flatpak-info is no regular file: no Flatpak ID) and let run.
        #expect(eventually(10) { FileManager.default.fileExists(atPath: sandbox + "/up") })
        // Meanwhile the child's shielded program is held, and changes and status are answered.
        let file = home + "/count"
        let counter = try world.launch(as: world.child, world.counter, [file])
        #expect(eventually { world.isFrozen(counter) })
        Thread.sleep(forTimeInterval: 0.2)
        #expect((world.count(file) ?? 0) <= Self.barely)
        try guardian(world, "shield", "--user", world.child, "--app-category", "Game")
        #expect(try world.cli(as: world.guardian, "status", "--user", world.child).status == 0)
        // The agent starts again with both FIFOs in place, and holds what it held.
        world.kill9()
        try world.start()
        #expect(world.isFrozen(counter))
        try guardian(world, "unshield", "--user", world.child, "--app-category", "Game")
        #expect(world.processState(sandboxed) != nil)
    }

    /// Forty launches of a shielded program close together, each through setpriv: each process
    /// is held while its setpriv is judged, and that judgement ("run") may land while the gate
    /// holds its exec of the shielded program. Every one stays frozen. (A release slipping
    /// between the gate's move and its record of it let the program run in a loaded full run;
    /// this test did not catch that window here, unloaded or beside an exec storm.)
    @Test func shieldedLaunchesCloseTogetherAreEachFrozen() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        var pids: [Int32] = []
        for index in 0..<40 {
            pids.append(try world.launch(as: world.child, world.counter, [home + "/count-\(index)"]))
        }
        #expect(eventually(10) { pids.allSatisfy { world.isFrozen($0) } })
        Thread.sleep(forTimeInterval: 0.5)
        let ran = (0..<40).filter { (world.count(home + "/count-\($0)") ?? 0) > Self.barely }
        let loose = pids.filter { !world.isFrozen($0) }
        #expect(ran.isEmpty && loose.isEmpty, "counted: \(ran), not frozen: \(loose)")
    }

    /// A process the agent never saw forked (restrictions, second round): `clone(CLONE_PARENT)`
    /// gives a fork event naming the forker's parent. From a game's preloaded code the game that
    /// plays was taken for a fork of the shell (a shield added later did not freeze it); from a
    /// process init adopted it was not tracked at all (it ran through a lock). Each is judged
    /// from what it is now, while the bystander's same programs run untouched.
    @Test func aProcessForkedWithCloneParentIsJudgedLikeAnyOther() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let home = try world.makeHome(for: world.child)
        let library = world.directory + "/bin/leave.so"
        try system("/usr/bin/cc", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("cloneparent.c"))
        func pids(of user: String, running name: String) -> [Int32] {
            ((try? run("/usr/bin/pgrep", ["-u", user, "-x", name]))?.stdout ?? "").split(separator: "\n").compactMap {
                Int32($0)
            }
        }
        // The game, started by a shell with the library preloaded: what plays is a clone of it.
        _ = try world.launch(
            as: world.child, "/bin/sh", ["-c", "LD_PRELOAD=\(library) \(world.counter) \(home)/game; sleep 600"])
        let theirs = world.directory + "/theirs"
        _ = try world.launch(as: world.bystander, world.counter, [theirs])
        #expect(
            eventually(10) {
                pids(of: world.child, running: "counter").count == 1 && world.count(home + "/game") != nil
            })
        let game = try #require(pids(of: world.child, running: "counter").first)
        #expect(!world.isFrozen(game))
        let shield = try world.cli(as: world.guardian, "shield", "--user", world.child, "--app", "org.example.Counter")
        #expect(shield.status == 0, "\(shield.stderr)")
        #expect(eventually(10) { world.isFrozen(game) }, "the game's clone, taken for the shell: \(world.agentLog())")

        // Adopted by init, then a clone: the kernel names init as its parent.
        _ = try world.launch(
            as: world.child, "/usr/bin/python3", [AgentWorld.fixture("cloneparent.py"), home + "/play"])
        #expect(eventually(10) { Files.exists(home + "/play.pid") && world.count(home + "/play") != nil })
        let text = try String(contentsOfFile: home + "/play.pid", encoding: .utf8)
        let played = try #require(Int32(text))
        let now = Date()
        let downtime = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", Self.clock(now.addingTimeInterval(-60)),
            "--to",
            Self.clock(now.addingTimeInterval(30 * 60)), "--no-login")
        #expect(downtime.status == 0, "\(downtime.stderr)")
        #expect(eventually(10) { world.isFrozen(played) }, "init's clone under a lock: \(world.agentLog())")
        let before = world.count(home + "/play")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(world.count(home + "/play") == before, "it still counts")
        // The bystander's game was never touched.
        let bystanderGame = try #require(pids(of: world.bystander, running: "counter").first)
        #expect(!world.isFrozen(bystanderGame))
        #expect(world.agentIsRunning)
    }

    /// The same game on her desktop (restrictions, second round): its preloaded code clones it
    /// with `CLONE_PARENT` and exits, so the window in front is the clone's. Taken for a fork of
    /// the shell, it counted nothing toward the game's limit and a grant's end did not hold it
    /// again. Its time in front counts toward the limit, the limit holds it, a guardian's grant
    /// lets it play for the minute, and at the minute's end it is held again.
    func aGameThatLeftItsParentCountsTowardItsLimitAndIsHeldAgainWhenAGrantEnds() throws {
        let world = try AgentWorld(configuration: ["idleTimeout": "600"])
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Game", name: "Game", exec: "/usr/bin/xmessage", categories: "Game;")
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let library = world.directory + "/bin/leave.so"
        try system("/usr/bin/cc", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("cloneparent.c"))
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(
            as: world.child, "/bin/sh",
            ["-c", "LD_PRELOAD=\(library) /usr/bin/xmessage -name game 'a game'; sleep 600"])
        #expect(eventually(30) { desktop.window("XMessage") != nil }, "the game never showed")
        let found = try run("/usr/bin/pgrep", ["-u", world.child, "-x", "xmessage"]).stdout.split(separator: "\n")
        #expect(found.count == 1, "\(found)")
        let game = try #require(found.first.flatMap { Int32($0) })
        let shell = try #require(
            (try? String(contentsOfFile: "/proc/\(game)/stat", encoding: .utf8))?.split(separator: ")").last?
                .split(separator: " ").dropFirst(1).first.flatMap { Int32($0) })
        #expect(
            (try? String(contentsOfFile: "/proc/\(shell)/comm", encoding: .utf8)) == "sh\n",
            "what plays is not the shell's clone")
        try desktop.activate("XMessage")
        #expect(eventually { ((try? world.status(of: world.child).sessions?.first?.inFrontName) ?? nil) == "Game" })
        func reported() throws -> Double {
            let result = try world.cli(as: world.guardian, "report", "--user", world.child, "--today", "--json")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let report = try decoder.decode(UsageReport.self, from: Data(result.stdout.utf8))
            return report.applications.first { $0.id == "org.example.Game" }?.seconds ?? 0
        }
        let playedBefore = try reported()
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--app", "org.example.Game", "--daily", "1m")
        #expect(set.status == 0, "\(set.stderr)")
        let limited = Date()
        func used() -> Double? {
            guard let result = try? world.cli(as: nil, "monitor", "list", "--user", world.child, "--json"),
                result.status == 0
            else { return nil }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let reply = try? decoder.decode(MonitorListReply.self, from: Data(result.stdout.utf8))
            return reply?.monitors.first { $0.builtIn == "limit" }?.events.first?.usedSeconds
        }
        // A 1-minute limit is warned of at once, with the time it has (it said "5 minutes").
        #expect(
            eventually(10) {
                (try? desktop.runXdotool(["search", "--name", "^1 minute left today$"]))?.status == 0
            }, "no warning of the minute")
        // Counted toward the limit as the report counts the game (the warning took the focus for
        // a while: that time is not the game's).
        Thread.sleep(until: limited.addingTimeInterval(45))
        #expect(!world.isFrozen(game), "held before its time was up")
        let counted = used() ?? 0
        let inFront = try reported() - playedBefore
        #expect(
            counted > 30 && abs(counted - inFront) < 2,
            "the limit counted \(counted) s of the game's \(inFront) s in front")
        #expect(eventually(30) { world.isFrozen(game) }, "never held at its limit (counted \(used() ?? -1) s)")
        let atHold = used() ?? 0
        #expect(atHold >= 59 && atHold < 64, "held with \(atHold) s counted")
        // She asks, a guardian grants a minute: it plays, then is held again.
        let asked = try world.cli(as: world.child, "ask", "--app", "org.example.Game", "--minutes", "1", "--json")
        #expect(asked.status == 0, "\(asked.stderr)")
        let reply = try JSONSerialization.jsonObject(with: Data(asked.stdout.utf8)) as? [String: Any]
        let id = try #require(reply?["id"] as? Int, "\(asked.stdout)")
        let granted = try world.cli(as: world.guardian, "grant", "\(id)", "--minutes", "1")
        #expect(granted.status == 0, "\(granted.stderr)")
        let grantedAt = Date()
        #expect(eventually(5) { !world.isFrozen(game) }, "the grant did not let it play")
        Thread.sleep(until: grantedAt.addingTimeInterval(50))
        #expect(!world.isFrozen(game), "held again before the minute was over")
        #expect(eventually(20) { world.isFrozen(game) }, "not held again when the grant ended")
        #expect(Date().timeIntervalSince(grantedAt) < 70)
        #expect(world.agentIsRunning)
    }

    /// A game whose first thread ends before the others (restrictions, second round, third
    /// attack): its preloaded code runs main() on a second thread and ends the first with
    /// `pthread_exit`. The kernel tells the leader's exit while the game plays on: the agent
    /// forgot it, so a shield added later and a `--no-login` lock did not hold it, and its window
    /// counted as "unidentified". It is tracked as what it is until its last thread ends.
    @Test func aGameWhoseFirstThreadEndsIsStillTrackedAndHeld() throws {
        let world = try AgentWorld(configuration: ["idleTimeout": "600"])
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Game", name: "Game", exec: "/usr/bin/xmessage", categories: "Game;")
        try world.installDesktopEntry(
            id: "org.example.Counter", name: "Counter Game", exec: world.counter, categories: "Game;")
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let home = try world.makeHome(for: world.child)
        let library = world.directory + "/bin/leave-leader.so"
        try system(
            "/usr/bin/cc", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("leaveleader.c"), "-ldl", "-pthread")
        func leaderless(_ pid: Int32) -> Bool {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            return status.contains("State:\tZ")
                && ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count ?? 0) > 1
        }
        // Her game on her desktop: counted as itself while in front.
        var desktop = try XDesktop(world: world, user: world.child)
        defer { desktop.stop() }
        try desktop.open(
            as: world.child, "/bin/sh",
            ["-c", "LD_PRELOAD=\(library) /usr/bin/xmessage -name game 'a game'; sleep 600"])
        #expect(eventually(30) { desktop.window("XMessage") != nil }, "the game never showed")
        let shown = try #require(
            try run("/usr/bin/pgrep", ["-u", world.child, "-x", "xmessage"]).stdout.split(separator: "\n").first.flatMap
            {
                Int32($0)
            })
        #expect(leaderless(shown), "the game's first thread did not end")
        try desktop.activate("XMessage")
        #expect(
            eventually(10) { ((try? world.status(of: world.child).sessions?.first?.inFrontName) ?? nil) == "Game" },
            "in front: \(String(describing: (try? world.status(of: world.child).sessions?.first?.inFrontName) ?? nil))")

        // The counter, so: a shield added later holds it, lifted it plays, a lock holds it again.
        _ = try world.launch(
            as: world.child, "/bin/sh", ["-c", "LD_PRELOAD=\(library) \(world.counter) \(home)/game; sleep 600"])
        let theirs = try world.makeHome(for: world.bystander) + "/theirs"
        _ = try world.launch(
            as: world.bystander, "/bin/sh", ["-c", "LD_PRELOAD=\(library) \(world.counter) \(theirs); sleep 600"])
        #expect(eventually(10) { world.count(home + "/game") != nil && world.count(theirs) != nil })
        let game = try #require(
            try run("/usr/bin/pgrep", ["-u", world.child, "-x", "counter"]).stdout.split(separator: "\n").first.flatMap
            {
                Int32($0)
            })
        #expect(leaderless(game), "the counter's first thread did not end")
        // Its leader is gone from view: the thread that plays is what a freezer holds.
        let thread = try #require(ProcessInspector(root: "/proc").otherThread(pid: game))
        func counts() -> Bool {
            let before = world.count(home + "/game")
            Thread.sleep(forTimeInterval: 0.5)
            return world.count(home + "/game") != before
        }
        #expect(counts() && !world.isFrozen(thread))
        try guardian(world, "shield", "--user", world.child, "--app", "org.example.Counter")
        #expect(eventually(10) { world.isFrozen(thread) }, "a later shield did not hold it: \(world.agentLog())")
        #expect(!counts(), "it still counts")
        try guardian(world, "unshield", "--user", world.child, "--app", "org.example.Counter")
        #expect(eventually(10) { !world.isFrozen(thread) } && counts(), "lifted, it did not play")
        let now = Date()
        let downtime = try world.cli(
            as: world.guardian, "downtime", "--user", world.child, "--from", Self.clock(now.addingTimeInterval(-60)),
            "--to",
            Self.clock(now.addingTimeInterval(30 * 60)), "--no-login")
        #expect(downtime.status == 0, "\(downtime.stderr)")
        #expect(eventually(10) { world.isFrozen(thread) }, "the lock did not hold it")
        #expect(!counts(), "it counts through the lock")
        // The bystander's same game was never touched.
        let before = world.count(theirs)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(world.count(theirs) != before, "the bystander's game stopped")
        #expect(world.agentIsRunning)
    }

    /// The same game whose first thread ended before the agent read it (started before the
    /// child was authorized; under load, a judge reading after the leader's exit): the leader's
    /// `exe` is gone with it, and the game is read through a live thread, as what it is. A
    /// shield holds it and lifting the shield lets it play (a full run once saw it stay held).
    @Test func aGameWhoseFirstThreadEndedBeforeItWasReadIsJudgedAsWhatItIs() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.installDesktopEntry(
            id: "org.example.Counter", name: "Counter Game", exec: world.counter, categories: "Game;")
        let home = try world.makeHome(for: world.child)
        let library = world.directory + "/bin/leave-leader.so"
        try system(
            "/usr/bin/cc", "-shared", "-fPIC", "-o", library, AgentWorld.fixture("leaveleader.c"), "-ldl", "-pthread")
        _ = try world.launch(
            as: world.child, "/bin/sh", ["-c", "LD_PRELOAD=\(library) \(world.counter) \(home)/game; sleep 600"])
        #expect(eventually(10) { world.count(home + "/game") != nil })
        let game = try #require(
            try run("/usr/bin/pgrep", ["-u", world.child, "-x", "counter"]).stdout.split(separator: "\n").first.flatMap
            {
                Int32($0)
            })
        let thread = try #require(ProcessInspector(root: "/proc").otherThread(pid: game))
        #expect(Files.readLink("/proc/\(game)/exe") == nil, "the leader's exe is still there")
        func counts() -> Bool {
            let before = world.count(home + "/game")
            Thread.sleep(forTimeInterval: 0.5)
            return world.count(home + "/game") != before
        }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        try guardian(world, "shield", "--user", world.child, "--app", "org.example.Counter")
        #expect(eventually(10) { world.isFrozen(thread) }, "the shield did not hold it: \(world.agentLog())")
        #expect(!counts(), "it still counts")
        try guardian(world, "unshield", "--user", world.child, "--app", "org.example.Counter")
        #expect(eventually(10) { !world.isFrozen(thread) } && counts(), "lifted, it did not play")
        try guardian(world, "shield", "--user", world.child, "--app-category", "Game")
        #expect(eventually(10) { world.isFrozen(thread) }, "a category shield did not hold it")
    }

    /// Finding 2: the child's own desktop entry for a shielded app (`Hidden=true`, or
    /// `NoDisplay=true` with other categories) removed it from the catalogue, and the app ran.
    @Test func theChildsOwnEntriesLiftNoShield() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let entry = home + "/.local/share/applications/org.example.Counter.desktop"
        #expect(try asChild(world, "printf '[Desktop Entry]\\nHidden=true\\n' > \(entry)").status == 0)
        // Frozen before the next rebuild, and still after it.
        let first = try world.launch(as: world.child, world.counter, [home + "/count-1"])
        #expect(eventually { world.isFrozen(first) })
        try guardian(world, "shield", "--user", world.child, "--domain", "example.test")
        #expect(world.isFrozen(first))
        let second = try world.launch(as: world.child, world.counter, [home + "/count-2"])
        #expect(eventually { world.isFrozen(second) })
        // Renamed, hidden from menus and re-categorised: a Game shield still holds it.
        let copy = """
            [Desktop Entry]
            Type=Application
            Name=Homework
            Exec=\(world.counter)
            NoDisplay=true
            Categories=Education;
            """
        try copy.write(toFile: entry, atomically: false, encoding: .utf8)
        try guardian(world, "shield", "--user", world.child, "--app-category", "Game")
        try guardian(world, "unshield", "--user", world.child, "--app", "org.example.Counter")
        #expect(world.isFrozen(first) && world.isFrozen(second))
        let third = try world.launch(as: world.child, world.counter, [home + "/count-3"])
        #expect(eventually { world.isFrozen(third) })
        Thread.sleep(forTimeInterval: 0.2)
        for name in ["count-1", "count-2", "count-3"] { #expect((world.count(home + "/" + name) ?? 0) <= Self.barely) }
    }

    /// Finding 3: `cp ld.so ~/l; ~/l game` and `ld.so --glibc-hwcaps-mask x game` ran shielded and
    /// blocked programs. The child may not open a shielded or blocked program at all (so no
    /// loader can map it), and a copied loader is known by its content.
    @Test func loaderTricksRunNoShieldedProgram() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let loader = try #require(ProcessShieldIntegrationTests.loader())
        #expect(try asChild(world, "cp \(loader) \(home)/l").status == 0)
        // Each way either stops before the program's first instruction (held as the program it
        // runs) or fails to open it (refused): never does the program run.
        let attempts: [[String]] = [
            [home + "/l", world.counter, home + "/c0"],
            [loader, "--glibc-hwcaps-mask", "x", world.counter, home + "/c1"],
            [loader, "--argv0", "homework", "--inhibit-cache", world.counter, home + "/c2"],
        ]
        for (index, attempt) in attempts.enumerated() {
            let pid = try world.launch(as: world.child, attempt[0], Array(attempt.dropFirst()))
            #expect(eventually { world.isFrozen(pid) || world.wait(pid, seconds: 0.01) != nil }, "\(attempt)")
            Thread.sleep(forTimeInterval: 0.2)
            #expect((world.count(home + "/c\(index)") ?? 0) <= Self.barely, "\(attempt) ran")
        }
        // Read as a file, it cannot be copied either.
        let cat = try asChild(world, "cat \(world.counter) > \(home)/copy.bin")
        #expect(cat.status != 0 && cat.stderr.contains("Operation not permitted"), "\(cat.stderr)")
        // A copy the agent has not seen, run by the copied loader: frozen all the same.
        try world.giveChild(copyOf: world.counter, at: home + "/homework")
        let run = try world.launch(as: world.child, home + "/l", [home + "/homework", home + "/c4"])
        #expect(eventually { world.isFrozen(run) })
        Thread.sleep(forTimeInterval: 0.2)
        #expect((world.count(home + "/c4") ?? 0) <= Self.barely)
        // Blocked: refused at exec, and the loaders still cannot open it.
        try guardian(world, "block", "--user", world.child, "--app", "org.example.Counter")
        #expect(try asChild(world, "\(world.counter) \(home)/c5").status == 126)
        let blockedLoader = try world.launch(as: world.child, home + "/l", [world.counter, home + "/c6"])
        #expect(eventually { world.wait(blockedLoader, seconds: 0.01) != nil || world.isFrozen(blockedLoader) })
        #expect(world.count(home + "/c5") == nil && world.count(home + "/c6") == nil)
        // Root runs it through the loader as ever.
        let root = try world.launch(as: nil, loader, [world.counter, world.directory + "/root-count"])
        #expect(eventually { (world.count(world.directory + "/root-count") ?? 0) > 0 })
        kill(root, SIGKILL)
    }

    /// The attack of 2026-12-02: in a user and mount namespace of her own the child mounts an
    /// overlay over the game's directory and starts the game through it (held: the kernel asks
    /// about the real file underneath), then reads and starts it again through the same mount.
    /// The gate had marked the game's overlay file at the first start; the read's ask was for it,
    /// and the kernel, opening it for the gate, opened the real file underneath, which asked the
    /// gate again: its thread waited on itself for good, and every exec and open of a shielded
    /// program waited after, root's too. Now the game through her overlay never runs, and the
    /// gate answers on: the game started plainly after it is held, and the bystander's runs.
    @Test func anExecThroughHerOwnOverlayIsHeldAndTheGateAnswersOn() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let directory = URL(fileURLWithPath: world.counter).deletingLastPathComponent().path
        let mount =
            "mount -t overlay overlay -o lowerdir=\(directory),upperdir=\(home)/up,workdir=\(home)/work \(home)/m"
        let inside = [
            "\(mount) || exit 9", "\(home)/m/counter \(home)/first & sleep 1",
            "timeout 5 cat \(home)/m/counter > \(home)/copy; echo read $?",
            "timeout 5 \(home)/m/counter \(home)/second; echo again $?",
        ].joined(separator: "\n")
        try inside.write(toFile: home + "/inside.sh", atomically: true, encoding: .utf8)
        let output = home + "/attack.out"
        let attack = try world.launch(
            as: world.child, "/bin/sh",
            ["-c", "mkdir -p \(home)/up \(home)/work \(home)/m && exec unshare -Urm sh \(home)/inside.sh"],
            output: output)
        let ended = world.wait(attack, seconds: 30)
        let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(ended == 0, "the child's script did not end (the gate is stuck?): \(said)\n\(world.agentLog())")
        #expect(said.contains("read 1"), "the read through her overlay: \(said)")
        Thread.sleep(forTimeInterval: 0.3)
        for name in ["first", "second"] {
            #expect((world.count(home + "/" + name) ?? 0) <= Self.barely, "\(name) ran through the overlay")
        }
        // The gate answers on: a plain start is held, and the bystander's copy runs.
        let plain = try world.launch(as: world.child, world.counter, [home + "/plain"])
        #expect(eventually(10) { world.isFrozen(plain) }, "the gate is stuck: \(world.agentLog())")
        let theirs = world.directory + "/bystander-count"
        FileManager.default.createFile(atPath: theirs, contents: nil, attributes: [.posixPermissions: 0o666])
        let bystander = try world.command(as: world.bystander, "/usr/bin/timeout", ["3", world.counter, theirs])
        #expect(bystander.status == 124 && (world.count(theirs) ?? 0) > 0, "the bystander's exec: \(bystander)")
        #expect(world.agentIsRunning)
    }

    /// Finding 4: a changed copy was hashed once, then the byte and the modification time were
    /// put back and the cached hash let the shielded program run. The cache keys on the change
    /// time, which the child cannot set. And the class closes with `deny-installs`: only programs
    /// a guardian installed run.
    @Test func aRetimedCopyIsHashedAgainAndOnlyInstalledProgramsRun() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        // A copy with one byte changed (in the compiler's note, which nothing reads): a new program.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: world.counter)))
        let marker = Array("GCC: ".utf8)
        let at =
            try #require(
                (0...(bytes.count - marker.count)).first { Array(bytes[$0..<($0 + marker.count)]) == marker }) + 1
        let original = bytes[at]
        bytes[at] = UInt8(ascii: "X")
        let game = home + "/g"
        try Data(bytes).write(to: URL(fileURLWithPath: game))
        try system("/usr/bin/chown", world.child, game)
        chmod(game, 0o755)
        #expect(try asChild(world, "touch -d @1700000000 \(game)").status == 0)
        // Settled (its change older than the cache's two seconds), run, hashed, cached.
        Thread.sleep(forTimeInterval: 2.5)
        let altered = try world.launch(as: world.child, game, [home + "/count-altered"])
        #expect(eventually { (world.count(home + "/count-altered") ?? 0) > Self.barely })
        #expect(!world.isFrozen(altered))
        kill(altered, SIGKILL)
        _ = world.wait(altered)
        // The byte put back and the time too: the program is the shielded one again.
        let restore =
            "printf '\\\(String(original, radix: 8))' | dd of=\(game) bs=1 seek=\(at) conv=notrunc status=none"
        #expect(try asChild(world, restore + " && touch -d @1700000000 \(game)").status == 0)
        #expect(try Files.sha256(of: game) == (try Files.sha256(of: world.counter)))
        let restored = try world.launch(as: world.child, game, [home + "/count-restored"])
        #expect(eventually { world.isFrozen(restored) })
        Thread.sleep(forTimeInterval: 0.2)
        #expect((world.count(home + "/count-restored") ?? 0) <= Self.barely)

        // Only installed programs: the child's own files and what lies where it can write do
        // not run; the system's programs and scripts through them do.
        try guardian(world, "unshield", "--user", world.child, "--app", "org.example.Counter")
        try guardian(world, "deny-installs", "--user", world.child, "on")
        #expect(try world.status(of: world.child).processShield?.onlyInstalledPrograms == true)
        let loader = try #require(ProcessShieldIntegrationTests.loader())
        // The child's own programs run long enough to be caught at exec (a program that ends
        // within microseconds is done before any watcher reads its exec: only the kernel's
        // question, below, stops those).
        try world.giveChild(copyOf: "/usr/bin/sleep", at: home + "/mine")
        #expect(try asChild(world, "cp \(loader) \(home)/l").status == 0)
        try "#!/bin/sh\necho script ran\n".write(toFile: home + "/script.sh", atomically: true, encoding: .utf8)
        try system("/usr/bin/chown", world.child, home + "/script.sh")
        for command in [
            "\(home)/mine 5", "\(home)/l /usr/bin/sleep 5", "\(loader) \(home)/mine 5", "\(game) \(home)/c",
        ] {
            let result = try asChild(world, command)
            #expect([126, 137].contains(result.status), "\(command): \(result.status) \(result.stderr)")
        }
        #expect(try asChild(world, "/usr/bin/true && echo ok").stdout == "ok\n")
        #expect(try asChild(world, "sh \(home)/script.sh").stdout == "script ran\n")
        #expect(try asChild(world, "\(loader) /usr/bin/true && echo loaded").stdout == "loaded\n")
        // Started with a child denied installs, the agent asks the kernel about every exec of the
        // file systems: such a program is refused before it runs (EPERM: the shell's 126).
        world.kill9()
        try world.start()
        try world.giveChild(copyOf: "/usr/bin/true", at: home + "/quick")
        for command in ["\(home)/mine 5", "\(home)/quick", "\(home)/l /usr/bin/true"] {
            let refused = try asChild(world, command)
            #expect(refused.status == 126, "\(command): \(refused.stderr)")
        }
        let recent = try #require(try world.status(of: world.child).processShield?.recent)
        #expect(recent.contains { $0.action == "uninstalled" })
        #expect(try asChild(world, "/usr/bin/true && echo ok").stdout == "ok\n")
        // Root and the bystander are not asked about.
        #expect(try world.inNetwork(as: nil, home + "/quick", []).status == 0)
        #expect(try world.inNetwork(as: world.bystander, home + "/quick", []).status == 0)
        try guardian(world, "deny-installs", "--user", world.child, "off")
        #expect(try asChild(world, "\(home)/quick && echo mine").stdout == "mine\n")
    }

    /// The state database grew without bound (restrictions, second round): under deny-installs,
    /// 22,000 execs of one-byte-different files in 22 s grew it from 0.25 to 7.5 MB, an event and a
    /// token name per refused copy. Now each user's refusals are written down within a budget (60,
    /// then one a second): the storm is refused all the same, and costs the database little.
    func aRefusalStormIsRefusedAndWrittenDownWithinABudget() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "deny-installs", "--user", world.child, "on")
        world.kill9()
        try world.start()
        let home = try world.makeHome(for: world.child)
        let database = world.directory + "/state/state.sqlite"
        func rows() throws -> (events: Int, names: Int) {
            let counted = try run(
                "/usr/bin/python3",
                [
                    "-c",
                    "import sqlite3, sys; d = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True); "
                        + "print(d.execute('SELECT COUNT(*) FROM applicationEvent').fetchone()[0], "
                        + "d.execute('SELECT COUNT(*) FROM tokenName').fetchone()[0])",
                    database,
                ])
            let numbers = counted.stdout.split(separator: " ").compactMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard numbers.count == 2 else { throw WorldError("cannot count the database's rows: \(counted.stderr)") }
            return (numbers[0], numbers[1])
        }
        func size() -> Int {
            ["", "-wal"].map { (try? FileManager.default.attributesOfItem(atPath: database + $0)[.size] as? Int) ?? 0 }
                .reduce(0, +)
        }
        let before = try rows()
        let (cpuBefore, sizeBefore, started) = (try world.agentCPUSeconds(), size(), Date())
        let storm = try world.command(
            as: world.child, "/usr/bin/python3", [AgentWorld.fixture("refusal-storm.py"), home, "3000"])
        #expect(storm.stdout == "refused 3000 ran 0\n", "\(storm.stdout) \(storm.stderr)")
        let elapsed = Date().timeIntervalSince(started)
        Thread.sleep(forTimeInterval: 2)  // the journal's last batch
        let after = try rows()
        let budget = 60 + Int(elapsed.rounded(.up)) + 3
        #expect(after.events - before.events >= 60, "the first refusals are written down")
        #expect(after.events - before.events <= budget, "\(after.events - before.events) events for \(budget)")
        #expect(after.names - before.names <= budget, "\(after.names - before.names) names for \(budget)")
        print(
            "refusal storm: 3000 refused in \(String(format: "%.1f", elapsed)) s; agent CPU "
                + "\(String(format: "%.2f", try world.agentCPUSeconds() - cpuBefore)) s; database \(sizeBefore) → \(size()) bytes; "
                + "events +\(after.events - before.events), names +\(after.names - before.names)")
        // The bystander runs her own copies as ever.
        try world.giveChild(copyOf: "/usr/bin/true", at: home + "/quick")
        #expect(try world.command(as: world.bystander, home + "/quick", []).status == 0)
        #expect(try world.status(of: world.child).processShield?.recent.contains { $0.action == "uninstalled" } == true)
        #expect(world.agentIsRunning)
    }

    /// Finding 5: with uidmap, the child ran programs as one of its subordinate uids, which
    /// nobody had authorized. They are the child's: held, filtered, counted as the child.
    @Test func programsRunAsASubordinateUIDAreTheChilds() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let subordinate = SubordinateIDs(parsing: try String(contentsOfFile: "/etc/subuid", encoding: .utf8))
        let uid = try UserDirectory().user(world.child).uid
        let range = try #require(subordinate.ranges(ofUser: world.child, uid: uid).first, "useradd gave no subuids")
        try system("/usr/bin/chmod", "0777", home)
        let unshare = [
            "--map-users=\(range.lowerBound),1,\(range.count)", "--map-root-user", "/usr/bin/setpriv", "--reuid=1000",
        ]
        let launcher = try world.launch(
            as: world.child, "/usr/bin/unshare", unshare + [world.counter, home + "/count"])
        #expect(eventually { !processes(running: world.counter).isEmpty })
        let running = processes(running: world.counter)
        #expect(running.allSatisfy { range.contains($0.uid) }, "\(running)")
        #expect(eventually { running.allSatisfy { world.isFrozen($0.pid) } })
        Thread.sleep(forTimeInterval: 0.2)
        #expect((world.count(home + "/count") ?? 0) <= Self.barely)
        let frozen = try world.status(of: world.child).processShield?.frozen.map(\.pid) ?? []
        #expect(Set(running.map(\.pid)).isSubset(of: Set(frozen)), "\(frozen)")
        // Blocked: refused at exec to the subordinate uid too.
        try guardian(world, "block", "--user", world.child, "--app", "org.example.Counter")
        let blocked = try world.inNetwork(
            as: world.child, "/usr/bin/unshare", unshare + [world.counter, home + "/count-blocked"])
        #expect(blocked.status != 0)
        #expect(world.count(home + "/count-blocked") == nil)
        _ = launcher
    }

    /// Finding 5, for the network: the subordinate uids' DNS is filtered as the child's, and a
    /// range given later (`usermod --add-subuids`) is the child's from then on.
    @Test func theSubordinateUIDsLookupsAreFilteredAsTheChilds() throws {
        let world = try AgentWorld(network: true)
        defer { world.tearDown() }
        try guardian(world, "authorize", "--child", world.child)
        try guardian(world, "shield", "--user", world.child, "--domain", "blocked.test")
        let subordinate = SubordinateIDs(parsing: try String(contentsOfFile: "/etc/subuid", encoding: .utf8))
        let uid = try UserDirectory().user(world.child).uid
        let range = try #require(subordinate.ranges(ofUser: world.child, uid: uid).first)
        let dig = [
            "--map-users=\(range.lowerBound),1,\(range.count)", "--map-root-user", "/usr/bin/setpriv", "--reuid=1000",
            "/usr/bin/dig", "+tries=1", "+time=2", "@127.0.0.1",
        ]
        let shielded = try world.inNetwork(as: world.child, "/usr/bin/unshare", dig + ["blocked.test"])
        #expect(shielded.stdout.contains("status: NXDOMAIN"), "\(shielded.stdout) \(shielded.stderr)")
        let allowed = try world.inNetwork(as: world.child, "/usr/bin/unshare", dig + ["allowed.test"])
        #expect(allowed.stdout.contains("10.1.1.1"), "\(allowed.stdout)")
        // A new range, watched for: in the rules within moments.
        let added = "\(range.upperBound + 100_001)-\(range.upperBound + 110_000)"
        try accounts("/usr/sbin/usermod", "--add-subuids", added, world.child)
        #expect(eventually(5) { (try? world.firewallRules().contains { $0.contains(added) }) ?? false })
    }

    /// Finding 6: after lost process events, a dead frozen process's pid stayed in the table, root
    /// got that pid, and root's process was frozen. Every act goes through a pidfd checked
    /// against the start time, lost events reconcile the table, and a process of no authorized
    /// user is never touched.
    @Test func aPidRootGotAfterLostEventsIsNeverTouched() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let cycle = try world.compile("pidcycle")
        let counter = try world.launch(as: world.child, world.counter, [home + "/count"])
        #expect(eventually { world.isFrozen(counter) })
        // The agent stops reading (as it would fall behind a fork storm); the child's frozen
        // program dies, and thousands of processes later root has its pid.
        let agent = try #require(world.agentPID)
        kill(agent, SIGSTOP)
        var resumed = false
        defer { if !resumed { kill(agent, SIGCONT) } }
        #expect(try world.inNetwork(as: world.child, "/bin/kill", ["-KILL", "\(counter)"]).status == 0)
        _ = world.wait(counter)
        // 10,000 processes (20,000 events, several times what the agent's 4 MiB buffer holds),
        // then root's `sleep` asked for the pid (clone3's set_tid: waiting for the pids to come
        // round again took over a minute once, beside the other tests).
        let cycled = try world.launch(as: nil, cycle, ["\(counter)", "10000", "/usr/bin/sleep", "60"])
        #expect(world.wait(cycled, seconds: 120) == 0, "root did not get pid \(counter)")
        #expect(ProcessInspector().status(pid: counter)?.uid == 0)
        kill(agent, SIGCONT)
        resumed = true
        // The agent reads the backlog (its events lost past its buffer), then a change makes it
        // judge every process it tracks again.
        Thread.sleep(forTimeInterval: 1)
        #expect(
            eventually(30) { !world.agentLog(naming: ["process events were lost"]).isEmpty },
            "the agent lost no events: the storm was too small for its buffer")
        try guardian(world, "shield", "--user", world.child, "--app-category", "Game")
        try guardian(world, "unshield", "--user", world.child, "--app-category", "Game")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(ProcessInspector().status(pid: counter)?.uid == 0)
        #expect(!world.isFrozen(counter) && world.processState(counter) != "T")
        #expect(try world.status(of: world.child).processShield?.frozen.contains { $0.pid == counter } == false)
        // Root's `sleep 60`, only if the pid is still that.
        if ProcessInspector().status(pid: counter)?.uid == 0, world.command(of: counter) == "sleep" {
            kill(counter, SIGKILL)
        }
    }

    /// Finding 8: desktop entries pointing at huge sparse files made each guardian change take
    /// half a minute, and such files run first let a shielded game run for seconds. The child's
    /// programs are no longer hashed for the catalogue, and hashing at exec only ever holds the
    /// child's own processes, each user's judgements taking turns.
    /// Found by the attack on the installed agent: a fresh, byte-identical copy is known only by
    /// its content, so it is caught just after its exec; a child sending it SIGCONT as fast as it
    /// can (to undo the stop that holds it while it is hashed) got it to run main(). The line (see
    /// the threat model): it may run that moment, but it is frozen all the same and stays frozen;
    /// with denyAppInstallation it never runs (aRetimedCopyIsHashedAgainAndOnlyInstalledProgramsRun).
    @Test func aFreshIdenticalCopyKeptGoingWithSIGCONTIsStillFrozen() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let home = try world.makeHome(for: world.child)
        let spam = try world.compile("contspam")
        for round in 0..<3 {
            let copy = home + "/copy\(round)"
            try world.giveChild(copyOf: world.counter, at: copy)
            let count = home + "/count\(round)"
            let result = try asChild(world, "\(spam) \(copy) \(count) 0.5")
            let pid = try #require(Int32(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(eventually(3) { world.isFrozen(pid) }, "round \(round)")
            let held = world.count(count)
            Thread.sleep(forTimeInterval: 0.5)
            #expect(world.isFrozen(pid))
            #expect(world.count(count) == held, "round \(round): it ran on after it was frozen")
        }
        // Ten fresh copies started at once, as the attack did: every one ends frozen, and stays.
        var pids: [Int32] = []
        for index in 0..<10 {
            let copy = home + "/burst\(index)"
            try world.giveChild(copyOf: world.counter, at: copy)
            pids.append(try world.launch(as: world.child, copy, [home + "/burst-count\(index)"]))
        }
        #expect(eventually(5) { pids.allSatisfy(world.isFrozen) })
        let counts = (0..<10).map { world.count(home + "/burst-count\($0)") }
        Thread.sleep(forTimeInterval: 0.5)
        #expect((0..<10).map { world.count(home + "/burst-count\($0)") } == counts)
        // Meanwhile the agent answers at once.
        #expect(try world.cli(as: world.guardian, "status", "--user", world.child).status == 0)
    }

    @Test func hugeFilesSlowNobodyButTheirOwner() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let sibling = try world.makeUser("stsib")
        try guardian(world, "authorize", "--child", sibling)
        let home = try world.makeHome(for: world.child)
        var scripts: [String] = []
        for index in 0..<15 {
            let path = home + "/huge\(index)"
            try "#!/bin/sh\nexec sleep 60\n".write(toFile: path, atomically: false, encoding: .utf8)
            let fd = open(path, O_WRONLY)
            #expect(ftruncate(fd, 500 << 20) == 0)
            close(fd)
            try system("/usr/bin/chown", world.child, path)
            scripts.append(path)
            for copy in [0, 1] {
                try "[Desktop Entry]\nType=Application\nName=Huge\(index)\nExec=\(path)\n".write(
                    toFile: home + "/.local/share/applications/huge\(index)-\(copy).desktop", atomically: false,
                    encoding: .utf8)
            }
        }
        try system("/usr/bin/chown", "-R", world.child, home + "/.local")
        // A guardian's change reads the child's 30 entries; their programs are not hashed.
        let started = Date()
        try guardian(world, "shield", "--user", world.child, "--domain", "example.test")
        #expect(Date().timeIntervalSince(started) < 10, "a change waited on the child's files")
        // The child runs all fifteen through sh (each script hashed at exec), then the game.
        for script in scripts { _ = try world.launch(as: world.child, "/bin/sh", [script]) }
        let game = try world.launch(as: world.child, world.counter, [home + "/count"])
        #expect(eventually { world.isFrozen(game) })
        Thread.sleep(forTimeInterval: 0.2)
        #expect((world.count(home + "/count") ?? 0) <= Self.barely)
        // The sibling is not held up by the child's judgements.
        try world.makeHome(for: sibling)
        try guardian(world, "shield", "--user", sibling, "--app", "org.example.Counter")
        let siblings = try world.launch(as: sibling, world.counter, ["/home/\(sibling)/count"])
        #expect(eventually { world.isFrozen(siblings) })
        #expect((world.count("/home/\(sibling)/count") ?? 0) <= Self.barely)
    }
}

extension HostileChildIntegrationTests {
    /// Her storms of execs: every agent on the machine reads each of them, so they run with no
    /// other test beside them (`scripts/run-tests` runs every `Alone` suite by itself).
    @Suite(
        .threadsOfTheirOwn, .serialized, .enabled(if: isRoot, "needs root: users, the agent, other users' processes"))
    struct Alone {
        @Test func anExecStormLeavesTheAgentAnsweringAndShielding() throws {
            try HostileChildIntegrationTests().anExecStormLeavesTheAgentAnsweringAndShielding()
        }

        @Test func aRefusalStormIsRefusedAndWrittenDownWithinABudget() throws {
            try HostileChildIntegrationTests().aRefusalStormIsRefusedAndWrittenDownWithinABudget()
        }

        @Test func anExecTheChildSlowsDownIsHeldThroughIt() throws {
            try HostileChildIntegrationTests().anExecTheChildSlowsDownIsHeldThroughIt()
        }

        @Test func aStormOfShieldedExecsHoldsEveryOne() throws {
            try HostileChildIntegrationTests().aStormOfShieldedExecsHoldsEveryOne(
                Int(ProcessInfo.processInfo.environment["SCREENTIME_STORM"] ?? "") ?? 4_000)
        }

        /// It compares the limit's count with the report's to 2 s, and waits out minutes: beside
        /// the other root tests the two drifted apart (fresh run 113: the limit counted 39.2 s of
        /// the game's 37.2 s in front), so it runs with none beside it.
        @Test func aGameThatLeftItsParentCountsTowardItsLimitAndIsHeldAgainWhenAGrantEnds() throws {
            try HostileChildIntegrationTests().aGameThatLeftItsParentCountsTowardItsLimitAndIsHeldAgainWhenAGrantEnds()
        }
    }
}
