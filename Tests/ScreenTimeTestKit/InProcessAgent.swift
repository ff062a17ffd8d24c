import Foundation
import LinuxSupport
import Logging
public import ScreenTimeAgent
public import ScreenTimeCore
import ScreenTimeIPC

/// The agent's policy service, activity scheduler and control router, in the test's own process,
/// on a state database in a temporary directory: a table of accounts instead of the system's, a
/// fake password check (`mum` / `right`), a manual clock for the guardians' password waits, and no
/// kernel edges (no shields, no launcher, no usage). What a request does to the policy, who may
/// make it and what it answers are tested here in milliseconds, without root.
public final class InProcessAgent: Sendable {
    public let directory: TemporaryDirectory
    public let configuration: AgentConfiguration
    public let accounts: FamilyAccounts
    public let minter: TokenMinter
    public let clock: ManualClock
    public let router: ControlRouter
    package let database: StateDatabase
    package let publisher: PolicyPublisher
    package let policy: PolicyService
    package let scheduler: ActivityScheduler
    let logger = Logger(label: "test")

    /// - Parameters:
    ///   - accounts: the PC's accounts.
    ///   - subordinateUIDs: `/etc/subuid`'s text (the agent reads it as the kid's extra uids).
    public init(accounts: FamilyAccounts = FamilyAccounts(), subordinateUIDs: String = "") throws {
        directory = try TemporaryDirectory()
        var configuration = AgentConfiguration()
        configuration.guardianGroup = FamilyAccounts.guardianGroupName
        configuration.stateDirectory = directory.path
        configuration.subordinateUIDs = directory.path + "/subuid"
        configuration.subordinateGIDs = directory.path + "/subgid"
        configuration.categoriesDirectory = directory.path + "/categories"
        configuration.servicesDirectory = directory.path + "/services"
        configuration.socket = directory.path + "/agent.sock"
        try subordinateUIDs.write(toFile: configuration.subordinateUIDs, atomically: true, encoding: .utf8)
        // One service of the catalogue: a test's own domain and its fixture game.
        try FileManager.default.createDirectory(
            atPath: configuration.servicesDirectory, withIntermediateDirectories: true)
        try "name = Blocks Online\ncategory = games\ndomains = blocks.example.com\napps = org.example.Blocks\n".write(
            toFile: configuration.servicesDirectory + "/blocks.service", atomically: true, encoding: .utf8)
        self.configuration = configuration
        self.accounts = accounts
        let clock = ManualClock()
        self.clock = clock
        database = try StateDatabase(path: directory.path + "/state.sqlite")
        minter = try TokenMinter(secret: [UInt8](repeating: 9, count: 32))
        publisher = PolicyPublisher(database: database, configuration: configuration, logger: logger, users: accounts)
        let edits = PolicyEdits(database: database, publisher: publisher, logger: logger)
        let shieldEvents = ShieldEvents()
        scheduler = ActivityScheduler(
            database: database, usage: nil, usersInFrontGained: nil, publisher: publisher,
            reactions: BuiltInRules(
                edits: edits, users: accounts, shieldEvents: shieldEvents, logins: nil, logger: logger),
            programCallbacks: nil, logger: logger)
        let launcher = ProgramLauncher(client: nil, extensionAccount: nil, problem: "none in tests", logger: logger)
        policy = PolicyService(
            configuration: configuration, database: database, minter: minter,
            suffixes: try PublicSuffixList(parsing: "com\norg\nco.uk\n"), publisher: publisher, edits: edits,
            domainShield: nil,
            processShield: nil, launcher: launcher, usage: nil, scheduler: scheduler, logins: nil,
            shieldEvents: shieldEvents, shieldProblems: ShieldProblems(), logger: logger, users: accounts,
            checkPassword: { user, password in
                guard user == "mum", password == "right" else {
                    throw ScreenTimeIPCError(.authenticationFailed, "wrong password")
                }
            }, now: { clock.now })
        publisher.add(scheduler)
        router = .agent(policy: policy, launcher: launcher, logger: logger)
    }

    /// The control socket's path, once `serve()` runs.
    public var socket: String { configuration.socket }

    /// Serves the control socket and runs the scheduler, on tasks of their own, for as long as the
    /// test's process runs; returns once the socket is there.
    public func serve() async throws {
        let server = ControlServer(path: socket, router: router, admission: policy.admission, logger: logger)
        Task.detached { [scheduler] in try await scheduler.run() }
        Task.detached { try await server.run() }
        // Tasks start when the cooperative pool has a thread free; on two cores, other suites'
        // synchronous tests may hold both for minutes. Waiting by sleeping the task (not the
        // thread) gives the server this one.
        for _ in 0..<30_000 where !FileManager.default.fileExists(atPath: socket) {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The token of a desktop entry's application.
    public func app(_ id: String) -> ApplicationToken { minter.token(for: .desktopEntry(id)) }
}
