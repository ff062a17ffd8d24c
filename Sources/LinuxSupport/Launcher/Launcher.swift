import CLauncher
import CLinuxShim
import FoundationEssentials
import Glibc
import Synchronization

/// The launcher process: `screentimed --launcher FD` runs `Launcher.serve(socket: FD)`.
public enum Launcher {
    /// All it keeps: start a process as someone else, in a network namespace of its own (whose
    /// loopback it brings up: `net_admin`), and kill it when its time is up.
    public static let capabilities: Set<Capabilities.Name> = [.setUID, .setGID, .sysAdmin, .netAdmin, .kill]

    /// Serves the agent's requests until the agent closes its end (or dies); returns the exit
    /// status for the process. What it started dies with it.
    public static func serve(socket fd: Int32, extensionUID: UInt32?, dashboardUID: UInt32? = nil) -> Int32 {
        func say(_ text: String) { _ = "screentimed launcher: \(text)\n".withCString { write(2, $0, strlen($0)) } }
        guard screentime_die_with_parent() == 0 else {
            say("cannot tie itself to the agent: \(String(cString: strerror(errno)))")
            return 71
        }
        do {
            try Capabilities.restrict(to: capabilities)
        } catch {
            say("cannot keep only its capabilities: \(error.message)")
            return 71
        }
        var server = LauncherServer(socket: fd, extensionUID: extensionUID, dashboardUID: dashboardUID)
        server.send(LauncherMessage(ready: getpid()))
        server.run()
        return 0
    }
}

/// The launcher's loop: one thread, no Dispatch (it forks), polling the socket and a pidfd per
/// program it started.
struct LauncherServer {
    struct Child {
        var pidfd: Int32
        var deadline: ContinuousClock.Instant?
    }

    let socket: Int32
    let extensionUID: UInt32?
    let dashboardUID: UInt32?
    var children: [Int32: Child] = [:]

    init(socket: Int32, extensionUID: UInt32?, dashboardUID: UInt32? = nil) {
        self.socket = socket
        self.extensionUID = extensionUID
        self.dashboardUID = dashboardUID
    }

