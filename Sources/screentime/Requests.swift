import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

struct Ask: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask a guardian for more time on a shielded app, or to allow a web domain (children).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(name: .customLong("app"), help: "The app (its desktop-entry ID).") var application: String?
    @Option(name: .customLong("domain"), help: "The web domain.") var domain: String?
    @Option(help: "The token of a shielded app or domain (as 'screentime status' lists it).") var token: String?
    @Option(help: "How many minutes (1–240).") var minutes = 15
    @Option(help: "A note for the guardian.") var note: String?

    func validate() throws {
        guard [application, domain, token].compactMap({ $0 }).count == 1 else {
            throw ValidationError("ask for one thing: --app, --domain or --token")
        }
    }

    func run() throws {
        let reply = try perform(
            connection,
            AskRequest(application: application, webDomain: domain, token: token, minutes: minutes, note: note))
        if output.json { return try printJSON(reply) }
        print(
            "asked for \(reply.minutes) more minutes of \(reply.application ?? reply.webDomain ?? application ?? domain ?? "it") (ask \(reply.id)); a guardian decides"
        )
    }
}

struct Requests: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List asks for more time (guardians: everyone's; a child: its own).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only this user's.") var user: String?
    @Flag(help: "Only those waiting for an answer.") var pending = false

    func run() throws {
        let reply = try perform(connection, TimeRequestsRequest(user: user, pending: pending))
        if output.json { return try printJSON(reply.requests) }
        guard !reply.requests.isEmpty else { return print(pending ? "no asks waiting" : "no asks") }
        let clock = WallClock.current()
        func when(_ date: Date) -> String { clock.format(date, "EEE d MMM HH:mm") }
        for request in reply.requests {
            let what = request.application ?? request.webDomain ?? request.token
            var line = "\(request.id)  \(request.user)  \(request.minutes) min of \(what)  \(request.state)"
            if request.isAlways {
                line = "\(request.id)  \(request.user)  \(what)  allowed always"
            } else if let until = request.until, request.state == .granted {
                line += " until \(when(until))"
            }
            if let by = request.decidedBy { line += " (by \(by))" }
            line += "  asked \(when(request.createdAt))"
            if let note = request.note { line += "  “\(note)”" }
            print(line)
        }
    }
}

