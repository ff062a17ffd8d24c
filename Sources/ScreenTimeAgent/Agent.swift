import Foundation
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

    /// Everything that must be in place before the services start; throws what went wrong.
    func makeServices() throws -> (
        policy: PolicyService, domains: DomainShield, processes: ProcessShield, publisher: PolicyPublisher,
        usage: UsageTracker, scheduler: ActivityScheduler, database: StateDatabase
    ) {
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
        var dnsLogger = logger
        dnsLogger[metadataKey: "component"] = "dns"
        let domains = DomainShield(
            configuration: configuration, database: database, minter: minter, suffixes: suffixes, logger: dnsLogger)
        var processLogger = logger
        processLogger[metadataKey: "component"] = "process"
        let processes = ProcessShield(
            configuration: configuration, database: database, minter: minter, logger: processLogger)
        let publisher = PolicyPublisher(database: database, configuration: configuration, logger: logger)
        let policy = PolicyService(
            configuration: configuration, database: database, minter: minter, suffixes: suffixes,
            publisher: publisher, domainShield: domains, processShield: processes, logger: logger)
        var usageLogger = logger
        usageLogger[metadataKey: "component"] = "usage"
        let usage = UsageTracker(
            configuration: configuration, database: database, processes: processes, minter: minter,
            logger: usageLogger)
        policy.usageTracker.withLock { $0 = usage }
        domains.lookedUp.withLock { tell in tell = { [weak usage] domain, uid in usage?.lookedUp(domain, uid: uid) } }
        domains.used.withLock { tell in tell = { [weak usage] domain, uid in usage?.webUsed(domain, uid: uid) } }
        var scheduleLogger = logger
        scheduleLogger[metadataKey: "component"] = "schedule"
        let scheduler = ActivityScheduler(database: database, logger: scheduleLogger)
        scheduler.usage.withLock { ledger in
            ledger = { [weak usage] uid, interval in try? usage?.usage(uid: uid, during: interval).ledger }
        }
        scheduler.inFront.withLock { $0 = { [weak usage] uid in usage?.isInFront(uid: uid) ?? true } }
        usage.usersInFrontChanged.withLock { $0 = { [weak scheduler] users in scheduler?.usageStarted(users) } }
        policy.scheduler.withLock { $0 = scheduler }
        return (policy, domains, processes, publisher, usage, scheduler, database)
    }

    /// The services, set up and ready to run.
    public struct Prepared: Sendable {
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
    }

    /// What the agent keeps once set up (see `Capabilities.Name` for why each).
    public static let keptCapabilities: Set<Capabilities.Name> = [.dacOverride, .kill, .netAdmin, .sysPtrace, .sysNice]

    /// How long the services have to end after SIGTERM before they are cancelled.
    public static let stopGrace: Duration = .seconds(15)

    /// Opens the state and what needs privileges (the proc connector, the cgroups, the exec gate),
    /// drops every capability but `keptCapabilities`, then installs the rules and filters and
    /// judges running processes. Call it on the process's only thread, before anything async
    /// runs: capabilities belong to threads, and the threads started after the drop inherit the
    /// reduced sets.
    public func prepare() throws -> Prepared {
        let (policy, domains, processes, publisher, usage, scheduler, database) = try makeServices()
        let snapshot: PolicySnapshot
        do {
            snapshot = try publisher.first()
        } catch {
            throw AgentError(.state, "cannot read the policy: \(error)", cause: error)
        }
        // The launcher keeps what starting programs as other users needs; started first, while
        // the agent has one thread and every capability.
        let launcher = ProgramLauncher.start(extensionUser: configuration.extensionUser, logger: logger)
        policy.launcher.withLock { $0 = launcher }
        if let client = launcher.client {
            let own = FileStatus.of(path: "/proc/self/exe").map { FileIdentity($0.key) }
            processes.launcher.withLock { $0 = (client.pid, own) }
        }
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
        // ask anything; from then on, every change reaches them through the publisher.
        domains.apply(snapshot)
        processes.start(snapshot: snapshot)
        publisher.add(domains)
        publisher.add(processes)
        // After the process shield: a user newly authorized has their processes tracked first.
        usage.apply(snapshot)
        publisher.add(usage)
        // The first snapshot too: when the grants in force at start end.
        scheduler.apply(snapshot)
        publisher.add(scheduler)
        scheduler.republish.withLock { $0 = { [weak publisher] in _ = publisher?.publish() } }
        var loginLogger = logger
        loginLogger[metadataKey: "component"] = "login"
        let logins = LoginSessions(stateDirectory: configuration.stateDirectory, logger: loginLogger)
        logins.textSessionStarted.withLock {
            $0 = { [weak usage] uid, key, kind, tty in
                usage?.textSessionStarted(uid: uid, key: key, kind: kind, tty: tty)
            }
        }
        logins.textSessionEnded.withLock { $0 = { [weak usage] key in usage?.textSessionEnded(key: key) } }
        logins.apply(snapshot)
        publisher.add(logins)
        policy.loginSessions.withLock { $0 = logins }
        var extensionLogger = logger
        extensionLogger[metadataKey: "component"] = "extensions"
        let users = UserDirectory()
        let extensions = ExtensionHost(
            database: database, launcher: launcher, logger: extensionLogger,
            monitor: { [weak scheduler] key in scheduler?.entry(key)?.monitor },
            react: { [weak policy] monitor, callback in try policy?.react(monitor, callback) },
            userName: { uid in try? users.user(uid: uid).name })
        scheduler.deliver.withLock { $0 = { [weak extensions] owed in extensions?.deliver(owed) } }
        var shieldLogger = logger
        shieldLogger[metadataKey: "component"] = "shield"
        let shieldProgram = ShieldProgram(path: ShieldProgram.defaultPath(), launcher: launcher, logger: shieldLogger)
        let presenter = ShieldPresenter(
            database: database, launcher: launcher, program: shieldProgram, logger: shieldLogger)
        presenter.usage.withLock { $0 = usage }
        presenter.policy.withLock { $0 = policy }
        presenter.processes.withLock { $0 = processes }
        usage.relays.withLock { $0 = shieldProgram }
        processes.shieldMet.withLock { $0 = { [weak presenter] thing in presenter?.tell(.met(thing)) } }
        domains.shieldMet.withLock { $0 = { [weak presenter] thing in presenter?.tell(.met(thing)) } }
        usage.shieldInFront.withLock { $0 = { [weak presenter] thing in presenter?.tell(.inFront(thing)) } }
        policy.requestsChanged.withLock {
            $0 = { [weak presenter] request in
                presenter?.tell(request.state == "pending" ? .asked(request) : .decided(request))
            }
        }
        policy.presenter.withLock { $0 = presenter }
        let watch = SubordinateIDWatch(
            publisher: publisher, files: [configuration.subordinateUIDs, configuration.subordinateGIDs], logger: logger)
        return Prepared(
            policy: policy, domains: domains, processes: processes, subordinateIDs: watch, launcher: launcher,
            usage: usage, scheduler: scheduler, extensions: extensions, presenter: presenter, logins: logins)
    }

    public func run(_ prepared: Prepared) async throws {
        let server = ControlServer(
            path: configuration.socket,
            router: .agent(policy: prepared.policy, launcher: prepared.launcher, logger: logger),
            admission: prepared.policy.admission, logger: logger)
        prepared.extensions.serve.withLock {
            $0 = { [weak server] connection, authority in
                server?.serve(extension: connection, authority: authority)
            }
        }
        var groupConfiguration = ServiceGroupConfiguration(
            services: Self.failurePolicy(prepared, server: server),
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // A service that does not end when asked is cancelled: a stop never leaves the agent
        // half-alive (no socket, so not restarted by its supervisor).
        groupConfiguration.maximumGracefulShutdownDuration = Self.stopGrace
        let group = ServiceGroup(configuration: groupConfiguration)
        prepared.presenter.start()
        defer {
            prepared.presenter.stop()
            prepared.logins.stop()
        }
        logger.notice(
            "screentimed \(AgentVersion.current) started",
            metadata: ["state": "\(configuration.stateDirectory)", "socket": "\(configuration.socket)"])
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
    /// | subordinate id watch | the files cannot be watched | the agent goes on: they are read again at every change of policy |
    /// | usage tracker | never while the agent runs | the agent goes on (no shield depends on it) |
    /// | activity scheduler | never while the agent runs | the agent goes on (the stores it changed stay in force) |
    /// | control socket | it cannot accept | the agent restarts: nobody could change or see anything |
    static func failurePolicy(
        _ prepared: Prepared, server: ControlServer
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        let restart = ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior.gracefullyShutdownGroup
        let goOn = ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior.ignore
        return [
            .init(service: prepared.domains, successTerminationBehavior: restart, failureTerminationBehavior: restart),
            .init(
                service: prepared.processes, successTerminationBehavior: restart, failureTerminationBehavior: restart),
            .init(service: prepared.subordinateIDs, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.usage, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: prepared.scheduler, successTerminationBehavior: goOn, failureTerminationBehavior: goOn),
            .init(service: server, successTerminationBehavior: restart, failureTerminationBehavior: restart),
        ]
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
