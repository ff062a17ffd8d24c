import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeClient
import ScreenTimeCore
import ScreenTimeIPC

struct LauncherCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launcher-check",
        abstract: "Check that the agent can start programs as another account, without network (guardians).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let reply = try perform(connection, LauncherCheckRequest())
        if output.json { return try printJSON(reply) }
        print(
            "launcher \(reply.launcher): /bin/true ran as \(reply.account) (uid \(reply.uid)) without network, pid \(reply.pid), "
                + "exit status \(reply.exitStatus), \(reply.milliseconds) ms")
    }
}

struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "The token of an app, a domain or a category on this PC.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "app, domain or category") var kind: String
    @Argument(help: "A desktop-entry ID, a domain, or a category name.") var identity: String
    @Option(help: "Whose applications to look the app up in (default: you).") var user: String?

    func validate() throws {
        guard TokenKindName(rawValue: kind) != nil else { throw ValidationError("the kind is app, domain or category") }
    }

    func run() throws {
        var request = TokenRequest(kind: TokenKindName(rawValue: kind) ?? .app, identity: identity, user: user)
        let programs = OpenedPrograms()
        if request.kind == .app, identity.hasPrefix("/") { request.file = try programs.open(identity) }
        let reply = try perform(connection, request, files: programs.descriptors)
        if output.json { return try printJSON(reply) }
        print(reply.token)
    }
}

struct Apps: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The desktop applications installed for a user, with categories and tokens (guardians only).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (default: you).") var user: String?

    func run() throws {
        let reply = try perform(connection, ApplicationsRequest(user: user))
        if output.json { return try printJSON(reply) }
        let width = min(40, reply.applications.map(\.id.count).max() ?? 10)
        for app in reply.applications {
            let id = padded(app.id, to: width)
            print("\(id)  \(app.name)  [\(app.categories.joined(separator: ", "))]  \(app.source)")
        }
        print("\(reply.applications.count) applications for \(reply.user.name)")
    }
}

struct Categories: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "App categories (freedesktop) and web categories.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user whose applications are counted (default: you).") var user: String?

    func run() throws {
        let reply = try perform(connection, CategoriesRequest(user: user))
        if output.json { return try printJSON(reply) }
        for category in reply.categories {
            let count = category.count.map { "  \($0) installed" } ?? ""
            print("\(category.kind)  \(category.name)\(count)")
        }
    }
}

struct Services: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The service catalogue: YouTube, TikTok, Discord… with their web domains and apps.",
        discussion: """
            A service is shielded as one item: 'screentime shield --user U --service youtube' shields its \
            domains and its apps. The catalogue is /etc/screentime/services/ID.service; a guardian adds \
            a service with a file of their own there.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Flag(name: .shortAndLong, help: "Each service's domains and apps too.") var verbose = false

    func run() throws {
        let reply = try perform(connection, ServicesRequest())
        if output.json { return try printJSON(reply) }
        let width = reply.services.map(\.id.count).max() ?? 0
        for service in reply.services {
            let id = service.id + String(repeating: " ", count: width - service.id.count)
            let what = [
                service.category, service.domains.isEmpty ? nil : count(service.domains.count, "domain"),
                service.applications.isEmpty ? nil : count(service.applications.count, "app"),
            ].compactMap { $0 }.joined(separator: ", ")
            print("\(id)  \(service.name) (\(what))")
            if verbose {
                if !service.domains.isEmpty { print("    domains: \(service.domains.joined(separator: " "))") }
                if !service.applications.isEmpty { print("    apps: \(service.applications.joined(separator: " "))") }
            }
        }
        for problem in reply.problems { Terminal.error("screentime: a service file was not read: \(problem)") }
    }

    private func count(_ number: Int, _ noun: String) -> String { number == 1 ? "1 \(noun)" : "\(number) \(noun)s" }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Authorization, stores with their settings, and the effective policy after the merge.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (default: you).") var user: String?

    func run() throws {
        let reply = try perform(connection, StatusRequest(user: user))
        if output.json { return try printJSON(reply) }
        print(StatusText(reply).render(), terminator: "")
    }
}

struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check that the agent answers, and who you are to it.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let reply = try perform(connection, PingRequest())
        if output.json { return try printJSON(reply) }
        print(
            "screentimed \(reply.agentVersion) (protocol \(reply.protocolVersion)); you are uid \(reply.callerUID), \(reply.role.rawValue)"
        )
    }
}
