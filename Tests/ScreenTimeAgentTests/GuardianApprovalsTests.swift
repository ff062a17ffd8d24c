import Foundation
import Logging
import ScreenTimeIPC
import ScreenTimeTestKit
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// Password guessing, without PAM: a fake check, a manual clock, a real database on disk.
@Suite(.threadsOfTheirOwn) struct GuardianApprovalsTests {
    final class Counter: Sendable {
        let value = Mutex(0)
        var count: Int { value.withLock { $0 } }
    }

    private func approvals(
        _ database: StateDatabase, _ clock: ManualClock, checks: Counter = Counter()
    ) -> GuardianApprovals {
        GuardianApprovals(database: database, logger: Logger(label: "test"), now: { clock.now }) { _, password in
            checks.value.withLock { $0 += 1 }
            guard password == "right" else { throw ScreenTimeIPCError(.authenticationFailed, "wrong") }
        }
    }

    private func code(_ body: () throws -> Void) -> ScreenTimeIPCError.Code? {
        do {
            try body()
            return nil
        } catch let error as ScreenTimeIPCError {
            return error.code
        } catch {
            return .internalError
        }
    }

    @Test func waitsGrowAfterEachWrongPasswordAndARightOneResets() throws {
        let directory = try TemporaryDirectory()
        let database = try StateDatabase(path: directory.path + "/state.sqlite")
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let checks = Counter()
        let approvals = approvals(database, clock, checks: checks)
        func attempt(_ password: String) -> ScreenTimeIPCError.Code? {
            code { try approvals.approve(guardian: "mum", password: password, asker: 1001, askerName: "kid") }
        }
        #expect(attempt("wrong") == .authenticationFailed)
        // Straight away again: refused without asking PAM.
        #expect(attempt("right") == .tooManyAttempts)
        #expect(checks.count == 1)
        clock.advance(1)
        #expect(attempt("wrong") == .authenticationFailed)
        clock.advance(1)
        #expect(attempt("wrong") == .tooManyAttempts)
        clock.advance(1)
        #expect(attempt("wrong") == .authenticationFailed)
        #expect(GuardianApprovals.wait(after: 3) == 4)
        clock.advance(4)
        #expect(attempt("right") == nil)
        #expect(try approvals.failures(1001) == nil)
        // Another asker is not held by this one's failures.
        #expect(code { try approvals.approve(guardian: "mum", password: "right", asker: 1002, askerName: "b") } == nil)
    }

    @Test func tenWrongPasswordsLockTheAskerOutUntilAGuardianLiftsItAcrossRestarts() throws {
        let directory = try TemporaryDirectory()
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let checks = Counter()
        do {
            let approvals = approvals(try StateDatabase(path: directory.path + "/state.sqlite"), clock, checks: checks)
            for _ in 0..<GuardianApprovals.lockoutAfter {
                clock.advance(GuardianApprovals.longestWait)
                #expect(
                    code { try approvals.approve(guardian: "mum", password: "guess", asker: 1001, askerName: "kid") }
                        == .authenticationFailed)
            }
        }
        // A restarted agent (a new instance on the same file) still refuses, a day later.
        let database = try StateDatabase(path: directory.path + "/state.sqlite")
        let approvals = approvals(database, clock, checks: checks)
        clock.advance(86_400)
        #expect(
            code { try approvals.approve(guardian: "mum", password: "right", asker: 1001, askerName: "kid") }
                == .tooManyAttempts)
        #expect(checks.count == GuardianApprovals.lockoutAfter)
        #expect(try approvals.failures(1001)?.locked == true)
        #expect(try approvals.unlock(1001))
        #expect(
            code { try approvals.approve(guardian: "mum", password: "right", asker: 1001, askerName: "kid") } == nil)
    }

    @Test func oneCheckAtATimePerAsker() throws {
        let directory = try TemporaryDirectory()
        let database = try StateDatabase(path: directory.path + "/state.sqlite")
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let approvals = GuardianApprovals(database: database, logger: Logger(label: "test")) { _, _ in
            inside.signal()
            release.wait()
        }
        let first = Thread {
            try? approvals.approve(guardian: "mum", password: "x", asker: 1001, askerName: "kid")
        }
        first.start()
        inside.wait()
        // While the first check runs, a second one of the same asker is turned away at once.
        #expect(
            code { try approvals.approve(guardian: "mum", password: "x", asker: 1001, askerName: "kid") }
                == .tooManyAttempts)
        release.signal()
        // Another asker waits for nobody.
        let other = Thread { try? approvals.approve(guardian: "mum", password: "x", asker: 1002, askerName: "b") }
        other.start()
        inside.wait()
        release.signal()
    }
}
