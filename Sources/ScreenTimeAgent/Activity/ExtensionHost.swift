import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

/// Runs guardian apps' extension programs owed to monitors (the scheduler hands them over and
/// runs the agent's own reactions itself): through the launcher — as the extension account, in pid,
/// mount and network namespaces of their own, with a wall-time and a memory limit, one callback as
/// JSON on standard input, and a channel on descriptor 3 through which they act with their
/// monitor's client's authority over that one user (and nothing else).
///
/// What an extension does is hostile input: one that hangs is killed at its wall time, one that
/// floods its output is stopped, one that crashes or prints garbage is logged; each outcome is
/// kept for `monitor list` and `status`, and the schedule goes on. Callbacks of one monitor run in
/// order, one at a time; different monitors' run side by side (at most `concurrentRuns`).
final class ExtensionHost: Service, Sendable {
    /// How long an extension may run, and how much it may use.
    static let wallSeconds = 10
    static let memoryBytes = 1 << 30
    static let outputLimit = 64 << 10
    static let concurrentRuns = 4

    private struct Queue {
        var pending: [OwedCallback] = []
        var running: Set<Monitor.Key> = []
        var workers = 0
    }

    private let database: StateDatabase
    private let launcher: ProgramLauncher?
    private let logger: Logger
    private let queue = Mutex(Queue())
    /// The program callbacks owed, as the scheduler hands them over.
    private let programCallbacks: AsyncStream<[OwedCallback]>
    /// The monitors as the scheduler has them now (one stopped meanwhile runs nothing).
    private let scheduler: ActivityScheduler
    /// Serves a connection an extension opened on its channel (the control server's serving).
    private let serving: ConnectionServing
    private let users: any Accounts

    init(
        database: StateDatabase, launcher: ProgramLauncher?, programCallbacks: AsyncStream<[OwedCallback]>,
        scheduler: ActivityScheduler, serving: ConnectionServing, users: any Accounts, logger: Logger
    ) {
        self.database = database
        self.launcher = launcher
        self.programCallbacks = programCallbacks
        self.scheduler = scheduler
        self.serving = serving
        self.users = users
        self.logger = logger
    }

    private func monitor(_ key: Monitor.Key) -> Monitor? { scheduler.entry(key)?.monitor }
    private func userName(_ uid: UInt32) -> String? { try? users.user(uid: uid).name }