    mutating func run() {
        var buffer = [UInt8](repeating: 0, count: LauncherMessage.maximumSize + 1)
        while true {
            let pids = Array(children.keys)
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            fds += pids.map { pollfd(fd: children[$0]!.pidfd, events: Int16(POLLIN), revents: 0) }
            let now = ContinuousClock.now
            let nearest = children.values.compactMap(\.deadline).min()
            let timeout =
                nearest.map { deadline -> Int32 in
                    let (seconds, attoseconds) = now.duration(to: deadline).components
                    return max(0, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
                } ?? -1
            guard retryingInterrupts({ poll(&fds, nfds_t(fds.count), timeout) }) >= 0 else { break }
            for (index, pid) in pids.enumerated() where fds[index + 1].revents != 0 { reap(pid) }
            let after = ContinuousClock.now
            for (pid, child) in children where child.deadline.map({ $0 <= after }) ?? false {
                _ = screentime_pidfd_send_signal(child.pidfd, SIGKILL)
                children[pid]?.deadline = nil
            }
            if fds[0].revents & Int16(POLLIN) != 0 {
                var files = [Int32](repeating: -1, count: LaunchRequest.maximumDescriptors + 1)
                var count: Int32 = 0
                let got = retryingInterrupts {
                    buffer.withUnsafeMutableBytes { bytes in
                        files.withUnsafeMutableBufferPointer { slots in
                            screentime_receive_with_descriptors(
                                socket, bytes.baseAddress, UInt(bytes.count), slots.baseAddress, Int32(slots.count),
                                &count, 0)
                        }
                    }
                }
                let received = Array(files.prefix(Int(max(0, count))))
                defer { for fd in received { close(fd) } }
                if got == 0 { break }
                if got < 0 {
                    if errno == EAGAIN { continue }
                    break
                }
                answer(got > LauncherMessage.maximumSize ? nil : Array(buffer[..<got]), files: received)
            } else if fds[0].revents != 0 {
                break  // the agent's end is closed
            }
        }
        for child in children.values { _ = screentime_pidfd_send_signal(child.pidfd, SIGKILL) }
    }

    private mutating func answer(_ bytes: [UInt8]?, files: [Int32]) {
        guard let bytes else {
            send(LauncherMessage(refused: "a message larger than \(LauncherMessage.maximumSize) bytes"))
            return
        }
        let request: LaunchRequest
        var id: UInt64?
        do throws(SystemError) {
            let message = try LauncherMessage.decode(bytes)
            id = message.id
            if let pid = message.stop {
                // Only a program of its own, by the pidfd it holds: a pid reused since is not it.
                if let child = children[pid] { _ = screentime_pidfd_send_signal(child.pidfd, SIGKILL) }
                return
            }
            guard let launch = message.launch else {
                throw SystemError(.launch, "the launcher takes 'launch' messages only")
            }
            try launch.validate(extensionUID: extensionUID, dashboardUID: dashboardUID)
            guard launch.descriptors.count == files.count else {
                throw SystemError(
                    .launch, "\(launch.descriptors.count) descriptors named, \(files.count) sent with the request")
            }
            request = launch
        } catch {
            send(LauncherMessage(refused: error.message, id: id))
            return
        }
        switch start(request, files: files) {
        case .success(let pid): send(LauncherMessage(started: pid, id: id))
        case .failure(let error): send(LauncherMessage(refused: error.message, id: id))
        }
    }

    private mutating func start(_ request: LaunchRequest, files: [Int32]) -> Result<Int32, SystemError> {
        let argv = ([request.program] + request.arguments).map { strdup($0) } + [nil]
        let envp = request.environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var step: Int32 = 0
        var failure: Int32 = 0
        let groups = request.groups.map { gid_t($0) }
        let targets = request.descriptors
        let pid = request.program.withCString { program in
            request.directory.withCString { directory in
                groups.withUnsafeBufferPointer { groupList in
                    argv.withUnsafeBufferPointer { arguments in
                        envp.withUnsafeBufferPointer { environment in
                            files.withUnsafeBufferPointer { sources in
                                targets.withUnsafeBufferPointer { targets in
                                    var spec = screentime_launch_spec(
                                        program: program, arguments: arguments.baseAddress,
                                        environment: environment.baseAddress,
                                        directory: directory, uid: request.uid, gid: request.gid,
                                        groups: groupList.baseAddress, group_count: Int32(groupList.count),
                                        new_network: request.network == .none ? 1 : 0,
                                        cpu_seconds: Int64(request.limits.cpuSeconds ?? -1),
                                        memory_bytes: Int64(request.limits.memoryBytes ?? -1),
                                        processes: Int64(request.limits.processes ?? -1),
                                        open_files: Int64(request.limits.openFiles ?? -1),
                                        new_pid: request.kind == .extension ? 1 : 0,
                                        sources: sources.baseAddress, targets: targets.baseAddress,
                                        descriptor_count: Int32(targets.count))
                                    return screentime_launch(&spec, &step, &failure)
                                }
                            }
                        }
                    }
                }
            }
        }
        guard pid > 0 else {
            let steps = [
                "a pipe", "fork", "signals", "its parent", "a session", "a network namespace",
                "the loopback interface", "the limits",
                "/dev/null", "the groups", "the gid", "the uid", "the directory \(request.directory)",
                "exec \(request.program)", "its own /proc and /tmp", "the descriptors handed over",
            ]
            let what = step >= 1 && Int(step) <= steps.count ? steps[Int(step) - 1] : "step \(step)"
            return .failure(
                SystemError(.launch, "cannot start \(request.program): \(what): \(String(cString: strerror(failure)))"))
        }
        let pidfd = screentime_pidfd_open(pid)
        let deadline = request.limits.wallSeconds.map { ContinuousClock.now + .seconds($0) }
        if pidfd < 0 {
            // Too old a kernel for pidfds: it is the launcher's child, so its pid is its own
            // until reaped; kill it now rather than lose track of it.
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            return .failure(
                SystemError(.launch, "cannot watch \(request.program): pidfd_open: \(String(cString: strerror(errno)))")
            )
        }
        children[pid] = Child(pidfd: pidfd, deadline: deadline)
        return .success(pid)
    }

    private mutating func reap(_ pid: Int32) {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid, let child = children.removeValue(forKey: pid) else { return }
        close(child.pidfd)
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        send(LauncherMessage(exited: LauncherMessage.Exit(pid: pid, status: code)))
    }

    func send(_ message: LauncherMessage) {
        let bytes = message.encoded()
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, screentime_msg_nosignal()) }
    }
}