struct Grant: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Grant more time: an ask's, or screen time; or end a grant early (guardians).",
        discussion: """
            screentime grant 12                      (the minutes asked)
            screentime grant 12 --for 1h             (15m, 1h, rest-of-day, until 20:30)
            screentime grant 12 --always             (no end: a site joins those past the filter)
            screentime grant --user alice --screen-time --for rest-of-day
            screentime grant --end 12
            A grant adds to whichever is later of what the child still has of its limit and a \
            grant already running on the same thing: 15 minutes with 10 left give 25. \
            rest-of-day ends at midnight. Blocked apps stay blocked under any grant. With \
            --screen-time, downtime, the day's and week's screen time and their lock (--no-login) \
            are lifted: the child may log in and its sessions thaw. A guardian's lock is not \
            ('screentime lock --off' lifts it). --end ends a grant now: what it lifted holds again. \
            A site granted (for a time or --always) is let past the web filter as well as its shields.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The ask's number ('screentime requests').") var id: Int64?
    @Option(help: "Minutes to grant instead of those asked (1–720).") var minutes: Int?
    @Option(name: .customLong("for"), help: "How long: 15m, 1h, rest-of-day, until 20:30.") var length: String?
    @Option(help: "In the child's session: the guardian granting it in person (the password is asked).")
    var guardian: String?
    @Option(help: "With --screen-time: the user (name or uid).") var user: String?
    @Flag(name: .customLong("screen-time"), help: "More screen time now: lifts downtime and screen time's limits.")
    var screenTime = false
    @Option(help: "End this grant now (its number in 'screentime requests').") var end: Int64?
    @Flag(help: "Grant the ask with no end (until --end): a site asked for, always allowed.") var always = false

    func validate() throws {
        if always {
            guard id != nil, minutes == nil, length == nil, !screenTime, end == nil, user == nil else {
                throw ValidationError(
                    "--always takes the ask's number alone: no --minutes, --for, --screen-time or --end")
            }
        }
        guard !(minutes != nil && length != nil) else { throw ValidationError("give --minutes or --for, not both") }
        if let end {
            guard id == nil, !screenTime, user == nil, minutes == nil, length == nil, guardian == nil, end > 0 else {
                throw ValidationError("--end takes a grant's number and nothing else")
            }
        } else if screenTime {
            guard id == nil, user != nil, minutes != nil || length != nil, guardian == nil else {
                throw ValidationError("--screen-time takes --user and --minutes or --for, and no ask number")
            }
        } else {
            guard id != nil, user == nil else {
                throw ValidationError("give the ask's number ('screentime requests'), or --screen-time --user U")
            }
        }
    }

    func run() throws {
        if let end {
            let reply = try perform(connection, EndGrantRequest(id: end))
            if output.json { return try printJSON(reply) }
            print("ended grant \(reply.id) of \(reply.user): \(reply.application ?? reply.webDomain ?? reply.token)")
            return
        }
        let grantLength = try length.map { try parseLength($0) }
        if screenTime, let user {
            let request =
                grantLength.map { ScreenTimeGrantRequest(user: user, length: $0) }
                ?? ScreenTimeGrantRequest(user: user, minutes: minutes ?? 0)
            let reply = try perform(connection, request)
            if output.json { return try printJSON(reply) }
            print("granted \(reply.user) \(reply.minutes) minutes of screen time, until \(Self.time(reply.until))")
            return
        }
        guard let id else { return }
        var request = DecideRequest(
            id: id, grant: true, minutes: minutes, length: grantLength, always: always ? true : nil)
        if try perform(connection, PingRequest()).role != .guardian {
            request.guardian = try Terminal.askGuardian(name: guardian)
        }
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        if reply.isAlways {
            return print(
                "allowed \(reply.user) \(reply.application ?? reply.webDomain ?? reply.token) always ('screentime grant --end \(reply.id)' takes it back)"
            )
        }
        print(
            "granted \(reply.user) \(reply.minutes) minutes of \(reply.application ?? reply.webDomain ?? reply.token), until \(Self.time(reply.until))"
        )
    }

    static func time(_ date: Date?) -> String {
        guard let date else { return "?" }
        let clock = WallClock.current()
        return clock.format(date, clock.isSameDay(date, Date()) ? "HH:mm" : "EEE HH:mm")
    }
}

func parseLength(_ text: String) throws -> GrantLength {
    do {
        return try GrantLength.parse(text)
    } catch {
        throw ValidationError("--for: \(error.message)")
    }
}

struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lock a child's sessions and refuse its logins now (guardians).",
        discussion: """
            screentime lock --user alice                   (until a guardian unlocks it)
            screentime lock --user alice --for 30m
            screentime lock --user alice --for until 18:00
            screentime lock --user alice --for rest-of-day
            screentime lock --user alice --off             (or: screentime unlock --user alice)
            The child is told, its programs are held and its screen covered as downtime with \
            --no-login does, and its logins are refused saying until when. No grant of screen time \
            lifts a guardian's lock.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The child (name or uid).") var user: String
    @Option(name: .customLong("for"), help: "How long: 30m, 1h, rest-of-day, until 18:00 (default: until unlocked).")
    var length: String?
    @Flag(help: "Lift the lock.") var off = false

    func validate() throws {
        guard !(off && length != nil) else { throw ValidationError("--off takes no --for") }
    }

    func run() throws {
        let lockLength = try length.map { try parseLength($0) }
        let reply = try perform(connection, LockRequest(user: user, length: lockLength, unlock: off))
        if output.json { return try printJSON(reply) }
        if off {
            print(reply.lifted ? "\(reply.user.name) is unlocked" : "\(reply.user.name) was not locked by a guardian")
        } else if reply.untilUnlocked {
            print("\(reply.user.name) is locked until a guardian unlocks it")
        } else {
            print("\(reply.user.name) is locked until \(Grant.time(reply.until))")
        }
    }
}

