import ScreenTimeCore
import Testing

@Suite struct InterpreterTests {
    @Test(arguments: [
        (["/usr/bin/python3", "-u", "game.py", "--level", "2"], "game.py"),
        (["python3.11", "-W", "ignore", "/opt/g/main.py"], "/opt/g/main.py"),
        (["/bin/sh", "./notes.txt", "count"], "./notes.txt"),
        (["bash", "-e", "--", "run.sh"], "run.sh"),
        (["java", "-Xmx1g", "-cp", "lib", "-jar", "Game.jar"], "Game.jar"),
        (["/lib64/ld-linux-x86-64.so.2", "--library-path", "/x", "/home/kid/homework"], "/home/kid/homework"),
        (["perl5.36", "-w", "x.pl"], "x.pl"),
    ])
    func findsTheScript(commandLine: [String], script: String) {
        #expect(Interpreter.script(in: commandLine) == script)
    }

    @Test(arguments: [
        ["sh", "-c", "game"], ["bash", "-ec", "game"], ["python3", "-c", "print(1)"], ["python3", "-m", "http.server"],
        ["perl", "-ne", "print"], ["java", "Main"], ["/usr/games/chess"], ["python3"], ["node", "-e", "1"],
    ])
    func inlineCodeOrNoInterpreterHasNoScript(commandLine: [String]) {
        #expect(Interpreter.script(in: commandLine) == nil)
    }

    /// Finding 3 of the hardening issue: `ld.so --glibc-hwcaps-mask x /usr/games/x` ran the game,
    /// the option's value taken for the program. Options are read as glibc's loader reads them.
    @Test(arguments: [
        (["/lib64/ld-linux-x86-64.so.2", "--glibc-hwcaps-mask", "x", "/usr/games/x"], "/usr/games/x"),
        (["ld.so", "--glibc-hwcaps-prepend", "y", "--inhibit-cache", "--argv0", "z", "/usr/games/x"], "/usr/games/x"),
        (["/lib64/ld-linux-x86-64.so.2", "--list-diagnostics", "--preload", "a.so", "-x"], "-x"),
        (["/lib64/ld-linux-x86-64.so.2", "--verify", "--audit", "a:b", "game", "--level"], "game"),
    ])
    func theLoaderIsParsedAsGlibcParsesIt(commandLine: [String], program: String) {
        #expect(Interpreter.script(in: commandLine) == program)
    }

    @Test func aLoaderThatWouldStopRunsNothing() {
        for commandLine in [
            ["/lib64/ld-linux-x86-64.so.2", "--", "/usr/games/x"], ["ld-linux.so.2", "--unknown", "/usr/games/x"],
            ["/lib64/ld-linux-x86-64.so.2", "--library-path"], ["/lib64/ld-linux-x86-64.so.2"],
        ] {
            #expect(Interpreter.script(in: commandLine) == nil, "\(commandLine)")
        }
    }

    /// A copied loader (`cp /lib64/ld-linux-x86-64.so.2 ~/l`) is known by its content, not its name.
    @Test func aLoaderUnderAnotherNameIsStillTheLoader() {
        #expect(Interpreter.script(in: ["/home/kid/l", "/usr/games/x"], executable: "/home/kid/l") == nil)
        #expect(
            Interpreter.script(
                in: ["/home/kid/l", "--argv0", "a", "/usr/games/x"], executable: "/home/kid/l", isLoader: true)
                == "/usr/games/x")
    }

    @Test func theExecutableDecidesNotTheFirstArgument() {
        // A process may name itself anything in argv[0].
        #expect(Interpreter.script(in: ["game", "main.py"], executable: "/usr/bin/python3.11") == "main.py")
        #expect(Interpreter.script(in: ["python3", "main.py"], executable: "/usr/games/chess") == nil)
    }
}

@Suite struct ApplicationIndexTests {
    /// An application entry of these keys (Type=Application added).
    static func entry(_ id: String, _ keys: String) -> DesktopEntry {
        DesktopEntry(id: id, parsing: "[Desktop Entry]\nType=Application\n" + keys)!
    }

    static let chess = entry("org.gnome.Chess", "Name=Chess\nExec=gnome-chess %U\nCategories=Game;BoardGame;\n")
    static let script = entry("org.example.Script", "Name=Script\nExec=env A=1 python3 /opt/s/main.py\n")
    static let flatpak = entry("org.example.Flat", "Name=Flat\nExec=/usr/bin/flatpak run org.example.Flat\n")
    static let helper = entry("org.example.Helper", "Name=Helper\nExec=/usr/libexec/helper\nNoDisplay=true\n")

    let index = ApplicationIndex(entries: [
        (chess, [.init(path: "/usr/games/gnome-chess", sha256: String(repeating: "a", count: 64))]),
        (script, [.init(path: "/opt/s/main.py", sha256: String(repeating: "b", count: 64))]),
        (flatpak, [.init(path: "/usr/bin/flatpak", sha256: String(repeating: "c", count: 64))]),
        (helper, [.init(path: "/usr/libexec/helper", sha256: String(repeating: "d", count: 64))]),
    ])

