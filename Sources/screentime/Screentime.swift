import ArgumentParser
import Foundation
import ScreenTimeClient
import ScreenTimeCore
import ScreenTimeIPC

@main
struct Screentime: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "screentime",
        abstract: "Screen Time for Linux: authorize, shield apps, categories and domains, read status.",
        discussion: """
            Talks to the agent (screentimed) over its control socket. Exit status: 0 done; 64 usage \
            error; 65 the agent refused what was asked (an unknown app, a limit); 69 the agent is \
            unreachable; 75 the agent is busy (try again); 77 not allowed (your role, a wrong \
            password); 70 the agent failed.
            """,
        version: AgentProtocolVersion.text,
        subcommands: [
            Authorize.self, Revoke.self, Status.self, Apps.self, Categories.self, TokenCommand.self, Shield.self,
            Unshield.self, Block.self, Unblock.self, DenyInstalls.self, FilterCommand.self, Clear.self, Pick.self,
            Unlock.self, Forget.self, Report.self, MonitorCommand.self, Limit.self, Downtime.self, Ask.self,
            Requests.self,
            Grant.self, Deny.self, ShieldConfig.self,
            Ping.self, LauncherCheck.self,
        ])
}

enum AgentProtocolVersion {
    static let text = "screentime 0.1.0 (protocol \(protocolVersion))"
}

/// Options every command shares.
struct ConnectionOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The agent's control socket (default: $SCREENTIME_SOCKET, else /run/screentime/screentimed.sock).",
            discussion: "Inside a monitor extension, the channel the agent gave it is used instead."))
    var socket: String?

    var client: ScreenTimeClient { ScreenTimeClient(socket: socket) }
}

struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON instead of text.")
    var json = false
}

struct StoreOptions: ParsableArguments {
    @Option(help: "The user whose store changes (name or uid; inside an extension, its user).")
    var user: String?

    @Option(help: "The named store (default: default).")
    var store: String?

    @Option(help: "The client owning the store (default: screentime).")
    var client: String?

    var request: StoreTarget { StoreTarget(user: user, client: client, store: store) }

    /// Outside an extension (whose user the agent knows), the user is not guessed.
    func validate() throws {
        if user == nil, ProcessInfo.processInfo.environment["SCREENTIME_CHANNEL_FD"] == nil {
            throw ValidationError("missing --user: whose store is it?")
        }
    }
}

/// Runs a request (with the files it names, opened by us), turning the agent's errors into a
/// message and an exit status.
func perform<R: ControlRequest>(_ connection: ConnectionOptions, _ request: R, files: [Int32] = []) throws -> R.Reply {
    do {
        return try connection.client.send(request, files: files)
    } catch {
        Terminal.error("screentime: \(error.message) [\(error.code)]")
        throw ExitCode(exitStatus(for: error.code))
    }
}

/// Programs named by path, opened by the caller to be passed with a request: the agent reads no
/// path for anyone. The descriptors live as long as this value.
final class OpenedPrograms {
    private(set) var descriptors: [Int32] = []

    deinit { for fd in descriptors { close(fd) } }

    /// Splits app names into IDs (sent as text) and program paths (opened, sent as files).
    func split(_ names: [String]) throws -> (ids: [String], files: [FileArgument]) {
        var ids: [String] = []
        var files: [FileArgument] = []
        for name in names {
            guard name.hasPrefix("/") else {
                ids.append(name)
                continue
            }
            files.append(try open(name))
        }
        return (ids, files)
    }

    func open(_ path: String) throws -> FileArgument {
        do {
            descriptors.append(try ScreenTimeClient.openFile(path))
        } catch {
            Terminal.error("screentime: \(error.message)")
            throw ExitCode(64)
        }
        return FileArgument(path: path, descriptor: descriptors.count - 1)
    }
}

func exitStatus(for code: ScreenTimeIPCError.Code) -> Int32 {
    if code == .agentUnreachable { return 69 }
    if code == .busy || code == .tooManyRequests { return 75 }
    if code.isRefusal { return 77 }
    if code == .internalError || code == .malformedReply { return 70 }
    return 65
}

/// Prints a value as pretty, sorted JSON.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
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

