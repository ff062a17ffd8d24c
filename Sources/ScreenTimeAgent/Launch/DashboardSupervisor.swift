import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeIPC
import Synchronization

/// Keeps the guardians' dashboard (`screentime-web`) running while a guardian has it on
/// (`screentime web enable`), with or without systemd: the launcher starts it as the dashboard's
/// own account with no capability and no other group, on the machine's network, from a program
/// only root can change; when it ends by itself it is started again (after 1 s, twice as long
/// each time it ends within a minute of its start, at most a minute). Turned off, or when the
/// agent stops, it is stopped (the launcher kills what it started when the agent goes).
///
/// The setting is in the state database, so the dashboard comes back with the agent after a
/// reboot. A supervisor with no launcher or no dashboard account says why in `web status`.
package final class DashboardSupervisor: Sendable {
    private let launcher: ProgramLauncher
    private let database: StateDatabase
    private let socket: String
    private let stateDirectory: String
    let program: String
    private let logger: Logger

    private struct State {
        var pid: Int32?
        var problem: String?
        var restarts = 0
        /// Changes at each new setting and at the agent's stop: a run of an older one ends.
        var generation = 0
        var stopped = false
    }
    private let state = Mutex(State())
    private let wake = Condition()

    /// - Parameter program: the dashboard's program; empty: `screentime-web` in the `bin`
    ///   directory beside the agent's own (`/usr/sbin` → `/usr/bin`), or in the agent's own
    ///   directory when that is not an `sbin` (a build's).
    init(
        launcher: ProgramLauncher, database: StateDatabase, configuration: AgentConfiguration, logger: Logger
    ) {
        self.launcher = launcher
        self.database = database
        socket = configuration.socket
        stateDirectory = configuration.webStateDirectory
        self.logger = logger
        if configuration.webProgram.isEmpty {
            let own = Files.readLink("/proc/self/exe") ?? "/usr/sbin/screentimed"
            var directory = String(own[..<(own.lastIndex(of: "/") ?? own.startIndex)])
            if directory.hasSuffix("/sbin") { directory = String(directory.dropLast(4)) + "bin" }
            program = directory + "/screentime-web"
        } else {
            program = configuration.webProgram
        }
    }

    /// At the agent's start: the dashboard runs if a guardian left it on.
    func start() {
        do {
            if try database.webService().enabled { restart() }
        } catch {
            logger.error("cannot read the dashboard's setting", metadata: ["error": "\(error)"])
        }
    }

    /// At the agent's stop: the dashboard stops, and is not started again.
    func stop() {
        let pid = state.withLock { state -> Int32? in
            state.stopped = true
            state.generation += 1
            return state.pid
        }
        if let pid { launcher.client?.stop(pid) }
        wake.broadcast()
    }

    /// `web.service`: a guardian turns the dashboard on or off, or changes where it listens, from
    /// a terminal (a dashboard session may not turn off the page it is on).
    func handle(_ request: WebServiceRequest, caller: Caller, inSession: Bool) throws -> WebServiceReply {
        var setting = try database.webService()
        let changes = request.enable != nil || request.port != nil || request.listen != nil
        if changes {
            guard caller.isGuardian, !inSession else {
                throw ScreenTimeIPCError(
                    .notAllowed, "only a guardian turns the dashboard on or off, from a terminal of this PC")
            }
            if let port = request.port {
                guard (1024...65_535).contains(port) else {
                    throw ScreenTimeIPCError(.invalidArgument, "the port is from 1024 to 65535, not \(port)")
                }
                setting.port = port
            }
            if let listen = request.listen {
                guard listen.count <= 8 else {
                    throw ScreenTimeIPCError(.invalidArgument, "at most 8 addresses to listen on, not \(listen.count)")
                }
                for address in listen where IPAddress.bytes(address) == nil {
                    throw ScreenTimeIPCError(
                        .invalidArgument, "'\(address.prefix(60))' is not an IP address to listen on")
                }
                setting.listen = listen
            }
            if let enable = request.enable { setting.enabled = enable }
            if setting.enabled, let problem = startProblem() { throw ScreenTimeIPCError(.internalError, problem) }
            setting.changedBy = caller.account.name
            setting.changedAt = Date()
            try database.saveWebService(setting)
            logger.notice(
                "dashboard \(setting.enabled ? "on" : "off")",
                metadata: [
                    "by": "\(caller.account.name)", "port": "\(setting.port)",
                    "listen": "\(setting.listen.isEmpty ? "home network" : setting.listen.joined(separator: ","))",
                ])
            if setting.enabled { restart() } else { halt() }
        }
        let now = state.withLock { ($0.pid, $0.problem, $0.restarts) }
        var reply = WebServiceReply(
            enabled: setting.enabled, port: setting.port, listen: setting.listen, pid: now.0,
            problem: setting.enabled ? now.1 : nil, restarts: now.2,
            changedBy: setting.changedBy.isEmpty ? nil : setting.changedBy,
            changedAt: setting.changedBy.isEmpty ? nil : setting.changedAt)
        reply.directory = stateDirectory
        return reply
    }

    /// Why the dashboard cannot start; nil when it can.
    private func startProblem() -> String? {
        guard let client = launcher.client, !client.hasEnded else {
            return "the agent's launcher is not running: \(launcher.problem ?? "it ended"); restart the agent"
        }
        guard client.dashboardUID != nil, launcher.dashboardAccount != nil else {
            return "there is no dashboard account (webUser); 'make install' or the package makes it"
        }
        if let problem = ExtensionProgram.problem(with: program) { return "the dashboard's program: \(problem)" }
        guard Files.exists(stateDirectory) else {
            return "the dashboard's directory \(stateDirectory) is missing; 'make install' or the package makes it"
        }
        return nil
    }

    /// Stops the dashboard that runs (if any).
    private func halt() {
        let pid = state.withLock { state -> Int32? in
            state.generation += 1
            state.problem = nil
            defer { state.pid = nil }
            return state.pid
        }
        if let pid { launcher.client?.stop(pid) }
        wake.broadcast()
    }

    /// Stops the dashboard that runs and starts it anew (with the setting now saved).
    private func restart() {
        halt()
        let generation = state.withLock { state -> Int? in
            state.restarts = 0
            return state.stopped ? nil : state.generation
        }
        guard let generation else { return }
        Threads.start("screentime.dashboard") { [self] in supervise(generation) }
    }

    private func current(_ generation: Int) -> Bool { state.withLock { $0.generation == generation } }

    /// One setting's run: start, wait for the end, start again after a wait, until the setting
    /// changes or the agent stops.
    private func supervise(_ generation: Int) {
        var wait: Double = 0.25
        while current(generation) {
            let started = Date()
            if let (pid, port) = launch(generation) {
                var status: Int32?
                var looks = 0
                while status == nil, current(generation) {
                    status = try? launcher.client?.waitForExit(of: pid, timeout: .seconds(2))
                    if launcher.client?.hasEnded ?? true { break }
                    // While it runs, a child may listen on the same port at another address.
                    looks += 1
                    if status == nil, looks % 5 == 0, let account = launcher.dashboardAccount {
                        freePort(port, account: account)
                    }
                }
                guard current(generation) else { return }
                let lived = Date().timeIntervalSince(started)
                wait = lived > 60 ? 1 : min(60, wait * 2)
                state.withLock { state in
                    guard state.generation == generation else { return }
                    state.pid = nil
                    state.restarts += 1
                    state.problem =
                        "it ended (status \(status.map(String.init) ?? "unknown")) after \(Int(lived)) s; started again in \(Int(wait)) s"
                }
                logger.warning(
                    "the dashboard ended; starting it again",
                    metadata: ["status": "\(status.map(String.init) ?? "unknown")", "wait": "\(Int(wait))"])
            } else {
                // It could not start: try again later, less often each time.
                wait = min(60, wait * 2)
            }
            wake.lock()
            wake.wait(seconds: wait)
            wake.unlock()
        }
    }

    /// A child's program listening on the dashboard's port, on any address (bound in the moment the
    /// dashboard was restarting, or on an address it does not listen on, to serve a page of its own
    /// to whoever opens the dashboard) is killed, and logged; anyone else's is only reported, as the
    /// dashboard may then not start. A child's listener no program holds (its descriptor passed in
    /// a message, sitting in a socket's queue) is gone only with every program of that child's.
    private func freePort(_ port: Int, account: UserAccount) {
        let inspector = ProcessInspector()
        for listener in TCPListeners.on(port: port) where listener.uid != 0 && listener.uid != account.uid {
            let isChild =
                (try? database.authorization(uid: listener.uid))
                .flatMap { $0 }.map { $0.member == .child && $0.status == .approved } ?? false
            guard isChild else {
                logger.warning(
                    "another program listens on the dashboard's port",
                    metadata: ["port": "\(port)", "uid": "\(listener.uid)"])
                continue
            }
            let theirs = inspector.pids().filter { inspector.status(pid: $0)?.uid == listener.uid }
            var holders = theirs.filter { UnixPeers.socketInodes(pid: $0).contains(listener.inode) }
            if holders.isEmpty {
                logger.warning(
                    "a child's listener on the dashboard's port is held by no program (passed in a message): every program of the child's is killed",
                    metadata: ["port": "\(port)", "uid": "\(listener.uid)"])
                holders = theirs
            }
            for pid in holders {
                guard let handle = ProcessHandle(pid: pid, inspector: inspector, owner: { $0 == listener.uid })
                else { continue }
                handle.kill()
                logger.warning(
                    "a child's program held the dashboard's port: killed",
                    metadata: ["port": "\(port)", "uid": "\(listener.uid)", "pid": "\(pid)"])
            }
            // The port is free once the killed program is gone (a second at most).
            for _ in 0..<50 where TCPListeners.on(port: port).contains(listener) { Threads.sleep(0.02) }
        }
    }

    /// Starts the dashboard for this setting; its pid and port, or nil (the problem noted).
    private func launch(_ generation: Int) -> (pid: Int32, port: Int)? {
        let setting: StateDatabase.WebService
        do {
            setting = try database.webService()
        } catch {
            state.withLock { $0.problem = "its setting cannot be read: \(error)" }
            return nil
        }
        if let problem = startProblem() {
            state.withLock { $0.problem = problem }
            logger.error("the dashboard cannot start", metadata: ["problem": "\(problem)"])
            return nil
        }
        guard let client = launcher.client, let account = launcher.dashboardAccount else { return nil }
        freePort(setting.port, account: account)
        var arguments = ["--state-dir", stateDirectory, "--port", "\(setting.port)", "--socket", socket]
        for address in setting.listen { arguments += ["--listen", address] }
        let request = LaunchRequest(
            kind: .dashboard, program: program, arguments: arguments,
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], directory: stateDirectory, uid: account.uid,
            gid: account.gid, groups: [], network: .inherit,
            limits: .init(processes: 512, openFiles: 4_096), descriptors: [1, 2])
        do {
            // Its output and errors go where the agent's go (the journal, or the supervisor's log).
            let pid = try client.launch(request, files: [2, 2])
            let kept = state.withLock { state -> Bool in
                guard state.generation == generation else { return false }
                state.pid = pid
                if state.restarts == 0 { state.problem = nil }
                return true
            }
            guard kept else {
                client.stop(pid)
                return nil
            }
            logger.info("dashboard started", metadata: ["pid": "\(pid)", "port": "\(setting.port)"])
            return (pid, setting.port)
        } catch {
            state.withLock { $0.problem = "it cannot start: \(error.message)" }
            logger.error("the dashboard cannot start", metadata: ["error": "\(error.message)"])
            return nil
        }
    }
}
