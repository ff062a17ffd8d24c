import ArgumentParser
import Foundation
import ScreenTimeIPC

struct Ask: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask a guardian for more time on a shielded app or web domain (children).")
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
        let formatter = DateFormatter()
        formatter.dateFormat = "EEE d MMM HH:mm"
        formatter.locale = Locale(identifier: "en_GB")
        for request in reply.requests {
            var line =
                "\(request.id)  \(request.user)  \(request.minutes) min of \(request.application ?? request.webDomain ?? request.token)  \(request.state)"
            if let until = request.until, request.state == .granted {
                line += " until \(formatter.string(from: until))"
            }
            if let by = request.decidedBy { line += " (by \(by))" }
            line += "  asked \(formatter.string(from: request.createdAt))"
            if let note = request.note { line += "  “\(note)”" }
            print(line)
        }
    }
}

struct Grant: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Grant an ask for more time: the shield is lifted for its minutes (guardians).",
        discussion: """
            screentime grant 12 --minutes 30
            screentime grant --user alice --screen-time --minutes 30
            With --screen-time, downtime's and the day's screen time's lock (--no-login) is lifted \
            for the minutes: the child may log in and its sessions thaw.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The ask's number ('screentime requests').") var id: Int64?
    @Option(help: "Minutes to grant instead of those asked (1–720).") var minutes: Int?
    @Option(help: "In the child's session: the guardian granting it in person (the password is asked).")
    var guardian: String?
    @Option(help: "With --screen-time: the user (name or uid).") var user: String?
    @Flag(name: .customLong("screen-time"), help: "More screen time now: lifts a login lock for --minutes.")
    var screenTime = false

    func validate() throws {
        if screenTime {
            guard id == nil, user != nil, minutes != nil, guardian == nil else {
                throw ValidationError("--screen-time takes --user and --minutes, and no ask number")
            }
        } else {
            guard id != nil, user == nil else {
                throw ValidationError("give the ask's number ('screentime requests'), or --screen-time --user U")
            }
        }
    }

    func run() throws {
        if screenTime, let user, let minutes {
            let reply = try perform(connection, ScreenTimeGrantRequest(user: user, minutes: minutes))
            if output.json { return try printJSON(reply) }
            print("granted \(reply.user) \(reply.minutes) minutes of screen time")
            return
        }
        guard let id else { return }
        var request = DecideRequest(id: id, grant: true, minutes: minutes)
        if try perform(connection, PingRequest()).role != .guardian {
            request.guardian = try Terminal.askGuardian(name: guardian)
        }
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print(
            "granted \(reply.user) \(reply.minutes) minutes of \(reply.application ?? reply.webDomain ?? reply.token)")
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
