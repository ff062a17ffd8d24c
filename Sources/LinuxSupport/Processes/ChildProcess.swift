import CLinuxShim
import Glibc

/// Runs a program to its end, with input, and collects what it printed: posix_spawn, poll and
/// waitpid on the calling thread. Foundation's `Process` starts threads of its own to watch its
/// children, and the agent runs iptables before it drops its capabilities, which must happen
/// while it has one thread only.
public enum ChildProcess {
    public struct Outcome: Sendable {
        /// The exit status, or 128 + the signal that ended it.
        public var status: Int32
        public var output: [UInt8]
        public var errors: [UInt8]
    }

    /// With a `deadline` (seconds), a program still running then is killed and this throws, saying
    /// what it printed so far: a program that waits forever (on a frozen child of its own, on a
    /// descendant that keeps its output open) makes its caller fail, not hang.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String], input: [UInt8] = [],
        deadline seconds: Double? = nil
    ) throws(SystemError) -> Outcome {
        let pipes = try StandardPipes()
        let pid: pid_t
        do {
            defer { pipes.closeChildEnds() }
            let ends = pipes.childEnds
            pid = try spawn(path, arguments, environment: environment, stdio: (ends[0], ends[1], ends[2]))
        } catch {
            pipes.closeParentEnds()
            throw error
        }
        var transfer = PipeTransfer(pipes, input: input)
        var outcome = Outcome(status: 0, output: [], errors: [])
        let limit = seconds ?? 0
        let end = seconds.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        while transfer.isOpen {
            var fds = transfer.pollDescriptors
            var wait: Int32 = -1
            if let end {
                let left = ContinuousClock.now.duration(to: end)
                guard left > .zero else { throw overran(pid, path, arguments, limit, outcome) }
                wait = Int32((left / .milliseconds(1)).rounded(.up))
            }
            _ = try systemCall("poll") { poll(&fds, 3, wait) }
            transfer.transfer(fds, output: &outcome.output, errors: &outcome.errors)
        }
        var status: Int32 = 0
        if let end {
            // Its outputs closed; it may still run (a child that closed them, then waits).
            while try systemCall("waitpid(\(pid))", { waitpid(pid, &status, WNOHANG) }) == 0 {
                guard ContinuousClock.now < end else { throw overran(pid, path, arguments, limit, outcome) }
                usleep(2_000)
            }
        } else {
            _ = try systemCall("waitpid(\(pid))") { waitpid(pid, &status, 0) }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
        outcome.status = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return outcome
    }

    /// Kills a program past its deadline and reaps it if it dies at once (a task in a frozen v1
    /// cgroup dies only when thawed, and is left), and says what it had printed.
    private static func overran(
        _ pid: pid_t, _ path: String, _ arguments: [String], _ seconds: Double, _ outcome: Outcome
    ) -> SystemError {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        for _ in 0..<500 where waitpid(pid, &status, WNOHANG) == 0 { usleep(2_000) }
        let printed = String(decoding: (outcome.output + outcome.errors).suffix(2_000), as: UTF8.self)
        return SystemError(
            .command,
            "\(([path] + arguments).joined(separator: " ")) did not end within \(Int(seconds)) s (it, or a program"
                + " it started and left its output to, ran on) and was killed"
                + (printed.isEmpty ? " (it printed nothing)" : "; it printed: \(printed)"))
    }

    /// Starts a program with the given descriptors as its standard input, output and error, no
    /// signal blocked and every disposition at its default (whatever the caller's threads set),
    /// and returns its pid without waiting.
    /// `descriptors` are more of the caller's descriptors to hand over, each at a number of its own
    /// (the launcher's socket at 3).
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String], stdio: (Int32, Int32, Int32),
        descriptors: [(fd: Int32, at: Int32)] = []
    ) throws(SystemError) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, target) in [(stdio.0, Int32(0)), (stdio.1, 1), (stdio.2, 2)] + descriptors {
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        }
        // Nothing else the caller has open goes on: not what it inherited itself (a test
        // harness's descriptor that tells it when the agent ended, kept open by the launcher).
        screentime_spawn_close_from(&actions, (descriptors.map(\.at).max() ?? 2) + 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let error = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard error == 0 else { throw SystemError(.command, "cannot run \(path): \(String(cString: strerror(error)))") }
        return pid
    }
}
