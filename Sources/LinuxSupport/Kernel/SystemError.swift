import Glibc

/// The one error type of LinuxSupport: which call failed, on what, and why.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// A system call failed; `errno` says how.
        case systemCall
        /// A user or group that does not exist.
        case noSuchUser, noSuchGroup
        /// A file's contents are not what they must be.
        case badFile
        /// PAM refused the credentials or failed.
        case authentication
        /// A program the agent runs (iptables) failed or could not be started.
        case command
        /// A netlink service (the netfilter queue, the proc connector) refused or failed.
        case netlink
        /// The capabilities could not be dropped as asked.
        case capabilities
        /// Something did not happen before its deadline.
        case timedOut
        /// The launcher refused a request or could not start its program.
        case launch
    }

    public let code: Code
    public let message: String
    /// The errno of a failed call, 0 otherwise.
    public let errno: Int32

    public init(_ code: Code, _ message: String, errno: Int32 = 0) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// A failed call: `connect(/run/screentime/screentimed.sock): No such file or directory`.
    public static func call(_ name: String, _ errno: Int32) -> SystemError {
        SystemError(.systemCall, "\(name): \(String(cString: strerror(errno)))", errno: errno)
    }

    public var description: String { message }
}

/// Runs a system call, retrying while it fails with EINTR; a failure throws an error naming the
/// call (and what it was called on).
@discardableResult
public func systemCall<Result: BinaryInteger>(
    _ name: @autoclosure () -> String, _ body: () -> Result
)
    throws(SystemError) -> Result
{
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Glibc.errno
        if error == EINTR { continue }
        throw SystemError.call(name(), error)
    }
}

/// Runs a system call, retrying while it fails with EINTR, for callers that answer its other
/// failures themselves (EAGAIN on a socket that is not ready, a read that ends a loop): its
/// result, with `errno` as the call left it.
public func retryingInterrupts<Result: BinaryInteger>(_ body: () -> Result) -> Result {
    while true {
        let result = body()
        if result != -1 || Glibc.errno != EINTR { return result }
    }
}

/// The kernel's clocks, read directly where a value must match what another program read (logind's
/// monotonic hints).
public enum SystemClocks {
    /// CLOCK_MONOTONIC, in microseconds.
    public static func monotonicMicroseconds() -> UInt64 {
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        return UInt64(clock.tv_sec) * 1_000_000 + UInt64(clock.tv_nsec) / 1000
    }
}
