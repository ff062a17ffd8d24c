import CLinuxShim
import FoundationEssentials
import Glibc
public import Logging
import Synchronization

/// Tells when processes end: each watched through a pidfd (so a pid used again is never taken for
/// the one watched), all of them by one thread that sleeps until one ends.
public final class ProcessEndWatch: Sendable {
    private struct State {
        var watched: [UInt64: (pid: Int32, pidfd: Int32)] = [:]
        var nextID: UInt64 = 1
        var stopped = false
    }

    private let state = Mutex(State())
    private let wake: Int32
    private let logger: Logger

    /// Processes may be watched before the thread starts.
    public init(logger: Logger) {
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        self.logger = logger
    }

    /// Starts the watching thread (`threadName`), which runs until `stop()`. `ended` is called on
    /// it, once per watch, when its process has ended (not for a watch forgotten first).
    public func start(threadName: String, ended: @escaping @Sendable (_ pid: Int32, _ watch: UInt64) -> Void) {
        Threads.start(threadName) { [self] in
            run(ended)
        }
    }

    /// Watches `pid`; the watch's number, or nil when the process is gone already.
    public func watch(_ pid: Int32) -> UInt64? {
        let fd = screentime_pidfd_open(pid)
        guard fd >= 0 else { return nil }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.watched[state.nextID] = (pid, fd)
            return state.nextID
        }
        poke()
        return id
    }

    /// Stops a watch (its process need not have ended).
    public func forget(_ watch: UInt64) {
        guard let gone = state.withLock({ $0.watched.removeValue(forKey: watch) }) else { return }
        Glibc.close(gone.pidfd)
        poke()
    }

    /// Ends the thread.
    public func stop() {
        state.withLock { $0.stopped = true }
        poke()
    }

    private func poke() {
        var one: UInt64 = 1
        _ = Glibc.write(wake, &one, 8)
    }

    private func run(_ ended: @Sendable (_ pid: Int32, _ watch: UInt64) -> Void) {
        while true {
            let watched = state.withLock { state -> [(id: UInt64, pidfd: Int32)]? in
                state.stopped ? nil : state.watched.map { ($0.key, $0.value.pidfd) }
            }
            guard let watched else { return }
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            fds += watched.map { pollfd(fd: $0.pidfd, events: Int16(POLLIN), revents: 0) }
            do {
                try systemCall("poll") { poll(&fds, nfds_t(fds.count), -1) }
            } catch {
                logger.error("cannot watch processes end", metadata: ["error": "\(error)"])
                return
            }
            if fds[0].revents != 0 {
                var count: UInt64 = 0
                _ = Glibc.read(wake, &count, 8)
            }
            for (index, entry) in watched.enumerated() where fds[index + 1].revents != 0 {
                // Forgotten meanwhile: its descriptor is closed, and not told.
                guard let gone = state.withLock({ $0.watched.removeValue(forKey: entry.id) }) else { continue }
                Glibc.close(gone.pidfd)
                ended(gone.pid, entry.id)
            }
        }
    }
}

/// Terminals written to by the agent.
public enum Terminals {
    /// Writes `text` to a terminal named as PAM names it (`tty1`, `/dev/pts/3`), never blocking:
    /// only a character device under /dev, opened without becoming anyone's controlling terminal.
    /// Whether all of it was written.
    @discardableResult
    public static func write(_ text: String, toTerminal tty: String) -> Bool {
        let path = tty.hasPrefix("/dev/") ? tty : "/dev/" + tty
        let allowed = path.hasPrefix("/dev/pts/") || path.dropFirst(5).hasPrefix("tty")
        guard allowed, !path.contains(".."), let status = FileStatus.of(path: path, followingSymlinks: false),
            status.isCharacterDevice
        else { return false }
        let fd = Glibc.open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
    }
}
