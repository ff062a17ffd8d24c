import ArgumentParser
import FoundationEssentials
import Glibc
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
            Authorize.self, Revoke.self, Status.self, Apps.self, Categories.self, Services.self, TokenCommand.self,
            Shield.self,
            Unshield.self, Block.self, Unblock.self, DenyInstalls.self, FilterCommand.self, Clear.self, Pick.self,
            Unlock.self, Forget.self, Report.self, MonitorCommand.self, Limit.self, Downtime.self, Ask.self,
            Requests.self,
            Grant.self, Deny.self, Lock.self, Lockout.self, Allow.self, Free.self, ShieldConfig.self,
            Web.self, Browsers.self, Ping.self, LauncherCheck.self,
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
