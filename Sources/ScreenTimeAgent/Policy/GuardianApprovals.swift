import FoundationEssentials
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
///
/// The dashboard signs in for every device on the home network, the child's among them; its
/// tries are throttled per device instead (`client`, the address it saw; this PC's loopback
/// addresses are one device), with the same waits and lockout, kept in memory: a child who guesses
/// locks out its own device, not the guardian's phone. Beside them, every wrong try through the
/// dashboard counts against its account (kept in the state database, as any asker's) with no wait
/// and a lockout after `dashboardLockoutAfter` in a row: a dashboard that lies about its devices
/// still gets no more guesses than that.
package final class GuardianApprovals: Sendable {
    package static let lockoutAfter = 10
    package static let longestWait: Double = 300
    package static let dashboardLockoutAfter = 100
    /// Devices whose failures are kept; past it, the oldest not locked out are forgotten.
    static let maximumDevices = 4_096
    /// Devices whose tries are checked at once.
    static let concurrentDevices = 4

    /// One device's wrong tries in a row.
    struct DeviceFailures: Sendable, Hashable {
        var failures: Int
        var lastFailure: Date
        var locked: Bool
    }
    private let devices = Mutex<[String: DeviceFailures]>([:])
    private let checkingDevices = Mutex<Set<String>>([])

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
        failures <= 0 ? 0 : min(longestWait, Double(1 << min(failures - 1, 30)))
    }

    /// Checks `password` for `guardian` on behalf of `asker`; throws `tooManyAttempts` when the
    /// asker must wait or is locked out (without asking PAM), `authenticationFailed` when wrong.
    func approve(
        guardian: String, password: String, asker: UInt32, askerName: String, device: String? = nil
    ) throws {
        try throttled(asker: asker, askerName: askerName, subject: guardian, device: device) {
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
    func throttled(
        asker: UInt32, askerName: String, subject: String, device: String? = nil, _ attempt: () throws -> Void
    ) throws {
        if let device {
            return try throttled(
                asker: asker, askerName: askerName, subject: subject, device: Self.deviceKey(device), attempt)
        }
        let started = checking.withLock { $0.insert(asker).inserted }
        guard started else {
            throw ScreenTimeIPCError(
                .tooManyAttempts, "a password of yours is being checked already; wait for its answer")
        }
        defer { _ = checking.withLock { $0.remove(asker) } }
        let record = try database.passwordFailures(uid: asker)
        if let record {
            try refuseWhileWaiting(
                failures: record.failures, lastFailure: record.lastFailure, locked: record.locked,
                lockedOut: "\(askerName) is locked out", askerName: askerName)
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

    /// Throws when failures in a row lock the asker (or device) out, or its wait after the last one
    /// has not passed; `lockedOut` says who is, for the message.
    private func refuseWhileWaiting(
        failures: Int, lastFailure: Date, locked: Bool, lockedOut: String, askerName: String
    ) throws {
        if locked {
            throw ScreenTimeIPCError(
                .tooManyAttempts,
                "too many wrong passwords: \(lockedOut) until a guardian runs 'screentime unlock --user \(askerName)'")
        }
        let left = lastFailure.addingTimeInterval(Self.wait(after: failures)).timeIntervalSince(now())
        if left > 0 {
            throw ScreenTimeIPCError(
                .tooManyAttempts,
                "after \(failures) wrong \(failures == 1 ? "try" : "tries"), try again in \(Int(left.rounded(.up))) s")
        }
    }

    /// A guardian lifts an asker's lockout (and forgets its failures, and its devices'); whether
    /// there was one.
    @discardableResult
    func unlock(_ asker: UInt32) throws -> Bool {
        let had = try database.passwordFailures(uid: asker) != nil
        try database.savePasswordFailures(uid: asker, nil)
        let devices = devices.withLock { devices in
            defer { devices = devices.filter { !$0.key.hasPrefix("\(asker)|") } }
            return devices.keys.contains { $0.hasPrefix("\(asker)|") }
        }
        return had || devices
    }

    /// The device an address stands for: this PC's loopback addresses are one; an IPv4 address
    /// written as IPv6 is the IPv4 one.
    static func deviceKey(_ address: String) -> String {
        var text = address.lowercased()
        if text.hasPrefix("::ffff:"), text.contains(".") { text = String(text.dropFirst(7)) }
        if text == "::1" || text.hasPrefix("127.") { return "this PC" }
        return String(text.prefix(64))
    }

    /// The dashboard's try for a device: that device's waits and lockout, and the dashboard's own
    /// count of wrong tries in a row.
    private func throttled(
        asker: UInt32, askerName: String, subject: String, device: String, _ attempt: () throws -> Void
    ) throws {
        let key = "\(asker)|\(device)"
        let started = checkingDevices.withLock { checking -> Bool in
            guard checking.count < Self.concurrentDevices || checking.contains(key) else { return false }
            return checking.insert(key).inserted
        }
        guard started else {
            throw ScreenTimeIPCError(
                .tooManyAttempts, "a sign-in from this device (or too many others) is being checked; try again")
        }
        defer { _ = checkingDevices.withLock { $0.remove(key) } }
        let overall = try database.passwordFailures(uid: asker)
        if let overall, overall.locked {
            throw ScreenTimeIPCError(
                .tooManyAttempts,
                "too many wrong passwords through the dashboard: sign-ins are locked out until a guardian runs 'screentime unlock --user \(askerName)' (paired phones still work)"
            )
        }
        if let record = devices.withLock({ $0[key] }) {
            try refuseWhileWaiting(
                failures: record.failures, lastFailure: record.lastFailure, locked: record.locked,
                lockedOut: "this device is locked out", askerName: askerName)
        }
        do {
            try attempt()
        } catch {
            let moment = now()
            let record = devices.withLock { devices -> DeviceFailures in
                var record = devices[key] ?? DeviceFailures(failures: 0, lastFailure: moment, locked: false)
                record.failures += 1
                record.lastFailure = moment
                record.locked = record.failures >= Self.lockoutAfter
                devices[key] = record
                if devices.count > Self.maximumDevices {
                    let forgettable = devices.filter { !$0.value.locked }.sorted {
                        $0.value.lastFailure < $1.value.lastFailure
                    }
                    for (old, _) in forgettable.prefix(devices.count - Self.maximumDevices) { devices[old] = nil }
                }
                return record
            }
            let failures = (overall?.failures ?? 0) + 1
            let locked = failures >= Self.dashboardLockoutAfter
            try database.savePasswordFailures(
                uid: asker,
                StateDatabase.PasswordFailures(uid: asker, failures: failures, lastFailure: moment, locked: locked))
            logger.warning(
                "a guardian password was refused",
                metadata: [
                    "guardian": "\(subject)", "asker": "\(askerName)", "device": "\(device)",
                    "failures": "\(record.failures)", "deviceLockedOut": "\(record.locked)",
                    "dashboardFailures": "\(failures)", "lockedOut": "\(locked)",
                ])
            if let error = error as? ScreenTimeIPCError { throw error }
            throw ScreenTimeIPCError(.authenticationFailed, "\(subject): not right")
        }
        devices.withLock { $0[key] = nil }
        if overall != nil { try database.savePasswordFailures(uid: asker, nil) }
    }

    /// An asker's failures in a row, and whether they locked it out; nil when there are none.
    func failures(_ asker: UInt32) throws -> StateDatabase.PasswordFailures? {
        try database.passwordFailures(uid: asker)
    }
}