struct Authorize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Authorize a child account (as a guardian, or in the child's session with a guardian's password), or yourself as an individual."
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "The child's user name. In the child's own session, a guardian's name and password are asked.")
    var child: String?

    @Flag(help: "Restrict yourself (you can revoke it yourself).")
    var individual = false

    @Option(help: "The guardian approving in the child's session (asked if not given).")
    var guardian: String?

    @Flag(
        inversion: .prefixedNo,
        help: "Whether the child may see the names of what is shielded (--show-names, --no-show-names).")
    var showNames: Bool?

    func validate() throws {
        guard (child != nil) != individual else { throw ValidationError("give either --child USER or --individual") }
    }

    func run() throws {
        var request = AuthorizeRequest(member: individual ? .individual : .child, showNamesToChild: showNames)
        if let child {
            request.user = child
            let me = try perform(connection, PingRequest())
            let target = UserLookup.uid(of: child)
            if me.role != .guardian && target == me.callerUID {
                request.guardian = try Terminal.askGuardian(name: guardian)
            }
        }
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print("\(reply.user.name): \(reply.status.rawValue) as \(reply.member?.rawValue ?? "-")")
    }
}

struct Revoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Revoke an authorization (your own as an individual; a child's only as a guardian). Its stores are cleared."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (default: you).") var user: String?

    func run() throws {
        let reply = try perform(connection, RevokeRequest(user: user))
        if output.json { return try printJSON(reply) }
        print("\(reply.user.name): \(reply.status.rawValue)")
    }
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
            let id = app.id.padding(toLength: max(width, app.id.count), withPad: " ", startingAt: 0)
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

struct ShieldItems: ParsableArguments {
    @Option(name: .customLong("app"), help: "A desktop-entry ID (org.gnome.Chess), snap:NAME, or a program's path.")
    var applications: [String] = []
    @Option(name: .customLong("app-category"), help: "A freedesktop category (Game, Education, …).")
    var applicationCategories: [String] = []
    @Option(name: .customLong("domain"), help: "A web domain; everything under it is covered.")
    var webDomains: [String] = []
    @Option(name: .customLong("web-category"), help: "A web category list (see 'screentime categories').")
    var webCategories: [String] = []
    @Option(help: "A FamilyActivitySelection JSON file (from 'screentime pick'), or - for standard input.")
    var selection: String?

    func request(_ target: StoreTarget, remove: Bool, programs: OpenedPrograms) throws -> ShieldRequest {
        var picked: FamilyActivitySelection?
        if let selection {
            let data: Data
            do {
                data =
                    selection == "-"
                    ? FileHandle.standardInput.readDataToEndOfFile()
                    : try Data(contentsOf: URL(fileURLWithPath: selection))
            } catch {
                throw ValidationError("cannot read the selection \(selection): \(error.localizedDescription)")
            }
            do {
                picked = try JSONDecoder().decode(FamilyActivitySelection.self, from: data)
            } catch {
                throw ValidationError("\(selection) is not a FamilyActivitySelection: \(error)")
            }
        }
        let (ids, files) = try programs.split(applications)
        return ShieldRequest(
            target: target, applications: ids, applicationCategories: applicationCategories,
            webDomains: webDomains, webCategories: webCategories, selection: picked, applicationFiles: files,
            remove: remove)
    }
}

struct Shield: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Shield apps, categories and domains for a user, in a named store.")
    @OptionGroup var change: StoreChange

    func run() throws { try change.send(remove: false) }
}

struct Unshield: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Take apps, categories and domains out of a store.")
    @OptionGroup var change: StoreChange

    func run() throws { try change.send(remove: true) }
}

/// What `shield` and `unshield` share: the store, the items, and how the reply is shown.
struct StoreChange: ParsableArguments {
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @OptionGroup var items: ShieldItems

    func send(remove: Bool) throws {
        let programs = OpenedPrograms()
        let request = try items.request(target.request, remove: remove, programs: programs)
        let reply = try perform(connection, request, files: programs.descriptors)
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}

struct Block: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Block apps for a user: they may not run at all (application.blockedApplications).",
        discussion: "A blocked app is killed the moment it starts; a shielded app is frozen until the shield is lifted."
    )
    @OptionGroup var change: BlockChange

    func run() throws { try change.send(remove: false) }
}

struct Unblock: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let blocked apps run again.")
    @OptionGroup var change: BlockChange

    func run() throws { try change.send(remove: true) }
}

/// What `block` and `unblock` share: the store, the apps, and how the reply is shown.
struct BlockChange: ParsableArguments {
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @Option(name: .customLong("app"), help: "A desktop-entry ID (org.gnome.Chess), snap:NAME, or a program's path.")
    var applications: [String] = []

