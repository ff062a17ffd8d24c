import Glibc

/// Threads of the agent's own (pthreads), for the loops that wait in the kernel: a reader of a
/// queue or a socket, a watcher of a display. Foundation's `Thread` did this, and brought
/// Foundation and ICU with it.
public enum Threads {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new detached thread named `name` (as ps and /proc show it, 15 bytes
    /// at most). False when the system would start no thread (EAGAIN: a limit of threads).
    @discardableResult
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let body = Unmanaged<Body>.fromOpaque(context).takeRetainedValue()
                nameCurrentThread(body.name)
                body.run()
                return nil
            }, context)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// Sleeps the calling thread for `seconds` (all of them: a signal's interruption goes on).
    public static func sleep(_ seconds: Double) {
        guard seconds > 0, seconds.isFinite else { return }
        var wanted = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var left = timespec()
        while nanosleep(&wanted, &left) == -1, errno == EINTR { wanted = left }
    }
}

/// A lock with a condition to wait on (pthread's), as Foundation's `NSCondition`: waits are
/// timed on the monotonic clock, so that a change of the wall clock neither ends one early nor
/// makes it last.
public final class Condition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits (the lock held) until signalled; it may also wake for no reason, as any condition.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits (the lock held) until signalled or `seconds` have passed: false when they passed.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        guard seconds > 0 else { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let whole = seconds.isFinite ? min(seconds, 1e9) : 1e9
        var nanoseconds = now.tv_nsec + Int((whole - whole.rounded(.down)) * 1e9)
        var deadline = timespec(tv_sec: now.tv_sec + Int(whole), tv_nsec: 0)
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            deadline.tv_sec += 1
        }
        deadline.tv_nsec = nanoseconds
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }

    /// Waits (the lock held) until signalled or `deadline` has passed: false when it passed.
    @discardableResult
    public func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let left = ContinuousClock.now.duration(to: deadline).components
        return wait(seconds: Double(left.seconds) + Double(left.attoseconds) * 1e-18)
    }

    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }
}
