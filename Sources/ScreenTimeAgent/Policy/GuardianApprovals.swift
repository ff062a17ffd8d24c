import Foundation
import LinuxSupport
import Logging
import ScreenTimeIPC
import Synchronization

/// A guardian's approval given with their password in someone else's session (a child asking to
/// be authorized, later: asking for more time in person), checked through PAM so that it cannot be
/// guessed at speed.
///
/// Per asker (the uid whose session sends the password; its subordinate uids count as it): one
/// check at a time; after a failure the next try waits, twice as long after each further failure
/// (1 s, 2 s, 4 s … up to 5 minutes); after `lockoutAfter` failures in a row the asker is locked
/// out until a guardian lifts it (`screentime unlock`). Failures are kept in the state database,
/// so a restart gives no new tries, and every one is logged with who asked and for whom.
final class GuardianApprovals: Sendable {
    static let lockoutAfter = 10
    static let longestWait: TimeInterval = 300

    private let database: StateDatabase
    private let logger: Logger
    private let checking = Mutex<Set<UInt32>>([])
    private let check: @Sendable (_ guardian: String, _ password: String) throws -> Void
    private let now: @Sendable () -> Date

    init(
        database: StateDatabase, logger: Logger, now: @escaping @Sendable () -> Date = Date.init,
        check: @escaping @Sendable (_ guardian: String, _ password: String) throws -> Void
    ) {
        self.database = database
        self.logger = logger
        self.now = now
        self.check = check
    }

    /// How long an asker waits after this many failures in a row.
    static func wait(after failures: Int) -> TimeInterval {
        failures <= 0 ? 0 : min(longestWait, pow(2, Double(failures - 1)))
    }

    /// Checks `password` for `guardian` on behalf of `asker`; throws `tooManyAttempts` when the
    /// asker must wait or is locked out (without asking PAM), `authenticationFailed` when wrong.
    func approve(guardian: String, password: String, asker: UInt32, askerName: String) throws {
        try throttled(asker: asker, askerName: askerName, subject: guardian) {
            do {
                try check(guardian, password)
            } catch let error as ScreenTimeIPCError {
                throw error
            } catch {
                throw ScreenTimeIPCError(.authenticationFailed, "the password for \(guardian) is not right")
            }
        }
    }

    /// Runs `attempt` (a password or a pairing code checked) under the same waits and lockout;
    /// its failure counts as a wrong password of the asker's, and is logged naming `subject`.
    func throttled(asker: UInt32, askerName: String, subject: String, _ attempt: () throws -> Void) throws {
        let started = checking.withLock { $0.insert(asker).inserted }
        guard started else {
            throw ScreenTimeIPCError(
                .tooManyAttempts, "a password of yours is being checked already; wait for its answer")
        }
        defer { _ = checking.withLock { $0.remove(asker) } }
        let record = try database.passwordFailures(uid: asker)
        if let record {
            if record.locked {
                throw ScreenTimeIPCError(
                    .tooManyAttempts,
                    "too many wrong passwords: \(askerName) is locked out until a guardian runs 'screentime unlock --user \(askerName)'"
                )
            }
            let next = record.lastFailure.addingTimeInterval(Self.wait(after: record.failures))
            let left = next.timeIntervalSince(now())
            if left > 0 {
                throw ScreenTimeIPCError(
                    .tooManyAttempts,
                    "after \(record.failures) wrong \(record.failures == 1 ? "try" : "tries"), try again in \(Int(left.rounded(.up))) s"
                )
            }
        }
        do {
            try attempt()
        } catch {
            let failures = (record?.failures ?? 0) + 1
            let locked = failures >= Self.lockoutAfter
            try database.savePasswordFailures(
                uid: asker,
                StateDatabase.PasswordFailures(uid: asker, failures: failures, lastFailure: now(), locked: locked))
            logger.warning(
                "a guardian password was refused",
                metadata: [
                    "guardian": "\(subject)", "asker": "\(askerName)", "askerUID": "\(asker)",
                    "failures": "\(failures)", "lockedOut": "\(locked)",
                ])
            if let error = error as? ScreenTimeIPCError { throw error }
            throw ScreenTimeIPCError(.authenticationFailed, "\(subject): not right")
        }
        if record != nil { try database.savePasswordFailures(uid: asker, nil) }
    }

    /// A guardian lifts an asker's lockout (and forgets its failures); whether there was one.
    @discardableResult
    func unlock(_ asker: UInt32) throws -> Bool {
        let had = try database.passwordFailures(uid: asker) != nil
        try database.savePasswordFailures(uid: asker, nil)
        return had
    }

    /// An asker's failures in a row, and whether they locked it out; nil when there are none.
    func failures(_ asker: UInt32) throws -> StateDatabase.PasswordFailures? {
        try database.passwordFailures(uid: asker)
    }
}
