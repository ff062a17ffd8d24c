import Foundation
public import Testing

/// An executor that runs each job it is given on a new thread of its own.
///
/// The integration tests, and the in-process tests that wait on a child process, a socket or a
/// semaphore, are synchronous: each waits, a thread blocked, for real processes,
/// servers and the agent (polling `/proc`, `waitpid`, a socket's reply). Run on Swift's
/// cooperative pool, which has one thread per processor, two such tests would fill a 2-core
/// machine while both mostly sleep. On threads of their own, as many run side by side as the
/// testing library lets run (`SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH`, which
/// `scripts/run-tests` sets for them), and the processors go to whatever has work to do.
public final class ThreadPerJobExecutor: TaskExecutor {
    public static let shared = ThreadPerJobExecutor()

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let thread = Thread { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
        thread.name = "test of its own"
        thread.start()
    }
}

/// A suite whose tests run on threads of their own (`ThreadPerJobExecutor`): the preference is
/// set around each test case (the testing library calls a recursive suite trait's scope for each
/// of them, not once for the suite). With
/// `SCREENTIME_TEST_TIMES` set to a file, each test case's time (from its start on its thread to
/// its end) is added to it as a line, "seconds test", for `scripts/run-tests` to show the slowest.
public struct ThreadsOfTheirOwn: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    static let timesFile = ProcessInfo.processInfo.environment["SCREENTIME_TEST_TIMES"]

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) {
            guard testCase != nil else { return try await function() }
            guard let file = Self.timesFile else { return try await function() }
            let began = ContinuousClock.now
            defer {
                let elapsed = ContinuousClock.now - began
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                Self.append("\((seconds * 10).rounded() / 10) \(test.id)\n", to: file)
            }
            try await function()
        }
    }

    private static func append(_ line: String, to path: String) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = line.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
    }
}

extension Trait where Self == ThreadsOfTheirOwn {
    /// Each test of the suite on a thread of its own, not on Swift's cooperative pool.
    public static var threadsOfTheirOwn: Self { ThreadsOfTheirOwn() }
}
