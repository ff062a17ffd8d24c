import FoundationEssentials
public import LinuxSupport
public import Logging
import ScreenTimeCore
import ServiceLifecycle

/// The agent: opens its state, then runs its services in one group until SIGTERM or SIGINT, when
/// they stop in reverse order.
public struct Agent {
    public let configuration: AgentConfiguration
    private let logger: Logger

    public init(configuration: AgentConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The services, made in the order they depend on each other: each is given what it needs
    /// when it is made. What flows back up the order flows through the streams made first: what the
    /// shield presenter shows (`ShieldEvents`), the programs whose environments name sessions
    /// (`SessionHints`), and the users who came to have something in front. Nothing here starts a
    /// thread: the launcher (forked first) and the capability drop need the process to have one.
    ///
    /// ```
    /// launcher, shield program ─┐
    /// events, hints, front ─────┤
    ///   process shield ← usage tracker ← domain shield
    ///   publisher ← login sessions ← activity scheduler ← policy service ← extension host
    ///   control server (the policy's routes), shield presenter (usage, policy, processes)
    /// ```
    func makeServices(launcher: ProgramLauncher) throws -> Prepared {
        do {
            try Files.makeDirectory(configuration.stateDirectory, mode: 0o700)
        } catch {
            throw AgentError(.state, "cannot make the state directory: \(error.message)", cause: error)
        }
        if let mode = try? Files.mode(of: configuration.stateDirectory), mode & 0o077 != 0 {
            logger.warning(
                "the state directory is open to others; it should be 0700",
                metadata: ["directory": "\(configuration.stateDirectory)", "mode": "\(String(mode, radix: 8))"])
        }
        let secret = try TokenSecret.loadOrCreate(at: configuration.stateDirectory + "/token.secret")
        let minter = try TokenMinter(secret: secret)
        let database: StateDatabase
        do {
            database = try StateDatabase(
                path: configuration.stateDirectory + "/state.sqlite", retentionDays: configuration.eventRetentionDays)
        } catch {
            throw AgentError(.state, "cannot open \(configuration.stateDirectory)/state.sqlite: \(error)", cause: error)
        }
        let suffixes = loadSuffixes()
        let users = UserDirectory()
        func component(_ name: String) -> Logger {
            var logger = self.logger
            logger[metadataKey: "component"] = "\(name)"
            return logger
        }
        let logger = self.logger
        // The streams between services.
        let shieldEvents = ShieldEvents()
        let shieldProblems = ShieldProblems()
        let sessionHints = SessionHints()
        let (usersInFront, usersInFrontGained) = AsyncStream.makeStream(
            of: Set<UInt32>.self, bufferingPolicy: .bufferingNewest(64))
        let shieldProgram = ShieldProgram(
            path: ShieldProgram.defaultPath(), launcher: launcher, users: users, logger: component("shield"))
        let ownExecutable = FileStatus.of(path: "/proc/self/exe").map { FileIdentity($0.key) }
        // The shields and usage.
        let processes = ProcessShield(
            configuration: configuration, database: database, minter: minter,
            launcher: launcher.client.map { ($0.pid, ownExecutable) }, sessionHints: sessionHints,
            shieldEvents: shieldEvents, logger: component("process"))
        let usage = UsageTracker(
            configuration: configuration, database: database, processes: processes, minter: minter,
            hints: sessionHints, shieldEvents: shieldEvents, relays: shieldProgram,
            usersInFrontGained: usersInFrontGained, logger: component("usage"), users: users)
        let domains = DomainShield(
            configuration: configuration, database: database, minter: minter, suffixes: suffixes, web: usage,
            shieldEvents: shieldEvents, logger: component("dns"))
        // The policy, and what changes it over time.
        let publisher = PolicyPublisher(database: database, configuration: configuration, logger: logger)
        let edits = PolicyEdits(database: database, publisher: publisher, logger: logger)
        let logins = LoginSessions(
            stateDirectory: configuration.stateDirectory, textSessions: usage,
            suspendCommand: configuration.suspendCommand,
            logindBus: configuration.logindBus, logger: component("login"))
        let rules = BuiltInRules(
            edits: edits, users: users, shieldEvents: shieldEvents, logins: logins, logger: component("schedule"))
        let (programCallbacks, programCallbacksOwed) = AsyncStream.makeStream(of: [OwedCallback].self)
        let scheduler = ActivityScheduler(
            database: database, usage: usage, usersInFrontGained: usersInFront, publisher: publisher,
            reactions: rules, programCallbacks: programCallbacksOwed, logger: component("schedule"))
        let policy = PolicyService(
            configuration: configuration, database: database, minter: minter, suffixes: suffixes,
            publisher: publisher, edits: edits, domainShield: domains, processShield: processes, launcher: launcher,
            usage: usage, scheduler: scheduler, logins: logins, shieldEvents: shieldEvents,
            shieldProblems: shieldProblems, logger: logger, users: users)
        let dashboard = DashboardSupervisor(
            launcher: launcher, database: database, configuration: configuration, logger: component("dashboard"))
        // What people see and ask through.
        let server = ControlServer(
            path: configuration.socket,
            router: .agent(policy: policy, launcher: launcher, dashboard: dashboard, logger: logger),
            admission: policy.admission, logger: logger)
        let extensions = ExtensionHost(
            database: database, launcher: launcher, programCallbacks: programCallbacks, scheduler: scheduler,
            serving: server.serving, users: users, logger: component("extensions"))
        let presenter = ShieldPresenter(
            events: shieldEvents, problems: shieldProblems, database: database, launcher: launcher,
            program: shieldProgram, usage: usage, policy: policy, processes: processes, logger: component("shield"))
        let watch = SubordinateIDWatch(
            publisher: publisher, files: [configuration.subordinateUIDs, configuration.subordinateGIDs],
            logger: logger)
        return Prepared(
            publisher: publisher, policy: policy, domains: domains, processes: processes, subordinateIDs: watch,
            launcher: launcher, usage: usage, scheduler: scheduler, extensions: extensions, presenter: presenter,
            logins: logins, server: server, dashboard: dashboard)
    }

    /// The services, set up and ready to run.
    public struct Prepared: Sendable {
        let publisher: PolicyPublisher
        let policy: PolicyService
        let domains: DomainShield
        let processes: ProcessShield
        let subordinateIDs: SubordinateIDWatch
        let launcher: ProgramLauncher
        let usage: UsageTracker
        let scheduler: ActivityScheduler
        let extensions: ExtensionHost
        let presenter: ShieldPresenter
        let logins: LoginSessions
        let server: ControlServer
        let dashboard: DashboardSupervisor
    }

    /// What the agent keeps once set up (see `Capabilities.Name` for why each).
    public static let keptCapabilities: Set<Capabilities.Name> = [
        .dacOverride, .kill, .netAdmin, .netRaw, .sysPtrace, .sysNice,
    ]

    /// How long the services have to end after SIGTERM before they are cancelled.
    public static let stopGrace: Duration = .seconds(15)

    /// Starts the launcher, makes the services, opens what needs privileges (the proc connector,
    /// the cgroups, the exec gate), drops every capability but `keptCapabilities`, then installs
    /// the rules and filters and judges running processes. Call it on the process's only thread,
    /// before anything async runs: capabilities belong to threads, and the threads started after
    /// the drop inherit the reduced sets.
    public func prepare() throws -> Prepared {
        // One descriptor per held process: a child's storm of held execs must not use them up.
        do {
            let (before, after) = try OpenFileLimit.raise()
            if after != before {
                logger.info("open files limit raised", metadata: ["from": "\(before)", "to": "\(after)"])
            }
        } catch {
            logger.warning("cannot raise the open files limit", metadata: ["error": "\(error.message)"])
        }
        // The launcher keeps what starting programs as other users needs; started first, while
        // the agent has one thread and every capability.
        let launcher = ProgramLauncher.start(
            extensionUser: configuration.extensionUser, dashboardUser: configuration.webUser, logger: logger)
        let prepared = try makeServices(launcher: launcher)
        let snapshot: PolicySnapshot
        do {
            snapshot = try prepared.publisher.first()
        } catch {
            throw AgentError(.state, "cannot read the policy: \(error)", cause: error)
        }
        let processes = prepared.processes
        // What needs capabilities the agent then drops: the proc connector, the cgroups, the
        // exec gate and its file system marks. No thread runs yet.
        processes.open(snapshot: snapshot, keeping: Self.keptCapabilities)
        do {
            // The gate's thread, started by `open`, dropped its own.
            try Capabilities.restrict(to: Self.keptCapabilities, selfDropping: processes.selfDroppingThreads)
            logger.info(
                "capabilities dropped",
                metadata: ["kept": "\(Self.keptCapabilities.map(\.rawValue).sorted().joined(separator: ","))"])
        } catch {
            // Enforcing with too many capabilities beats not enforcing; the tests check the drop.
            logger.critical("cannot drop capabilities: \(error.message)")
        }
        // The rules and filters are in place, and running processes judged, before anyone can
        // ask anything; from then on, every change reaches them through the publisher, in this
        // order.
        let publisher = prepared.publisher
        prepared.domains.apply(snapshot)
        processes.start(snapshot: snapshot)
        publisher.add(prepared.domains)
        publisher.add(processes)
        // After the process shield: a user newly authorized has their processes tracked first.
        prepared.usage.apply(snapshot)
        publisher.add(prepared.usage)
        // The first snapshot too: when the grants in force at start end.
        prepared.scheduler.apply(snapshot)
        publisher.add(prepared.scheduler)
        prepared.logins.apply(snapshot)
        publisher.add(prepared.logins)
        return prepared
    }

    public func run(_ prepared: Prepared) async throws {
        var groupConfiguration = ServiceGroupConfiguration(
            services: Self.failurePolicy(prepared), gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // A service that does not end when asked is cancelled: a stop never leaves the agent
        // half-alive (no socket, so not restarted by its supervisor).
        groupConfiguration.maximumGracefulShutdownDuration = Self.stopGrace
        let group = ServiceGroup(configuration: groupConfiguration)
        logger.notice(
            "screentimed \(AgentVersion.current) started",
            metadata: ["state": "\(configuration.stateDirectory)", "socket": "\(configuration.socket)"])
        prepared.dashboard.start()
        defer { prepared.dashboard.stop() }
        try await group.run()
        logger.notice("screentimed stopped")
    }

    /// What the end of each service means, decided one by one. A service that ends while the
    /// agent is not stopping either is not needed for restrictions to hold, and the agent goes
    /// on (`ignore`), or it is, and the agent stops gracefully so that its supervisor (systemd's
    /// `Restart=always`, or `screentimed-supervise`) starts it again within a second; in between,
    /// the firewall rules stay (the children's DNS fails, it never passes) and frozen processes
    /// stay frozen.
    ///
    /// | service | ends when | then |
    /// | --- | --- | --- |
    /// | DNS shield | never: a queue it cannot bind or read is tried again, 1 s to 30 s apart, the status naming the problem | (the agent stops) |
    /// | process shield | the proc connector fails | the agent restarts: a new start rescans every process |
    /// | login sessions | never while the agent runs | the agent goes on (the hooks' cache of children stays) |
    /// | shield presenter | never while the agent runs | the agent goes on (shielded apps stay frozen, without a window) |
    /// | subordinate id watch | the files cannot be watched | the agent goes on: they are read again at every change of policy |
    /// | usage tracker | never while the agent runs | the agent goes on (no shield depends on it) |
    /// | extension host | never while the agent runs | the agent goes on (what is owed stays owed, run at the next start) |
    /// | activity scheduler | never while the agent runs | the agent goes on (the stores it changed stay in force) |
    /// | control socket | it cannot accept | the agent restarts: nobody could change or see anything |
    static func failurePolicy(_ prepared: Prepared) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        let restart = ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior.gracefullyShutdownGroup
        let goOn = ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior.ignore
        return [
            .init(service: prepared.logins, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.presenter, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.domains, successTerminationBehavior: restart, failureTerminationBehavior: restart),
            .init(
                service: prepared.processes, successTerminationBehavior: restart, failureTerminationBehavior: restart),
            .init(service: prepared.subordinateIDs, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.usage, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.extensions, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.scheduler, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.server, successTerminationBehavior: restart, failureTerminationBehavior: restart),
        ]
    }

    /// Where the agent notes the cgroup hierarchy whose `favordynmods` it turned on.
    static func favoredMovesPath(_ configuration: AgentConfiguration) -> String {
        configuration.stateDirectory + "/favored-cgroup-moves"
    }

    /// Removes the firewall chains (`make uninstall`). Stopping the agent leaves them on purpose.
    public func removeFirewall() throws {
        do {
            try Firewall(
                chain: configuration.firewallChain, queue: configuration.dnsQueue, mark: configuration.connectionMark
            ).remove()
        } catch {
            throw AgentError(.firewall, "cannot remove the firewall chains: \(error.message)", cause: error)
        }
        logger.notice("firewall chains removed", metadata: ["chain": "\(configuration.firewallChain)"])
        // The cgroup file system's favordynmods, if this agent turned it on (`favorCgroupMoves`).
        let favored = Self.favoredMovesPath(configuration)
        if let bytes = try? Files.read(favored, limit: 4096) {
            let hierarchy = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            do {
                try CgroupMoves.favor(false, at: hierarchy)
                _ = Files.remove(favored)
                logger.notice("cgroup moves no longer favored", metadata: ["hierarchy": "\(hierarchy)"])
            } catch {
                logger.warning(
                    "cannot turn favordynmods off",
                    metadata: ["hierarchy": "\(hierarchy)", "error": "\(error.message)"])
            }
        }
        // The browsers' managed policies go too: an agent that is gone filters no one.
        guard !configuration.browserPolicies.isEmpty else { return }
        do {
            try BrowserPolicies(
                root: configuration.browserPolicies, statePath: configuration.stateDirectory + "/browser-policies.json"
            ).remove()
        } catch {
            throw AgentError(.firewall, "cannot remove the browser policies: \(error.message)", cause: error)
        }
    }

    /// Debian's Public Suffix List; without it, every name's registrable domain is its last two
    /// labels (the default rule), which is right for most names and logged as a warning.
    private func loadSuffixes() -> PublicSuffixList {
        if let bytes = try? Files.read(configuration.publicSuffixList),
            let list = try? PublicSuffixList(parsing: String(decoding: bytes, as: UTF8.self))
        {
            return list
        }
        logger.warning(
            "the public suffix list is missing or unreadable; install Debian's publicsuffix package",
            metadata: ["path": "\(configuration.publicSuffixList)"])
        // One rule is the least a list holds; the default rule does the rest.
        return (try? PublicSuffixList(parsing: "com")) ?? { preconditionFailure("a one-rule list parses") }()
    }
}
