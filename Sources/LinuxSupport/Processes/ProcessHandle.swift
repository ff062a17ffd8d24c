import CLinuxShim
import Glibc

/// One process, held by a pidfd: signals sent through it reach that process or nobody, never
/// another that got its pid number later.
///
/// Opened only after checking that the pid is still the process that was judged: the pidfd is
/// opened first, then `/proc/PID/stat` must still give the start time that was recorded (and
/// `status` an owner the caller accepts). If the process had died and its number been reused
/// before the open, the start time differs and no handle is made; after the open, the pidfd
/// names the judged process until it is closed.
public final class ProcessHandle: Sendable {
    public let pid: Int32
    public let startTime: UInt64
    private let fd: Int32

    /// A handle on `pid` if it is still the process that started at `startTime` and its real
    /// uid passes `owner`; nil otherwise (gone, reused, or not the owner's).
    public convenience init?(
        pid: Int32, startTime: UInt64, inspector: ProcessInspector = ProcessInspector(),
        owner: (UInt32) -> Bool = { _ in true }
    ) {
        self.init(pid: pid, inspector: inspector, owner: owner)
        guard self.startTime == startTime else { return nil }
    }

    /// A handle on whichever process has `pid` now, if its real uid passes `owner`: the pidfd is
    /// opened first, then the start time and uid are read, then the pidfd's process must still be
    /// alive — so what was read was that process's (its number cannot be reused while it lives).
    /// For a process the caller knows is there (one waiting in `execve` for the exec gate).
    public init?(pid: Int32, inspector: ProcessInspector = ProcessInspector(), owner: (UInt32) -> Bool) {
        let fd = screentime_pidfd_open(pid)
        guard fd >= 0 else { return nil }
        guard let startTime = inspector.startTime(pid: pid), let uid = inspector.status(pid: pid)?.uid, owner(uid),
            screentime_pidfd_send_signal(fd, 0) == 0
        else {
            close(fd)
            return nil
        }
        self.pid = pid
        self.startTime = startTime
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sends a signal; false when the process is gone.
    @discardableResult
    public func signal(_ number: Int32) -> Bool { screentime_pidfd_send_signal(fd, number) == 0 }

    /// SIGSTOP, SIGCONT and SIGKILL by name; false when the process is gone.
    @discardableResult public func stop() -> Bool { signal(SIGSTOP) }
    @discardableResult public func resume() -> Bool { signal(SIGCONT) }
    @discardableResult public func kill() -> Bool { signal(SIGKILL) }
    @discardableResult public func terminate() -> Bool { signal(SIGTERM) }

    /// Whether the process has not exited yet (a zombie has).
    public var isAlive: Bool { screentime_pidfd_send_signal(fd, 0) == 0 }
}
