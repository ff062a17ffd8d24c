import LinuxSupport
import Logging

/// `screentime-shield`, started through the launcher as a user inside one of their sessions (its
/// display, its bus): as the shield window and notices, and, with `--focus-relay`, as KWin's focus
/// relay. Its standard error goes to the agent's log, bounded.
struct ShieldProgram: Sendable {
    let path: String
    private let launcher: ProgramLauncher?
    private let users: any Accounts
    private let logger: Logger
    /// The notices among the windows it started (shared by its copies).
    let notices = NoticeWindows()

    init(path: String, launcher: ProgramLauncher?, users: any Accounts = UserDirectory(), logger: Logger) {
        self.path = path
        self.launcher = launcher
        self.users = users
        self.logger = logger
    }

    /// The program beside the agent's own (a build directory), or in the `bin` beside its `sbin`
    /// (installed: `/usr/sbin/screentimed`, `/usr/bin/screentime-shield`).
    static func defaultPath() -> String {
        let agent = Files.readLink("/proc/self/exe") ?? "/usr/sbin/screentimed"
        let directory = "/" + agent.split(separator: "/").dropLast().joined(separator: "/")
        let beside = directory + "/screentime-shield"
        if directory.hasSuffix("/sbin") {
            let installed = String(directory.dropLast(4)) + "bin/screentime-shield"
            if Files.exists(installed) || !Files.exists(beside) { return installed }
        }
        return beside
    }

    var exists: Bool { Files.exists(path) }

    /// Started as `uid` in the session whose environment is `session` (`key` names it in the log);
    /// nil when it cannot be (logged). `notice`: a window that closes by itself (see
    /// `NoticeWindows`), until `ended` is told.
    func start(
        as uid: UInt32, session: [String: String], key: String, arguments: [String] = [], notice: Bool = false
    ) -> SessionProgram? {
        guard let client = launcher?.client else {
            logger.warning("no launcher: the shield window cannot be shown")
            return nil
        }
        guard let account = try? users.user(uid: uid) else { return nil }
        // Her uid, her groups, but a primary group that is not hers (see `windowGID`).
        var groups = Array(users.groupIDs(of: account).filter { $0 != 0 && $0 != account.gid }.prefix(59))
        if account.gid != 0 { groups.append(account.gid) }
        let gid = account.gid == Self.windowGID ? account.gid : Self.windowGID
        if gid == account.gid {
            logger.warning(
                "the user's primary group is the window's own: her programs may trace her windows",
                metadata: ["uid": "\(uid)"])
        }
        let request = LaunchRequest(
            kind: .session, program: path, arguments: arguments,
            environment: Self.environment(session, account: account), directory: "/", uid: uid, gid: gid,
            groups: groups, network: .inherit,
            limits: .init(memoryBytes: 4 << 30, openFiles: 1024, wallSeconds: 6 * 3600), descriptors: [0, 1, 2])
        let logger = logger
        do {
            // What it says on standard error goes to the agent's log (GTK's warnings, a display
            // that cannot be opened).
            let started = try SessionProgram.start(request, through: client) { said in
                logger.notice(
                    "the shield window said",
                    metadata: ["session": "\(key)", "stderr": "\(ExtensionHost.printable(said))"])
            }
            if notice { notices.started(started.pid) }
            return started
        } catch {
            logger.error("cannot show the shield window", metadata: ["session": "\(key)", "error": "\(error.message)"])
            return nil
        }
    }

    /// The primary group (real, effective and saved) the windows run with: `nogroup`, no person's.
    /// The kernel lets a process trace another, or read its memory and environment, only when its
    /// real uid and gid are the other's uids and gids: with a gid she cannot take, no program of
    /// hers can, from the window's first instruction on. (Its own `PR_SET_DUMPABLE` came after the
    /// dynamic loader: a program of hers that attached in that moment turned a notice into her
    /// game, which the usage tracker then counted as what was in front before the notice.) Her
    /// own primary group is among its groups, so what she may read it may read.
    static let windowGID: UInt32 = 65_534

    /// Ends a program it started, at once (the launcher, which started it, kills it: its pid is not
    /// anyone else's until it is reaped).
    func stop(_ program: SessionProgram) { launcher?.client?.stop(program.pid) }

    /// A program it started has ended (its output hung up and its pid is about to be reaped).
    func ended(_ program: SessionProgram) { notices.ended(program.pid) }

    /// The session's variables, with the account's own and what makes the window quick.
    static func environment(_ session: [String: String], account: UserAccount) -> [String: String] {
        var environment = session
        environment["HOME"] = account.home
        environment["USER"] = account.name
        environment["LOGNAME"] = account.name
        environment["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        environment["LANG"] = "C.UTF-8"
        if environment["XDG_RUNTIME_DIR"] == nil, Files.exists("/run/user/\(account.uid)") {
            environment["XDG_RUNTIME_DIR"] = "/run/user/\(account.uid)"
        }
        // A plain window: drawn by cairo (no GL to set up: 0.2 s to the screen, not 0.8 s on a
        // display without a GPU). Without the session's bus (not named by any program of the
        // session), nothing waits for one: settings in memory, no accessibility bus, no autolaunch.
        environment["GSK_RENDERER"] = "cairo"
        if environment["DBUS_SESSION_BUS_ADDRESS"] == nil {
            environment["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
            environment["GSETTINGS_BACKEND"] = "memory"
            environment["GTK_A11Y"] = "none"
        } else if !Files.exists(account.home) {
            environment["GSETTINGS_BACKEND"] = "memory"
        }
        return environment
    }
}
