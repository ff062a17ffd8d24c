import FoundationEssentials
package import LinuxSupport
package import Logging
import ScreenTimeIPC

/// The agent's way to start programs as someone else — the shield window in a child's session,
/// extensions as an unprivileged account without network — after it dropped the capabilities
/// that takes: the launcher process (`Launcher`), started before the drop.
///
/// Failure policy: without a launcher the agent still enforces every shield; what needs one
/// (`launcher.check` now, the shield window and extensions later) fails with a clear error, and
/// the status says so. A launcher that dies is not restarted: the capabilities it kept are gone
/// from the agent for good, so only an agent restart brings it back.
package final class ProgramLauncher: Sendable {
    let client: LauncherClient?
    /// Why there is no launcher, when there is none.
    let problem: String?
    private let logger: Logger

    /// Starts the launcher: this same program, `--launcher 3`, told the extension account's uid
    /// (`extensionUser`; without one, no extension can start). Call it while the agent still has
    /// all its capabilities and one thread.
    static func start(
        extensionUser: String, dashboardUser: String = "", users: any Accounts = UserDirectory(), logger: Logger
    ) -> ProgramLauncher {
        let executable = Files.readLink("/proc/self/exe") ?? "/proc/self/exe"
        let extensionAccount = try? users.user(extensionUser)
        if extensionAccount == nil {
            logger.warning(
                "no extension account: extensions cannot start (make install creates it)",
                metadata: ["account": "\(extensionUser)"])
        }
        let dashboardAccount = dashboardUser.isEmpty ? nil : try? users.user(dashboardUser)
        do {
            // By its name, so that `ps` shows a screentimed; through /proc/self/exe if the file was
            // replaced since the agent started (an upgrade), so that it is the same program.
            let path = executable.hasSuffix(" (deleted)") ? "/proc/self/exe" : executable
            let client = try LauncherClient.start(
                executable: path,
                arguments: ["--launcher", "3"] + (extensionAccount.map { ["--extension-uid", "\($0.uid)"] } ?? [])
                    + (dashboardAccount.map { ["--dashboard-uid", "\($0.uid)"] } ?? []),
                extensionUID: extensionAccount?.uid, dashboardUID: dashboardAccount?.uid)
            logger.info("launcher started", metadata: ["pid": "\(client.pid)", "program": "\(executable)"])
            return ProgramLauncher(
                client: client, extensionAccount: extensionAccount, dashboardAccount: dashboardAccount, problem: nil,
                logger: logger)
        } catch {
            logger.error("no launcher: programs cannot be started as other users", metadata: ["error": "\(error)"])
            return ProgramLauncher(
                client: nil, extensionAccount: extensionAccount, problem: error.message, logger: logger)
        }
    }

    /// The account extensions run as.
    let extensionAccount: UserAccount?
    /// The dashboard's account.
    let dashboardAccount: UserAccount?

    package init(
        client: LauncherClient?, extensionAccount: UserAccount?, dashboardAccount: UserAccount? = nil,
        problem: String?, logger: Logger
    ) {
        self.client = client
        self.extensionAccount = extensionAccount
        self.dashboardAccount = dashboardAccount
        self.problem = problem
        self.logger = logger
    }

    /// What `status` shows a guardian.
    var report: LauncherReport {
        guard let client else {
            return LauncherReport(
                pid: nil, extensionAccount: extensionAccount?.name, problem: problem ?? "it did not start")
        }
        if client.hasEnded {
            return LauncherReport(
                pid: nil, extensionAccount: extensionAccount?.name,
                problem: "it ended; programs cannot be started as other users until the agent restarts")
        }
        return LauncherReport(
            pid: client.pid, extensionAccount: extensionAccount?.name,
            problem: extensionAccount == nil ? "there is no extension account: extensions cannot start" : nil)
    }

    func check(
        _ request: LauncherCheckRequest, _ context: RequestContext, isGuardian: Bool
    ) throws -> LauncherCheckReply {
        guard isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian can check the launcher") }
        guard let client else {
            throw ScreenTimeIPCError(.internalError, "the agent has no launcher: \(problem ?? "it did not start")")
        }
        guard let account = extensionAccount else {
            throw ScreenTimeIPCError(.internalError, "there is no extension account to run as (see extensionUser)")
        }
        let started = ContinuousClock.now
        let launch = LaunchRequest(
            kind: .extension, program: "/bin/true", environment: ["PATH": "/usr/bin:/bin"], directory: "/",
            uid: account.uid,
            gid: account.gid, groups: [], network: .none,
            limits: .init(cpuSeconds: 5, memoryBytes: 256 << 20, processes: 64, openFiles: 64, wallSeconds: 10))
        let pid: Int32
        let status: Int32?
        do {
            pid = try client.launch(launch)
            status = try client.waitForExit(of: pid, timeout: .seconds(12))
        } catch {
            throw ScreenTimeIPCError(.internalError, "the launcher failed: \(error.message)")
        }
        guard let status else {
            throw ScreenTimeIPCError(.internalError, "the program the launcher started did not end")
        }
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        logger.info("launcher checked", metadata: ["pid": "\(pid)", "status": "\(status)"])
        return LauncherCheckReply(
            launcher: client.pid, account: account.name, uid: account.uid, pid: pid, exitStatus: status,
            milliseconds: Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }
}