    func validate() throws {
        if applications.isEmpty { throw ValidationError("give at least one --app") }
    }

    func send(remove: Bool) throws {
        let programs = OpenedPrograms()
        let (ids, files) = try programs.split(applications)
        let request = ShieldRequest(
            target: target.request, blockedApplications: ids, blockedApplicationFiles: files, remove: remove)
        let reply = try perform(connection, request, files: programs.descriptors)
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}

struct FilterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filter",
        abstract: "Set a store's web-content filter (webContent.blockedByFilter).",
        discussion: """
            auto      block the shipped adult list and the --block domains, except the --allow domains
            specific  block the --block domains only
            all       block every domain except the --allow domains
            none      remove the filter
            A domain covers everything under it.
            """)

    enum Policy: String, ExpressibleByArgument, CaseIterable { case auto, specific, all, none }

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @Argument(help: "auto, specific, all or none.") var policy: Policy
    @Option(name: .customLong("block"), help: "A domain to block (auto, specific); repeat for more.")
    var blocked: [String] = []
    @Option(name: .customLong("allow"), help: "A domain never blocked (auto, all); repeat for more.")
    var allowed: [String] = []

    func validate() throws {
        switch policy {
        case .specific where blocked.isEmpty: throw ValidationError("'filter specific' needs at least one --block")
        case .specific where !allowed.isEmpty: throw ValidationError("'filter specific' takes no --allow")
        case .all where !blocked.isEmpty: throw ValidationError("'filter all' blocks everything; it takes no --block")
        case .none where !blocked.isEmpty || !allowed.isEmpty:
            throw ValidationError("'filter none' takes no --block or --allow")
        default: break
        }
    }

    func run() throws {
        func domains(_ texts: [String]) throws -> Set<DomainName> {
            var result: Set<DomainName> = []
            for text in texts {
                do {
                    result.insert(try DomainName(text))
                } catch {
                    throw ValidationError(error.message)
                }
            }
            return result
        }
        let filter: FilterPolicy =
            switch policy {
            case .auto: .auto(try domains(blocked), except: try domains(allowed))
            case .specific: .specific(try domains(blocked))
            case .all: .all(except: try domains(allowed))
            case .none: .none
            }
        let reply = try perform(connection, FilterRequest(target: target.request, policy: filter))
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}

struct Clear: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Clear every setting of a named store.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions

    func run() throws {
        let reply = try perform(connection, ClearRequest(target.request))
        if output.json { return try printJSON(reply) }
        print("cleared \(reply.store.client)/\(reply.store.name) for \(reply.user.name)")
    }
}

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

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift the lockout a user's session got after too many wrong guardian passwords (guardians).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user whose session was locked out.") var user: String

    func run() throws {
        let reply = try perform(connection, UnlockRequest(user: user))
        if output.json { return try printJSON(reply) }
        print(
            reply.hadFailures
                ? "\(reply.user.name) may try guardian passwords again"
                : "\(reply.user.name) had no wrong guardian passwords to forget")
    }
}

struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove everything kept of a user who is no longer authorized (guardians).",
        discussion: """
            For an account revoked, or deleted or renamed while authorized: its record leaves \
            `status`, and an account given the same uid later inherits nothing. An authorization in \
            force is revoked first (`screentime revoke --user NAME`).
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user: its name as authorized, or its uid.") var user: String

    func run() throws {
        let reply = try perform(connection, ForgetRequest(user: user))
        if output.json { return try printJSON(reply) }
        print(
            reply.forgotten
                ? "forgot \(reply.user.name) (uid \(reply.user.uid))"
                : "nothing was kept of \(reply.user.name) (uid \(reply.user.uid))")
    }
}

struct DenyInstalls: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deny-installs",
        abstract: "Let a user run only programs a guardian installed (application.denyAppInstallation).",
        discussion: """
            on: programs the user put on the PC itself (its own files, or anything in a directory it \
            can write, copies of the loader included) are refused before they run; scripts still run \
            through installed interpreters. off: the store no longer denies it.
            """)

    enum Switch: String, ExpressibleByArgument, CaseIterable { case on, off }

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @Argument(help: "on or off.") var state: Switch

    func run() throws {
        let reply = try perform(connection, DenyInstallsRequest(target: target.request, deny: state == .on))
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}
