import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

let isRoot = getuid() == 0

/// The agent and the CLI for real: a real screentimed on its own socket, real users, PAM.
@Suite(
    .threadsOfTheirOwn, .serialized,
    .enabled(if: isRoot, "needs root: creates users and groups, runs the agent, checks passwords with PAM")
)
struct AgentIntegrationTests {
    @Test func guardianAuthorizesShieldsAndReadsStatus() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }

        // Before: nothing is known about the child.
        #expect(try world.status(of: world.child).authorization.status == .notDetermined)

        let authorize = try world.cli(as: world.guardian, "authorize", "--child", world.child)
        #expect(authorize.status == 0, "\(authorize.stderr)")
        #expect(authorize.stdout.contains("approved as child"))

        let shield = try world.cli(
            as: world.guardian, "shield", "--user", world.child, "--app", "org.example.Counter", "--app-category",
            "Game",
            "--domain", "https://www.YouTube.com/watch?v=1", "--web-category", "games", "--store", "school")
        #expect(shield.status == 0, "\(shield.stderr)")
        #expect(shield.stdout.contains("shield.applications: Counter Game (desktop:org.example.Counter)"))

        let text = try world.cli(as: world.guardian, "status", "--user", world.child)
        #expect(text.status == 0)
        #expect(text.stdout.contains("approved as child"))
        #expect(text.stdout.contains("Counter Game"))
        #expect(text.stdout.contains("youtube.com"))
        #expect(text.stdout.contains("shielded by screentime/school"))

        let status = try world.status(of: world.child)
        #expect(status.authorization.status == .approved)
        #expect(status.authorization.member == .child)
        #expect(status.stores.map(\.name) == ["school"])
        #expect(status.effective.shieldedApplications.count == 1)
        #expect(status.effective.shieldedWebDomains.count == 1)
        #expect(status.effective.applicationCategoryShields.first?.policy == "specific")
        #expect(status.effective.webDomainCategoryShields.first?.policy == "specific")
        #expect(Set(status.names.values.map(\.displayName)).isSuperset(of: ["Counter Game", "youtube.com"]))

        // The token the agent minted is the one `token` gives.
        let token = try world.cli(as: world.guardian, "token", "app", "org.example.Counter", "--user", world.child)
        #expect(
            status.effective.shieldedApplications.first?.token
                == token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))

        // Unshield and clear.
        let unshield = try world.cli(
            as: world.guardian, "unshield", "--user", world.child, "--store", "school", "--domain", "youtube.com")
        #expect(unshield.status == 0)
        #expect(try world.status(of: world.child).effective.shieldedWebDomains.isEmpty)
        #expect(try world.cli(as: world.guardian, "clear", "--user", world.child, "--store", "school").status == 0)
        #expect(try world.status(of: world.child).stores.isEmpty)
    }

    @Test func everyThreadOfTheAgentKeepsOnlyTheCapabilitiesItNeeds() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let pid = try #require(world.agentPID)
        let kept = Capabilities.mask([.dacOverride, .kill, .netAdmin, .netRaw, .sysPtrace, .sysNice])
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        #expect(tasks.count > 1, "the services run on threads started after the drop")
        var checked = 0
        for task in tasks {
            let status = "/proc/\(pid)/task/\(task)/status"
            // A worker thread that ended between the listing and now has nothing left to keep.
            let masks = Capabilities.masks(status: status)
            guard let text = try? String(contentsOfFile: status, encoding: .utf8), !masks.isEmpty else { continue }
            checked += 1
            #expect(masks["CapEff"] == kept, "thread \(task)")
            #expect(masks["CapPrm"] == kept, "thread \(task)")
            #expect(masks["CapBnd"] == kept, "thread \(task)")
            #expect(masks["CapInh"] == 0 && masks["CapAmb"] == 0, "thread \(task)")
            #expect(text.contains("NoNewPrivs:\t1"), "thread \(task)")
        }
        #expect(checked > 1)
        // What needs the kept ones still works after the drop: iptables run as a child
        // (cap_net_admin through the bounding set), stopping and freezing the child's program.
        try world.authorizeChildAndShieldCounter()
        let uid = try #require(getpwnam(world.child)?.pointee.pw_uid)
        #expect(try world.firewallRules().contains { $0.contains("--uid-owner \(uid)") })
        let countFile = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [countFile])
        // Until the gate answers, her exec waits inside the kernel: that wait is the contract, so
        // what is asserted is that she never counts, and the deadline is generous. In a full run
        // this shares two cores with browsers, floods and a dozen other agents (a fresh-clone run
        // once froze her only just after 20 s).
        let end = Date().addingTimeInterval(60)
        while !world.isFrozen(counter) && Date() < end { Thread.sleep(forTimeInterval: 0.01) }
        let frozen = world.isFrozen(counter)
        #expect(
            frozen,
            """
            her counter \(counter) not frozen in 60 s: state \(world.processState(counter).map { String($0) } ?? "gone"), \
            group \(world.cgroup(of: counter) ?? "?"); the agent's log:
            \(world.agentLog(naming: ["\(counter)", "shield", "error", "warning", "lost", "overrun"], last: 30))
            """)
        #expect(!Files.exists(countFile), "her shielded counter reached main() before it was held")
    }

    @Test func theChildReadsOnlyItsOwnStatusAndChangesNothing() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let before = try world.status(of: world.child)

        // Its own status: tokens, no names (the guardian did not choose to show them).
        let own = try world.cli(as: world.child, "status", "--json")
        #expect(own.status == 0, "\(own.stderr)")
        #expect(own.stdout.contains(before.effective.shieldedApplications[0].token))
        #expect(!own.stdout.contains("Counter Game"))

        // Every attempt to change its policy is refused, with a reason and exit status 77.
        let attempts: [[String]] = [
            ["unshield", "--user", world.child, "--app", "org.example.Counter"],
            ["clear", "--user", world.child, "--store", "default"],
            ["revoke"],
            ["shield", "--user", world.bystander, "--domain", "example.com"],
            ["status", "--user", world.guardian],
            ["apps"],
        ]
        for arguments in attempts {
            let result = try world.cli(as: world.child, arguments: arguments)
            #expect(result.status == 77, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.hasPrefix("screentime: "), "\(arguments): \(result.stderr)")
        }
        // A child cannot turn itself into an individual (who could revoke): Apple's conflict code.
        let conflict = try world.cli(as: world.child, "authorize", "--individual")
        #expect(conflict.status == 65)
        #expect(conflict.stderr.contains("[authorizationConflict]"))
        let refused = try world.cli(as: world.child, "clear", "--user", world.child)
        #expect(refused.stderr.contains("only by a guardian"))
        // The policy is as it was (the shields' diagnostics, such as the exec gate's answer
        // times, move on with the machine).
        let after = try world.status(of: world.child)
        #expect(after.authorization == before.authorization && after.stores == before.stores)
        #expect(after.effective == before.effective && after.names == before.names)
        #expect(after.authorizedUsers == before.authorizedUsers)

        // Once the guardian lets the child see names, it does.
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child, "--show-names").status == 0)
        #expect(try world.cli(as: world.child, "status").stdout.contains("Counter Game"))
    }

    /// Users that are gone (restrictions, second round): a child deleted while authorized stayed
    /// in status, and what the agent kept was keyed by a uid that a new account can be given. The
    /// new account inherits nothing (its program runs, it is not authorized), the guardian is told
    /// why, and `forget` removes the old record; an authorization in force is not forgotten.
    @Test func aUidGivenAgainInheritsNothingAndAGuardianForgetsTheOld() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let uid = try UserDirectory().user(world.child).uid
        let refused = try world.cli(as: world.guardian, "forget", "--user", world.child)
        #expect(refused.status != 0 && refused.stderr.contains("revoke it first"), "\(refused.stderr)")
        #expect(try world.cli(as: world.child, "forget", "--user", world.child).status != 0)
        try system("/usr/sbin/userdel", world.child)
        let newcomer = try world.makeUser("stnew", uid: uid)
        let home = try world.makeHome(for: newcomer)
        let game = try world.launch(as: newcomer, world.counter, [home + "/count"])
        for _ in 0..<50 where world.count(home + "/count") == nil { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 1)
        #expect(!world.isFrozen(game), "the new account on the old uid was held as the old child")
        let theirs = try world.status(of: newcomer)
        #expect(theirs.authorization.status == .notDetermined, "\(theirs.authorization)")
        #expect(world.agentLog(naming: ["now belongs to"]).contains(newcomer))
        // Forgotten by uid (the old name no longer resolves): gone from the guardian's list.
        let forgot = try world.cli(as: world.guardian, "forget", "--user", "\(uid)")
        #expect(forgot.status == 0 && forgot.stdout.contains("forgot \(world.child) (uid \(uid))"), "\(forgot.stdout)")
        let listed = try world.status(of: world.guardian).authorizedUsers ?? []
        #expect(!listed.contains { $0.user.uid == uid }, "\(listed)")
        let again = try world.cli(as: world.guardian, "forget", "--user", "\(uid)")
        #expect(again.status == 0 && again.stdout.contains("nothing was kept"), "\(again.stdout)")
        // Authorized now, the new account starts clean: no shield of the old child's holds it.
        #expect(try world.cli(as: world.guardian, "authorize", "--child", newcomer).status == 0)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!world.isFrozen(game))
        #expect(world.agentIsRunning)
    }

    @Test func theBystanderSeesNothingOfTheChild() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        #expect(
            try world.cli(as: world.guardian, "shield", "--user", world.child, "--domain", "example.com").status == 0)

        let peek = try world.cli(as: world.bystander, "status", "--user", world.child)
        #expect(peek.status == 77)
        #expect(peek.stdout.isEmpty)
        let own = try world.cli(as: world.bystander, "status", "--json")
        #expect(own.status == 0)
        #expect(!own.stdout.contains(world.child))
        #expect(own.stdout.contains("notDetermined"))
        #expect(try world.cli(as: world.bystander, "token", "domain", "example.com").status == 77)
    }

    @Test func anAdminCannotBeAChild() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let admin = try world.makeUser("stadm", groups: ["sudo"])
        let result = try world.cli(as: world.guardian, "authorize", "--child", admin)
        #expect(result.status == 65)
        #expect(result.stderr.contains("invalidAccountType"))
        #expect(result.stderr.contains("sudo"))
        let guardianAsChild = try world.cli(as: nil, "authorize", "--child", world.guardian)
        #expect(guardianAsChild.stderr.contains("guardian"))
        #expect(try world.cli(as: nil, "authorize", "--child", "root").status == 65)
        #expect(try world.status(of: admin).authorization.status == .notDetermined)
    }

    @Test func aGuardiansPasswordApprovesInTheChildsSession() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }

        let wrong = try world.cli(
            as: world.child, "authorize", "--child", world.child, input: "\(world.guardian)\nnot the password\n")
        #expect(wrong.status == 77, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("authenticationFailed"))
        #expect(try world.status(of: world.child).authorization.status == .notDetermined)

        // Each failure makes the next try wait (1 s after the first, 2 s after the second).
        Thread.sleep(forTimeInterval: 1.1)
        let notAGuardian = try world.cli(
            as: world.child, "authorize", "--child", world.child, input: "\(world.bystander)\nwhatever\n")
        #expect(notAGuardian.status == 77)
        #expect(notAGuardian.stderr.contains("not a guardian"))

        let empty = try world.cli(as: world.child, "authorize", "--child", world.child, input: "\(world.guardian)\n\n")
        #expect(empty.stderr.contains("authorizationCanceled"))

        Thread.sleep(forTimeInterval: 2.1)
        let right = try world.cli(
            as: world.child, "authorize", "--child", world.child,
            input: "\(world.guardian)\n\(world.guardianPassword)\n")
        #expect(right.status == 0, "\(right.stderr)")
        let status = try world.status(of: world.child)
        #expect(status.authorization.status == .approved)
        #expect(status.authorization.member == .child)

        // Nobody approves someone else this way.
        let other = try world.cli(
            as: world.bystander, "authorize", "--child", world.child,
            input: "\(world.guardian)\n\(world.guardianPassword)\n")
        #expect(other.status == 77)
    }

    @Test func anIndividualRestrictsAndReleasesThemself() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.bystander, "authorize", "--individual").status == 0)
        let shield = try world.cli(as: world.bystander, "shield", "--user", world.bystander, "--domain", "news.example")
        #expect(shield.status == 0, "\(shield.stderr)")
        #expect(try world.cli(as: world.bystander, "status").stdout.contains("news.example"))
        let revoke = try world.cli(as: world.bystander, "revoke")
        #expect(revoke.status == 0, "\(revoke.stderr)")
        let after = try world.status(of: world.bystander)
        #expect(after.authorization.status == .denied)
        #expect(after.stores.isEmpty)

        // A child's authorization is revoked only by a guardian.
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        #expect(try world.cli(as: world.child, "revoke").status == 77)
        #expect(try world.cli(as: world.guardian, "revoke", "--user", world.child).status == 0)
        #expect(try world.status(of: world.child).authorization.status == .denied)
    }

    /// An account deleted without a revoke, and a new one given its uid (as useradd does): the
    /// new account, once authorized, starts afresh; the old one's settings are not its own. The
    /// same account authorized again keeps its settings.
    @Test func aNewAccountOnADeletedOnesUIDStartsAfresh() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let old = try world.makeUser("stgone")
        #expect(try world.cli(as: world.guardian, "authorize", "--child", old).status == 0)
        let shield = try world.cli(as: world.guardian, "shield", "--user", old, "--domain", "secret-diary.example")
        #expect(shield.status == 0, "\(shield.stderr)")
        #expect(try world.cli(as: world.guardian, "authorize", "--child", old).status == 0)
        #expect(try world.status(of: old).stores.count == 1, "authorized again: kept")
        let uid = try UserDirectory().user(old).uid
        try system("/usr/sbin/userdel", old)
        let new = try world.makeUser("stnew", uid: uid)
        let before = try world.cli(as: world.guardian, "status", "--user", new)
        #expect(before.stdout.contains("secret-diary.example"), "before: the uid's record stands\n\(before.stdout)")
        #expect(try world.cli(as: world.guardian, "authorize", "--child", new).status == 0)
        let after = try world.status(of: new)
        #expect(after.stores.isEmpty, "the deleted account's store is the new one's: \(after.stores)")
        #expect(after.authorization.user.name == new)
        #expect(!(try world.cli(as: world.guardian, "status", "--user", new).stdout.contains("secret-diary")))
    }

    @Test func acknowledgedChangesSurviveKill9() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        for round in 0..<5 {
            let result = try world.cli(
                as: world.guardian, "shield", "--user", world.child, "--store", "s\(round)", "--domain",
                "site\(round).example")
            #expect(result.status == 0)
            world.kill9()
            try world.start()
        }
        let status = try world.status(of: world.child)
        #expect(status.authorization.status == .approved)
        #expect(status.stores.map(\.name) == ["s0", "s1", "s2", "s3", "s4"])
        #expect(status.effective.shieldedWebDomains.count == 5)
        #expect(Files.exists(world.directory + "/state/token.secret"))
        #expect(try Files.mode(of: world.directory + "/state/token.secret") == 0o600)

        // The token secret is kept across restarts: the same name gives the same token.
        let before = try world.cli(as: nil, "token", "domain", "example.com").stdout
        #expect(world.terminate() == 0)
        try world.start()
        #expect(try world.cli(as: nil, "token", "domain", "example.com").stdout == before)
    }

    @Test func badRequestsGetErrorsAndChangeNothing() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let before = try world.status(of: world.child)

        // Unknown users, apps, categories; a bad domain; nothing to shield.
        let cases: [([String], String)] = [
            (["shield", "--user", "no-such-user-\(world.id)", "--domain", "x.example"], "unknownUser"),
            (["shield", "--user", world.child, "--app", "org.example.Nope"], "unknownApplication"),
            (["shield", "--user", world.child, "--app-category", "Gamez"], "unknownCategory"),
            (["shield", "--user", world.child, "--web-category", "nonsense"], "unknownCategory"),
            (["shield", "--user", world.child, "--domain", "10.0.0.1"], "invalidDomain"),
            (["shield", "--user", world.child, "--store", "bad name"], "invalidStoreName"),
            (["shield", "--user", world.child], "invalidArgument"),
            (["shield", "--user", world.bystander, "--domain", "x.example"], "notAuthorized"),
        ]
        for (arguments, code) in cases {
            let result = try world.cli(as: world.guardian, arguments: arguments)
            #expect(result.status == 65, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("[\(code)]"), "\(arguments): \(result.stderr)")
        }

        // The 51st token: a selection with 51 applications.
        let tokens = (0..<51).map { index in
            Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }).base64EncodedString()
        }
        let selection = #"{"applicationTokens":["# + tokens.map { #"{"data":"\#($0)"}"# }.joined(separator: ",") + "]}"
        let file = world.directory + "/selection.json"
        try selection.write(toFile: file, atomically: true, encoding: .utf8)
        let limit = try world.cli(as: world.guardian, "shield", "--user", world.child, "--selection", file)
        #expect(limit.status == 65)
        #expect(limit.stderr.contains("[tooManyTokens]"))
        #expect(limit.stderr.contains("at most 50"))

        // Nothing the guardian set changed (the shields' own diagnostics — the gate's answer times,
        // the launcher — move on by themselves, and once made a fresh-clone run fail here).
        let after = try world.status(of: world.child)
        #expect(after.authorization == before.authorization && after.stores == before.stores)
        #expect(after.effective == before.effective && after.names == before.names)
        #expect(after.authorizedUsers == before.authorizedUsers)
        #expect(world.agentIsRunning)
    }

    @Test func hostileFramesNeverStopTheAgent() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let connection = try UnixSocket.connect(to: world.socket)
        try connection.setTimeout(seconds: 10)

        func exchange(_ payload: [UInt8]) throws -> ScreenTimeIPCError.Code? {
            try connection.write(Framing.frame(payload))
            return try readReplyCode(connection)
        }
        // Garbage, wrong version, unknown kind, a wrong body: each answered on the same connection.
        #expect(try exchange(Array("garbage \u{0}\u{1}".utf8)) == .malformedRequest)
        #expect(try exchange(Array(#"{"version":2,"kind":"ping","body":{}}"#.utf8)) == .unsupportedVersion)
        #expect(try exchange(Array(#"{"version":1,"kind":"format","body":{}}"#.utf8)) == .unknownRequest)
        #expect(try exchange(Array(#"{"version":1,"kind":"shield","body":{"target":7}}"#.utf8)) == .malformedRequest)
        // A frame over the limit is read, dropped and answered; the connection goes on.
        let huge = [UInt8](repeating: 0x41, count: Framing.maximumMessageSize + 1)
        #expect(try exchange(huge) == .requestTooLarge)
        #expect(try exchange(try RequestEnvelope.encode(PingRequest())) == nil)
        // An empty frame.
        try connection.write([0, 0, 0, 0])
        #expect(try readReplyCode(connection) == .malformedRequest)

        // Truncated frames and abandoned connections.
        for bytes in [[0, 0], [0, 0, 1, 0, 0x7B], [0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3]] as [[UInt8]] {
            let abandoned = try UnixSocket.connect(to: world.socket)
            try abandoned.write(bytes)
        }
        // Random bytes from many connections.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let noisy = try UnixSocket.connect(to: world.socket)
            let count = Int.random(in: 1...64, using: &generator)
            try? noisy.write((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(world.agentIsRunning)
        #expect(try world.cli(as: nil, "ping").status == 0)
    }

    @Test func aPickedSelectionShields() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        let pick = try world.cli(
            as: world.guardian, "pick", "--user", world.child, "--app", "org.example.Counter", "--category", "Game",
            "--domain", "www.example.com")
        #expect(pick.status == 0, "\(pick.stderr)")
        let selection = try JSONDecoder().decode(FamilyActivitySelection.self, from: Data(pick.stdout.utf8))
        #expect(selection.applicationTokens.count == 1)
        #expect(selection.categoryTokens.count == 1)
        #expect(selection.webDomainTokens.count == 1)

        let shield = try world.cli(
            as: world.guardian, "shield", "--user", world.child, "--selection", "-", input: pick.stdout)
        #expect(shield.status == 0, "\(shield.stderr)")
        let status = try world.status(of: world.child)
        #expect(status.effective.shieldedApplications.map(\.token) == selection.applicationTokens.map(\.base64))
        #expect(status.effective.shieldedWebDomains.map(\.token) == selection.webDomainTokens.map(\.base64))
        #expect(status.effective.applicationCategoryShields.first?.categories == selection.categoryTokens.map(\.base64))

        // A name that is not a category, and no terminal with nothing to pick.
        #expect(try world.cli(as: world.guardian, "pick", "--category", "Gamez").status == 65)
        #expect(try world.cli(as: world.guardian, "pick").status == 64)
        // Children do not mint tokens.
        #expect(try world.cli(as: world.child, "pick", "--domain", "example.com").status == 77)
    }

    @Test func theGuardianListsTheChildsAppsAndCategories() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let apps = try world.cli(as: world.guardian, "apps", "--user", world.child, "--json")
        #expect(apps.status == 0, "\(apps.stderr)")
        let reply = try JSONDecoder().decode(ApplicationsReply.self, from: Data(apps.stdout.utf8))
        let counter = try #require(reply.applications.first { $0.id == "org.example.Counter" })
        #expect(counter.name == "Counter Game")
        #expect(counter.categories == ["Game"])
        #expect(counter.source == "system")
        let token = try world.cli(as: world.guardian, "token", "app", "org.example.Counter", "--user", world.child)
        #expect(counter.token == token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(try world.cli(as: world.guardian, "apps", "--user", world.child).stdout.contains("Counter Game"))

        let categories = try world.cli(as: world.guardian, "categories", "--user", world.child, "--json")
        #expect(categories.status == 0, "\(categories.stderr)")
        let list = try JSONDecoder().decode(CategoriesReply.self, from: Data(categories.stdout.utf8))
        #expect(list.categories.contains { $0.name == "Game" && $0.kind == "app" && $0.count == 1 })
        #expect(list.categories.contains { $0.name == "Education" && $0.kind == "app" && $0.count == 0 })
        #expect(list.categories.contains { $0.name == "games" && $0.kind == "web" })
    }

    @Test func twoAgentsRunSideBySide() throws {
        let first = try AgentWorld()
        defer { first.tearDown() }
        let second = try AgentWorld()
        defer { second.tearDown() }
        try first.authorizeChildAndShieldCounter()
        // Each agent has its own state and its own token secret.
        #expect(try second.status(of: first.child).authorization.status == .notDetermined)
        #expect(try first.status(of: first.child).stores.count == 1)
        let tokenFirst = try first.cli(as: nil, "token", "domain", "example.com").stdout
        let tokenSecond = try second.cli(as: nil, "token", "domain", "example.com").stdout
        #expect(!tokenFirst.isEmpty && tokenFirst != tokenSecond)
        #expect(first.agentIsRunning && second.agentIsRunning)
    }

    @Test func unreachableAgentHasItsOwnExitStatus() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        #expect(world.terminate() == 0)
        let result = try world.cli(as: nil, "status")
        #expect(result.status == 69)
        #expect(result.stderr.contains("cannot reach the agent"))
        #expect(try world.cli(as: nil, "shield").status == 64)
    }
}

private func readReplyCode(_ connection: UnixSocket) throws -> ScreenTimeIPCError.Code? {
    guard let header = try connection.read(exactly: 4) else { throw WorldError("the agent closed the connection") }
    let length = try Framing.payloadLength(header: header)
    guard let payload = try connection.read(exactly: length) else { throw WorldError("the agent closed mid-reply") }
    do {
        _ = try ReplyCoding.decode(PingReply.self, from: payload)
        return nil
    } catch {
        return error.code
    }
}