struct Deny: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Deny an ask for more time (guardians).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The ask's number ('screentime requests').") var id: Int64
    @Option(help: "In the child's session: the guardian denying it in person (the password is asked).")
    var guardian: String?

    func run() throws {
        var request = DecideRequest(id: id, grant: false)
        if try perform(connection, PingRequest()).role != .guardian {
            request.guardian = try Terminal.askGuardian(name: guardian)
        }
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print("denied \(reply.user) more time on \(reply.application ?? reply.webDomain ?? reply.token)")
    }
}

struct ShieldConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shield-config",
        abstract: "A client's shield extensions for a user: the look of its shields, and what its buttons do.",
        discussion: """
            The configuration extension gets what is shielded as JSON on standard input and answers \
            a ShieldConfiguration as JSON; the action extension gets the button pressed and answers \
            close, defer or none. Both are root-owned programs no one else may change.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (name or uid).") var user: String
    @Option(help: "The client (default: screentime).") var client: String?
    @Option(help: "The configuration extension (an absolute path).") var configuration: String?
    @Option(help: "The action extension (an absolute path).") var action: String?
    @Flag(help: "Remove both: the default shield.") var reset = false

    func validate() throws {
        guard reset != (configuration != nil || action != nil) else {
            throw ValidationError("give --configuration PATH and/or --action PATH, or --reset")
        }
    }

    func run() throws {
        let reply = try perform(
            connection,
            ShieldConfigRequest(
                user: user, client: client, configuration: configuration, action: action, reset: reset))
        if output.json { return try printJSON(reply) }
        print("\(reply.client)'s shields for \(reply.user.name):")
        print("  configuration: \(reply.configuration ?? "the default")")
        print("  action: \(reply.action ?? "the default (OK closes; Ask for more time asks)")")
    }
}

struct Lockout: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "What a lock does to a child's open sessions: hold them, lock the screen, log out, or suspend (guardians).",
        discussion: """
            screentime lockout --user alice logout
            screentime lockout --user alice lock-screen
            screentime lockout --user alice --warn 15m,5m,1m
            screentime lockout --user alice          (says which)
            A lock is downtime or screen time with --no-login, or a guardian's 'screentime lock'. \
            hold (the default): every program of the child is held and its terminals told. logout: \
            its sessions are ended (their programs killed; unsaved work is lost, which the \
            5-minute warning says). lock-screen: held, and the screen locked (logind is asked to \
            lock the child's sessions: GNOME, whose lock screen its compositor draws, shows it; \
            a desktop whose locker is a program of the session's is only held). suspend: held, \
            and the computer suspended (the agent's suspendCommand). Logins are refused in each case. A lock in force when the agent \
            starts is only held.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The child (name or uid).") var user: String
    @Argument(help: "hold, lock-screen, logout or suspend.") var action: String?
    @Option(help: "When the child is warned before a lock, downtime or a limit: 30m,10m,5m,1m (the default); none.")
    var warn: String?

    func run() throws {
        let chosen = try action.map { text -> LockoutAction in
            guard let action = LockoutAction(rawValue: text.lowercased()) else {
                throw ValidationError(
                    "the lockout action is hold, lock-screen, logout or suspend, not '\(text.prefix(40))'")
            }
            return action
        }
        let warnings = try warn.map { text -> [Double] in
            guard text != "none" else { return [] }
            return try text.split(separator: ",").map { try duration(String($0), "--warn") }
        }
        let reply = try perform(connection, LockoutRequest(user: user, action: chosen, warnings: warnings))
        if output.json { return try printJSON(reply) }
        let told = reply.warnings.map { DurationText.format($0) }.joined(separator: ", ")
        print(
            "a lock on \(reply.user.name): \(reply.action.rawValue); warned \(told.isEmpty ? "never" : told + " before")"
        )
    }
}