    /// Runs the program callbacks the scheduler hands over, until the agent stops.
    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            for await owed in programCallbacks {
                queue.withLock { $0.pending += owed }
                startWorkers()
            }
        }
    }

    private func finish(_ owed: OwedCallback, _ run: ExtensionRun?) {
        do {
            if let run {
                try database.ran(owed, run)
            } else {
                try database.ran(
                    owed,
                    ExtensionRun(key: owed.key, callback: owed.callback, at: Date(), outcome: .ok, problem: nil))
            }
        } catch {
            logger.error("cannot record a callback as run", metadata: ["error": "\(error)"])
        }
    }

    private func startWorkers() {
        while true {
            let next = queue.withLock { queue -> OwedCallback? in
                guard queue.workers < Self.concurrentRuns,
                    let index = queue.pending.firstIndex(where: { !queue.running.contains($0.key) })
                else { return nil }
                let callback = queue.pending.remove(at: index)
                queue.running.insert(callback.key)
                queue.workers += 1
                return callback
            }
            guard let next else { return }
            Threads.start("screentime.ext") { [self] in
                runProgram(next)
                queue.withLock { queue in
                    queue.running.remove(next.key)
                    queue.workers -= 1
                }
                startWorkers()
            }
        }
    }

    // MARK: programs

    /// What an extension reads on its standard input.
    struct Input: Encodable {
        var event: String
        var activity: String
        var eventName: String?
        var user: String
        var uid: UInt32
        var client: String
        var intervalStart: Date
        var intervalEnd: Date
    }

    private func runProgram(_ owed: OwedCallback) {
        guard let monitor = monitor(owed.key), let program = monitor.program else {
            finish(owed, nil)
            return
        }
        let run = execute(program, owed, monitor)
        if run.outcome != .ok {
            logger.warning(
                "a monitor extension did not run well",
                metadata: [
                    "monitor": "\(owed.key)", "program": "\(program)", "callback": "\(owed.callback.callback)",
                    "outcome": "\(run.outcome.rawValue)", "problem": "\(run.problem ?? "")",
                ])
        }
        finish(owed, run)
    }

    private func execute(_ program: String, _ owed: OwedCallback, _ monitor: Monitor) -> ExtensionRun {
        func outcome(_ outcome: ExtensionRun.Outcome, _ problem: String?) -> ExtensionRun {
            ExtensionRun(key: owed.key, callback: owed.callback, at: Date(), outcome: outcome, problem: problem)
        }
        if let problem = ExtensionProgram.problem(with: program) { return outcome(.refused, problem) }
        guard let launcher, let client = launcher.client else {
            return outcome(.refused, "the agent has no launcher: \(launcher?.problem ?? "it did not start")")
        }
        guard let account = launcher.extensionAccount else {
            return outcome(.refused, "there is no extension account to run as (see extensionUser)")
        }
        let input = Input(
            event: owed.callback.callback.rawValue, activity: owed.key.name.rawValue,
            eventName: owed.callback.event?.rawValue, user: userName(owed.key.uid) ?? "\(owed.key.uid)",
            uid: owed.key.uid, client: owed.key.client.rawValue, intervalStart: owed.callback.interval.start,
            intervalEnd: owed.callback.interval.end)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        let bytes = Array((try? encoder.encode(input)) ?? Data()) + [10]
        let request = LaunchRequest(
            kind: .extension, program: program,
            environment: [
                "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/",
                "SCREENTIME_CHANNEL_FD": "3",
            ],
            directory: "/", uid: account.uid, gid: account.gid, groups: [], network: .none,
            limits: .init(
                cpuSeconds: Self.wallSeconds, memoryBytes: Self.memoryBytes, processes: 64, openFiles: 256,
                wallSeconds: Self.wallSeconds))
        let authority = ExtensionAuthority(uid: owed.key.uid, client: owed.key.client.rawValue)
        let connections = Mutex<[UnixSocket]>([])
        let result: ExtensionProcess.Outcome
        do {
            result = try ExtensionProcess.run(
                request, launcher: client, input: bytes, outputLimit: Self.outputLimit
            ) { connection in
                connections.withLock { $0.append(connection) }
                Threads.start("screentime.xconn") { [serving = self.serving] in
                    serving.serve(extension: connection, authority: authority)
                }
            }
        } catch {
            return outcome(.failed, "it could not start: \(error.message)")
        }
        // Its authority ends with it: a connection still open is cut.
        for connection in connections.withLock({ $0 }) { connection.shutDown() }
        let said = Self.printable(result.errors)
        if result.flooded {
            return outcome(.stopped, "it wrote more than \(Self.outputLimit / 1024) KiB and was stopped")
        }
        if result.timedOut {
            return outcome(.stopped, "it ran longer than \(Self.wallSeconds) s and was stopped")
        }
        guard let status = result.status else { return outcome(.failed, "its end was not seen") }
        if status != 0 {
            let how = status > 128 ? "it was killed by signal \(status - 128)" : "it exited with status \(status)"
            return outcome(.failed, said.isEmpty ? how : "\(how): \(said)")
        }
        // What it prints is for the log, as JSON lines ({"log": "…"}); anything else is garbage.
        for line in result.output.split(separator: 10) where !line.isEmpty {
            guard let message = try? JSONDecoder().decode(LogLine.self, from: Data(line)) else {
                return outcome(.failed, "it printed something that is not a JSON line: \(Self.printable(Array(line)))")
            }
            logger.info(
                "a monitor extension says",
                metadata: ["monitor": "\(owed.key)", "message": "\(Self.printable(Array(message.log.utf8)))"])
        }
        return outcome(.ok, nil)
    }

    private struct LogLine: Decodable {
        var log: String
    }

    /// At most 200 characters of what a program wrote, control characters shown escaped.
    static func printable(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(400), as: UTF8.self).trimmingWhitespace()
        var shown = ""
        for scalar in text.unicodeScalars {
            if shown.count >= 200 {
                shown += "…"
                break
            }
            shown += scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return shown
    }
}