    @Test func desktopEntryProgramsAreTheExecutableOrTheScript() {
        #expect(Self.chess.program == "gnome-chess")
        #expect(Self.script.program == "/opt/s/main.py")
        #expect(Self.script.commandWords == ["python3", "/opt/s/main.py"])
    }

    /// A child's thousands of entries naming one program give it a few applications, never
    /// crowding out the system's (whose ID sorts after all of them here).
    @Test func aChildsThousandsOfEntriesForOneProgramGiveItAFew() {
        let shell = "/usr/bin/true"
        var entries: [(entry: DesktopEntry, programs: [ApplicationIndex.Program])] = (0..<5000).map { number in
            (
                Self.entry("a.kid.Note\(number)", "Name=N\nExec=\(shell)\n"),
                [.init(path: shell, sha256: nil, isUsers: true)]
            )
        }
        entries.append((Self.entry("z.system.Shell", "Name=Shell\nExec=\(shell)\n"), [.init(path: shell, sha256: nil)]))
        let index = ApplicationIndex(entries: entries)
        let found = index.identities(of: ProcessEvidence(executablePath: shell, executableHash: nil))
        #expect(found.contains(.desktopEntry("z.system.Shell")))
        #expect(found.filter { $0.description.contains("a.kid.Note") }.count == ApplicationIndex.maximumUserIdentities)
        #expect(index.count == 5001)
    }

    @Test func aCopyIsKnownByItsContent() {
        let copy = ProcessEvidence(
            executablePath: "/home/kid/homework", executableHash: String(repeating: "a", count: 64))
        #expect(index.identities(of: copy).first == .desktopEntry("org.gnome.Chess"))
    }

    @Test func aScriptRunByAnInterpreterIsItsApplication() {
        let run = ProcessEvidence(
            executablePath: "/usr/bin/python3.11", executableHash: String(repeating: "e", count: 64),
            scriptPath: "/home/kid/notes.txt", scriptHash: String(repeating: "b", count: 64))
        #expect(index.identities(of: run).contains(.desktopEntry("org.example.Script")))
    }

    @Test func launchersAreNotTheirApplications() {
        let flatpakTool = ProcessEvidence(
            executablePath: "/usr/bin/flatpak", executableHash: String(repeating: "c", count: 64))
        #expect(!index.identities(of: flatpakTool).contains(.desktopEntry("org.example.Flat")))
        // The sandboxed app is known by its unit and its sandbox.
        let sandboxed = ProcessEvidence(
            cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.example.Flat-77.scope",
            flatpakID: "org.example.Flat")
        #expect(index.identities(of: sandboxed) == [.desktopEntry("org.example.Flat")])
    }

    @Test func evidenceIsOrderedAndInheritedLast() {
        let evidence = ProcessEvidence(
            launchedDesktopFile: "/usr/share/applications/org.gnome.Chess.desktop", executablePath: "/usr/bin/bash",
            executableHash: String(repeating: "f", count: 64))
        let identities = index.identities(of: evidence, inherited: [.desktopEntry("org.gnome.Terminal")])
        #expect(
            identities == [
                .desktopEntry("org.gnome.Chess"), .executable(String(repeating: "f", count: 64)),
                .desktopEntry("org.gnome.Terminal"),
            ])
    }
}

@Suite struct ApplicationFilterTests {
    let index = ApplicationIndexTests().index

    func filter(_ settings: StoreSettings) -> ApplicationFilter {
        ApplicationFilter(policy: EffectivePolicy(stores: [store("a"): settings]), index: index, minter: testMinter)
    }

    @Test func anyShieldedIdentityShieldsTheProcess() {
        let filter = filter(StoreSettings(shield: ShieldSettings(applications: [app("org.gnome.Chess")])))
        let verdict = filter.verdict(for: [.desktopEntry("org.gnome.Terminal"), .desktopEntry("org.gnome.Chess")])
        #expect(verdict?.action == .shield)
        #expect(verdict?.application == .desktopEntry("org.gnome.Chess"))
        #expect(filter.verdict(for: [.desktopEntry("org.gnome.Terminal")]) == nil)
    }

    @Test func blockingWinsOverShielding() {
        var settings = StoreSettings(shield: ShieldSettings(applications: [app("org.gnome.Chess")]))
        settings.application.blockedApplications = [app("org.example.Script")]
        let verdict = filter(settings).verdict(for: [
            .desktopEntry("org.gnome.Chess"), .desktopEntry("org.example.Script"),
        ])
        #expect(verdict?.action == .block)
    }

