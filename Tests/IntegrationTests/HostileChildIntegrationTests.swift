import Foundation
import LinuxSupport
import ScreenTimeIPC
import Testing

/// A child who knows Linux, against a real agent: each test is one way around (the commands of
/// the issue that found it, where they apply), made by a real process of the child's, and checks
/// that the shield holds while the agent goes on serving everyone else.
@Suite(.serialized, .enabled(if: isRoot, "needs root: users, the agent, other users' processes"))
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
        var holders: [Int32] = []
        // Six other users hold four connections each: 24, all that non-guardians may have.
        for index in 0..<6 {
            let user = try world.makeUser("sth\(index)")
            let output = world.directory + "/hold\(index).out"
            holders.append(
                try world.launch(
                    as: user, "/usr/bin/python3",
                    [AgentWorld.fixture("trickle.py"), world.socket, "4", "1", "8"], output: output))
            #expect(eventually { lines(output).contains("open 4") }, "\(lines(output))")
        }
        // A seventh is turned away: the rest is kept for guardians.
        let late = try world.makeUser("stlate")
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
        let request = String(decoding: try RequestEnvelope.encode(TokenRequest(kind: .app, identity: secret)), as: UTF8.self)
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

        // Straight after: refused without a check, and the refusal says how long to wait.
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
}
