import ArgumentParser
import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeAgent
import Synchronization

/// The screentime agent. Runs as root under systemd (or `make install`'s fallback).
@main
struct Screentimed: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "screentimed",
        abstract: "The screentime agent: enforces what guardians set, for every authorized user.",
        discussion: """
            Configuration keys (JSON, every key optional; man screentimed.json tells each): \
            \(AgentConfiguration.keys.map(\.key).joined(separator: ", ")). \
            Flags override the file. SIGHUP reloads the web lists.
            """,
        version: AgentVersion.current)

    @Option(help: "The configuration file.")
    var config: String = AgentConfiguration.defaultPath

    @Option(
        name: .customLong("state-dir"),
        help: "Where the state database and token secret live (default /var/lib/screentime).")
    var stateDirectory: String?

    @Option(help: "The control socket (default /run/screentime/screentimed.sock).")
    var socket: String?

    @Option(
        name: .customLong("guardian-group"),
        help: "The group whose members are guardians (default screentime-guardians).")
    var guardianGroup: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Flag(
        name: .customLong("remove-firewall"),
        help: "Remove the agent's firewall chains and browser policies and exit (on removal; stop the agent first).")
    var removeFirewall = false

    /// Prints the manual page screentimed.json(5), made from the configuration's own key list.
    @Flag(name: .customLong("configuration-manual"), help: .hidden)
    var configurationManual = false

    /// The agent starts itself with this, before it drops its capabilities: the launcher (see
    /// `Launcher`), serving the socket on this descriptor.
    @Option(name: .customLong("launcher"), help: .hidden)
    var launcherSocket: Int32?

    /// The launcher's extension account.
    @Option(name: .customLong("extension-uid"), help: .hidden)
    var extensionUID: UInt32?

    /// The launcher's dashboard account.
    @Option(name: .customLong("dashboard-uid"), help: .hidden)
    var dashboardUID: UInt32?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    func run() throws {
        // A peer that goes away mid-reply is an error on that write, not the end of the agent.
        ignoreBrokenPipes()
        // Before any thread: the agent's threads share two arenas of the C heap.
        Heap.limitArenas(to: 2)
        if let launcherSocket {
            throw ExitCode(
                Launcher.serve(socket: launcherSocket, extensionUID: extensionUID, dashboardUID: dashboardUID))
        }
        if configurationManual {
            print(ConfigurationManual.page(version: AgentVersion.current), terminator: "")
            return
        }
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "screentime.agent")
        do {
            var configuration = try AgentConfiguration.load(
                path: config, required: config != AgentConfiguration.defaultPath)
            if let stateDirectory { configuration.stateDirectory = stateDirectory }
            if let socket { configuration.socket = socket }
            if let guardianGroup { configuration.guardianGroup = guardianGroup }
            if removeFirewall {
                try Agent(configuration: configuration, logger: logger).removeFirewall()
                return
            }
            let agent = Agent(configuration: configuration, logger: logger)
            // Set up on this, the only thread, so that the capability drop at its end holds for
            // every thread the services start after it.
            let prepared = try agent.prepare()
            let outcome = Mutex<(any Error)?>(nil)
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                do {
                    try await agent.run(prepared)
                } catch {
                    outcome.withLock { $0 = error }
                }
                done.signal()
            }
            done.wait()
            if let error = outcome.withLock({ $0 }) { throw error }
        } catch let error as AgentError {
            logger.critical("cannot run: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        }
    }
}