    @Test func blockedProgramsAreTheBlockedApplicationsOwnNotTheirLaunchersOrShieldedOnes() {
        var settings = StoreSettings(shield: ShieldSettings(applications: [app("org.gnome.Chess")]))
        settings.application.blockedApplications = [app("org.example.Script"), app("org.example.Flat")]
        let blocked = filter(settings)
        // The script's file is its program; flatpak is a launcher, not the app; chess is only shielded.
        #expect(blocked.blockedPrograms == ["/opt/s/main.py"])
        #expect(blocked.blocks(path: "/home/kid/copy.py", sha256: String(repeating: "b", count: 64)))
        #expect(!blocked.blocks(path: "/usr/games/gnome-chess", sha256: String(repeating: "a", count: 64)))
        #expect(
            filter(StoreSettings(shield: ShieldSettings(applications: [app("org.gnome.Chess")]))).blockedPrograms
                .isEmpty)
    }

    @Test func categoryShieldsCoverListedDesktopApplicationsOnly() {
        let games = filter(StoreSettings(shield: ShieldSettings(applicationCategories: .specific([category("Game")]))))
        #expect(games.verdict(for: [.desktopEntry("org.gnome.Chess")])?.action == .shield)
        #expect(games.verdict(for: [.desktopEntry("org.example.Script")]) == nil)
        // `.all` does not freeze what is not a menu application: helpers, bare programs.
        let all = filter(
            StoreSettings(shield: ShieldSettings(applicationCategories: .all(except: [app("org.example.Script")]))))
        #expect(all.verdict(for: [.desktopEntry("org.gnome.Chess")])?.action == .shield)
        #expect(all.verdict(for: [.desktopEntry("org.example.Script")]) == nil)
        #expect(all.verdict(for: [.desktopEntry("org.example.Helper")]) == nil)
        #expect(all.verdict(for: [.executable(String(repeating: "f", count: 64))]) == nil)
        #expect(filter(StoreSettings()).isEmpty)
    }
}

/// Apple's `denyAppInstallation` on Linux: what counts as a program a guardian installed.
@Suite struct InstalledProgramTests {
    let rule = InstalledProgram(
        person: .init(uids: UIDRanges([1001...1001, 100_000...165_535]), groups: UIDRanges([1001...1001, 100...100])))
    let rootFile = InstalledProgram.Status(owner: 0, group: 0, permissions: 0o755)
    let rootDirectory = InstalledProgram.Status(owner: 0, group: 0, permissions: 0o755)

    @Test func aRootOwnedProgramInRootOwnedDirectoriesIsInstalled() {
        #expect(rule.refusal(file: rootFile, parents: [rootDirectory, rootDirectory]) == nil)
        // Group-writable by a group the child is not in.
        let staff = InstalledProgram.Status(owner: 0, group: 50, permissions: 0o775)
        #expect(rule.refusal(file: rootFile, parents: [staff, rootDirectory]) == nil)
    }

    @Test func whatTheChildOwnsOrCanChangeIsNot() {
        let mine = InstalledProgram.Status(owner: 1001, group: 1001, permissions: 0o755)
        #expect(rule.refusal(file: mine, parents: [rootDirectory]) == "the program is the child's own file")
        // A subordinate uid is the child too (a file made in its user namespace).
        let subordinate = InstalledProgram.Status(owner: 100_007, group: 0, permissions: 0o755)
        #expect(rule.refusal(file: subordinate, parents: [rootDirectory]) != nil)
        let everyone = InstalledProgram.Status(owner: 0, group: 0, permissions: 0o757)
        #expect(rule.refusal(file: everyone, parents: [rootDirectory]) == "the program is writable by the child")
        let usersGroup = InstalledProgram.Status(owner: 0, group: 100, permissions: 0o775)
        #expect(rule.refusal(file: usersGroup, parents: [rootDirectory]) != nil)
        // Root's file in /tmp (world-writable, sticky): the child could have put it there.
        let tmp = InstalledProgram.Status(owner: 0, group: 0, permissions: 0o1777)
        #expect(rule.refusal(file: rootFile, parents: [tmp, rootDirectory]) != nil)
        // In the child's home.
        let home = InstalledProgram.Status(owner: 1001, group: 1001, permissions: 0o700)
        #expect(rule.refusal(file: rootFile, parents: [rootDirectory, home]) != nil)
        // What cannot be read is not installed.
        #expect(rule.refusal(file: nil, parents: []) != nil)
        #expect(rule.refusal(file: rootFile, parents: nil) != nil)
    }
}

@Suite struct SubordinateIDsTests {
    @Test func linesAreReadAsShadowUtilsWritesThem() {
        let ids = SubordinateIDs(
            parsing: """
                # comment
                kid:100000:65536
                1002:165536:65536
                broken:line
                big:4294967000:1000
                zero:5:0
                """)
        #expect(ids.ranges(ofUser: "kid", uid: 1001) == [100_000...165_535])
        #expect(ids.ranges(ofUser: "other", uid: 1002) == [165_536...231_071])
        #expect(ids.ranges(ofUser: "big", uid: 7) == [4_294_967_000...UInt32.max])
        #expect(ids.skippedLines == 2)
        let ranges = UIDRanges([1001...1001] + ids.ranges(ofUser: "kid", uid: 1001))
        #expect(ranges.contains(1001) && ranges.contains(100_000) && ranges.contains(165_535))
        #expect(!ranges.contains(165_536) && !ranges.contains(0))
    }
}
