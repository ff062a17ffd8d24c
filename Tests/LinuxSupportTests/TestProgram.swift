import Glibc
import LinuxSupport

/// A program a test starts: spawned with posix_spawn (`ChildProcess.spawn`, stdio on /dev/null)
/// and reaped with waitpid on the test's own thread, in place of Foundation's `Process`. That one
/// learns of an exit through SIGCHLD and a run loop; in this process of many threads it waited
/// 20–30 s for children already killed, and four such waits at once were the in-process tests'
/// stall (gdb on a 52-s run, 2026-11-29: FreezerCgroupTests twice, the Unix-socket clients test and
/// TCPPeersTests, each in `Process.waitUntilExit()` after a SIGKILL).
final class TestProgram {
    let processIdentifier: Int32
    /// The exit code, or the number of the signal that ended it (as `Process` gives them).
    private(set) var terminationStatus: Int32 = -1
    private var reaped = false

    init(_ path: String, _ arguments: [String]) throws {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(null) }
        processIdentifier = try ChildProcess.spawn(
            path, arguments, environment: ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"], stdio: (null, null, null))
    }

    /// Waits for it to end, and reaps it (once).
    func waitUntilExit() {
        guard !reaped else { return }
        var status: Int32 = 0
        while waitpid(processIdentifier, &status, 0) == -1 && errno == EINTR {}
        reaped = true
        terminationStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }
}
