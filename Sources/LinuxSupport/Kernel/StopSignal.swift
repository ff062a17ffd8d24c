import CLinuxShim
import Glibc
import Synchronization

/// A request to stop, for a thread blocked in `poll`: it polls `fd` beside its own descriptor,
/// and `raise()` from any thread makes that poll return.
public final class StopSignal: Sendable {
    let fd: Int32
    private let raised = Atomic<Bool>(false)

    public init() throws(SystemError) {
        fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fd >= 0 else { throw SystemError.call("eventfd", errno) }
    }

    deinit { close(fd) }

    public var isRaised: Bool { raised.load(ordering: .acquiring) }

    /// Sleeps for `duration` unless raised first; returns whether it was raised.
    @discardableResult
    public func wait(for duration: Duration) -> Bool {
        let end = ContinuousClock.now + duration
        while !isRaised {
            let left = end - .now
            guard left > .zero else { return false }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, Int32(clamping: max(1, left.milliseconds)))
        }
        return true
    }

    public func raise() {
        raised.store(true, ordering: .releasing)
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }
}

/// SIGHUP, as Dispatch needs it for a signal source: ignored by default, so that only the
/// source sees it (the process would otherwise end on it).
public enum Hangup {
    public static let number = SIGHUP

    /// Ignores SIGHUP's default action (Dispatch's sources still see it).
    public static func leaveToDispatch() { signal(SIGHUP, SIG_IGN) }
}

/// SIGPIPE ignored: a peer that goes away mid-reply is an error on that write (EPIPE), not the
/// end of the process.
public func ignoreBrokenPipes() { signal(SIGPIPE, SIG_IGN) }

/// The calling thread's name as ps, top and /proc show it (15 bytes at most): Foundation's
/// `Thread.name` does not reach the kernel on Linux.
public func nameCurrentThread(_ name: String) {
    _ = screentime_name_thread(name)
}
