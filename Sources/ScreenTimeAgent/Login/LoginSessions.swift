import Dispatch
import FoundationEssentials
import LinuxSupport
package import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

/// The login sessions of authorized users the PAM module tells of (`pam_screentime.so`): each
/// lives while its leader does (login, sshd's worker, su, the display manager's worker — the
/// hook's parent), watched through a pidfd by one thread, so a session that ends without its
/// close hook (a killed sshd) ends all the same.
///
/// Text sessions (tty, ssh, su) count as screen time while they last (the usage tracker makes
/// them a session of their own); graphical ones are listed only: their time is what is in front.
/// When a user's sessions are locked (downtime or the day's screen time, with `--no-login`) or
/// about to be, text sessions are told on their terminal.
package final class LoginSessions: Service, PolicyConsumer, Sendable {
    struct Login: Sendable, Hashable {
        var uid: UInt32
        var kind: String
        var service: String
        var tty: String
        var remoteHost: String?
        var since: Date
        var leader: Int32
        var leaderStart: UInt64
    }

    static let perUser = 64
    static let total = 1024

    private let logger: Logger
    private let stateDirectory: String
    private let inspector = ProcessInspector()
    private let state = Mutex(State())
    private let leaders: ProcessEndWatch
    /// Told when a text session starts or ends (the usage tracker).
    private let textSessions: (any TextSessions)?

    /// What suspends the computer (the configuration's `suspendCommand`, split); empty: nothing.
    private let suspendCommand: [String]
    /// The bus logind is on (the configuration's `logindBus`), asked to lock screens; empty: none.
    private let logindBus: String

    private struct State {
        /// Whether a policy was applied yet: the locks in force at the agent's start are held, and
        /// only those that come later log out or suspend (a restart never suspends again).
        var applied = false
        var logins: [Int32: Entry] = [:]
        /// Who was locked at the last policy, and the children the cache file lists.
        var locked: [UInt32: String] = [:]
        var children: [UInt32: String]?
    }

    private struct Entry {
        var login: Login
        var watch: UInt64
    }

    /// - Parameter textSessions: told when a text session starts or ends (the usage tracker).
    package init(
        stateDirectory: String, textSessions: (any TextSessions)?, suspendCommand: String = "",
        logindBus: String = "", logger: Logger
    ) {
        self.stateDirectory = stateDirectory
        self.suspendCommand = suspendCommand.split(separator: " ").map(String.init)
        self.logindBus = logindBus
        self.textSessions = textSessions
        self.logger = logger
        leaders = ProcessEndWatch(logger: logger)
    }

    /// Watches the sessions' leaders on a thread of its own until the agent stops.
    package func run() async throws {
        leaders.start(threadName: "st-logins") { [weak self] leader, watch in self?.leaderEnded(leader, watch: watch) }
        try? await gracefulShutdown()
        leaders.stop()
    }

    static func key(_ login: Login) -> String { "login:\(login.leader):\(login.leaderStart)" }

    /// Whether a login's whole time counts as screen time: a text session on a terminal (a
    /// graphical one counts what is in front; one without a terminal, a cron job, nothing).
    static func counts(_ login: Login) -> Bool { textKinds.contains(login.kind) }
    static let textKinds: Set<String> = ["tty", "ssh", "su"]

    /// A session opened; its leader is `leader`. Refused past the caps (the login goes on; it is
    /// just not listed, and its time not counted as a text session's).
    func open(uid: UInt32, request: LoginRequest, leader: Int32) {
        guard let start = inspector.startTime(pid: leader), let watch = leaders.watch(leader) else {
            return
        }
        let login = Login(
            uid: uid, kind: request.loginKind, service: String(request.service.prefix(64)),
            tty: String(request.tty.prefix(64)), remoteHost: request.remoteHost.map { String($0.prefix(255)) },
            since: Date(), leader: leader, leaderStart: start)
        let added = state.withLock { state -> Bool in
            if let old = state.logins.removeValue(forKey: leader) { leaders.forget(old.watch) }
            guard state.logins.count < Self.total,
                state.logins.values.filter({ $0.login.uid == uid }).count < Self.perUser
            else { return false }
            state.logins[leader] = Entry(login: login, watch: watch)
            return true
        }
        guard added else {
            leaders.forget(watch)
            logger.warning("too many login sessions to list", metadata: ["uid": "\(uid)"])
            return
        }
        logger.info(
            "login session opened",
            metadata: ["uid": "\(uid)", "kind": "\(login.kind)", "tty": "\(login.tty)", "service": "\(login.service)"])
        if Self.counts(login) {
            textSessions?.textSessionStarted(uid: uid, key: Self.key(login), kind: login.kind, tty: login.tty)
        }
    }

    /// A session closed (its close hook ran in its leader).
    func close(leader: Int32) {
        guard let entry = state.withLock({ $0.logins.removeValue(forKey: leader) }) else { return }
        leaders.forget(entry.watch)
        ended(entry)
    }

    /// A session's leader ended (its close hook never ran: a killed sshd, say).
    private func leaderEnded(_ leader: Int32, watch: UInt64) {
        let gone = state.withLock { state -> Entry? in
            guard state.logins[leader]?.watch == watch else { return nil }
            return state.logins.removeValue(forKey: leader)
        }
        if let gone { ended(gone) }
    }

    private func ended(_ entry: Entry) {
        logger.info("login session closed", metadata: ["uid": "\(entry.login.uid)", "tty": "\(entry.login.tty)"])
        if Self.counts(entry.login) { textSessions?.textSessionEnded(key: Self.key(entry.login)) }
    }

    func report(uid: UInt32) -> [LoginReport] {
        state.withLock { state in
            state.logins.values.map(\.login).filter { $0.uid == uid }.sorted { $0.since < $1.since }.map {
                LoginReport(
                    kind: $0.kind, service: $0.service, tty: $0.tty, remoteHost: $0.remoteHost, since: $0.since,
                    leader: $0.leader)
            }
        }
    }

    /// Tells the user's text sessions, on their terminals (warnings before a lock, the lock).
    func warn(uid: UInt32, _ text: String) {
        let ttys = state.withLock { state in
            state.logins.values.map(\.login).filter { $0.uid == uid && Self.counts($0) }.map(\.tty)
        }
        for tty in Set(ttys) { Self.write(text, toTerminal: tty) }
    }

    /// Writes a line to a terminal named as PAM names it, never blocking.
    static func write(_ text: String, toTerminal tty: String) {
        Terminals.write("\r\n*** screentime: \(text) ***\r\n", toTerminal: tty)
    }

    // MARK: the policy: locks told, and the children the PAM hooks fail closed for

    package func apply(_ snapshot: PolicySnapshot) {
        var locked: [UInt32: String] = [:]
        var children: [UInt32: String] = [:]
        for user in snapshot.users.values {
            children[user.uid] = user.name + " " + user.member.rawValue
            if user.isLocked, let lock = user.loginLock { locked[user.uid] = LoginText.lockMessage(lock, user: nil) }
        }
        let (newlyLocked, writeCache, started) = state.withLock { state -> ([UInt32: String], Bool, Bool) in
            let newly = locked.filter { state.locked[$0.key] == nil }
            state.locked = locked
            let write = state.children != children
            if write { state.children = children }
            let started = state.applied
            state.applied = true
            return (newly, write, started)
        }
        for (uid, message) in newlyLocked { warn(uid: uid, "This session is locked. " + message) }
        if writeCache { writeChildren(children) }
        guard started else { return }
        for uid in newlyLocked.keys.sorted() {
            guard let user = snapshot.users[uid], user.lockout != .hold else { continue }
            let action = user.lockout
            // Off the publisher's thread: the sessions are held already, this only ends them.
            DispatchQueue.global().async { [self] in
                switch action {
                case .hold: break
                case .logout: logOut(user)
                case .suspend: suspend(user)
                case .lockScreen: lockScreens(user)
                }
            }
        }
    }

    /// Ends a locked user's sessions: their leaders (login, sshd's worker, su, a display
    /// manager's worker) are asked to end, then every program of the user's uids (held, so they
    /// cannot fork meanwhile) is killed, and the leaders still there too. Only while the lock is
    /// in force: what the user starts after a guardian lifted it is left alone.
    private func logOut(_ user: PolicySnapshot.User) {
        func stillLocked() -> Bool { state.withLock { $0.locked[user.uid] != nil } }
        let leaders = state.withLock { state in
            state.logins.values.map(\.login).filter { $0.uid == user.uid }.compactMap {
                ProcessHandle(pid: $0.leader, startTime: $0.leaderStart)
            }
        }
        for leader in leaders { leader.terminate() }
        var killed = 0
        for _ in 0..<3 {
            for pid in inspector.pids() {
                guard stillLocked() else { break }
                if let process = ProcessHandle(pid: pid, inspector: inspector, owner: { user.uids.contains($0) }),
                    process.kill()
                {
                    killed += 1
                }
            }
            Threads.sleep(0.5)
        }
        for leader in leaders where leader.isAlive && stillLocked() { leader.kill() }
        logger.notice(
            "locked: logged out",
            metadata: ["user": "\(user.name)", "sessions": "\(leaders.count)", "killed": "\(killed)"])
    }

    /// Asks logind to lock the screens of a locked user whose lockout is `lock-screen` (their
    /// sessions are held; a compositor that draws its own lock screen passes the lock).
    private func lockScreens(_ user: PolicySnapshot.User) {
        guard !logindBus.isEmpty else {
            logger.warning("locked: lock-screen asked, but no logindBus is set", metadata: ["user": "\(user.name)"])
            return
        }
        do {
            let asked = try LogindWatch.lockSessions(of: user.uid, address: logindBus)
            logger.notice("locked: screens locked", metadata: ["user": "\(user.name)", "sessions": "\(asked)"])
        } catch {
            logger.error("locked: cannot lock the screen", metadata: ["user": "\(user.name)", "error": "\(error)"])
        }
    }

    /// Suspends the computer for a locked user whose lockout is `suspend` (their sessions are held).
    private func suspend(_ user: PolicySnapshot.User) {
        guard let program = suspendCommand.first else {
            logger.warning("locked: suspend asked, but no suspendCommand is set", metadata: ["user": "\(user.name)"])
            return
        }
        do {
            let outcome = try ChildProcess.run(
                program, Array(suspendCommand.dropFirst()), environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
                deadline: 30)
            logger.notice(
                "locked: suspended", metadata: ["user": "\(user.name)", "status": "\(outcome.status)"])
        } catch {
            logger.error("locked: cannot suspend", metadata: ["user": "\(user.name)", "error": "\(error)"])
        }
    }

    /// The file the PAM hooks read first: the authorized users (`uid name child|individual`
    /// lines), root's alone, replaced whole at every change. Anyone else's login goes on without
    /// the agent being asked; a child's is refused while the agent does not answer.
    static let childrenFile = "login-children"

    private func writeChildren(_ children: [UInt32: String]) {
        let text =
            "# authorized users: the PAM hooks ask the agent about these only, and refuse children while it does not answer\n"
            + children.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
        let path = stateDirectory + "/" + Self.childrenFile
        do {
            try Files.writeAtomically(Array(text.utf8), to: path, mode: 0o600)
        } catch {
            logger.error(
                "cannot write the children the login hooks refuse while the agent is down",
                metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}

/// What a refused login and a locked session are told.
enum LoginText {
    static func lockMessage(_ lock: PolicySnapshot.LoginLock, user: String?, now: Date = Date()) -> String {
        let clock = WallClock.current()
        let sameDay = clock.isSameDay(lock.until, now)
        let when = clock.format(lock.until, sameDay ? "HH:mm" : "EEEE at HH:mm")
        let who = user.map { "\($0) may" } ?? "You may"
        switch lock.reason {
        case "downtime":
            return "It is downtime until \(when). \(who) log in again then."
        case "guardian" where lock.until >= PolicyService.untilUnlocked:
            return "A guardian locked this account. \(who) log in again once a guardian unlocks it."
        case "guardian":
            return "A guardian locked this account until \(when). \(who) log in again then."
        case "weekly screen time":
            return "This week's screen time is used up. \(who) log in again \(sameDay ? "at" : "on") \(when)."
        case "monthly screen time":
            return "This month's screen time is used up. \(who) log in again \(sameDay ? "at" : "on") \(when)."
        default:
            return "Today's screen time is used up. \(who) log in again \(sameDay ? "at" : "on") \(when)."
        }
    }
}
