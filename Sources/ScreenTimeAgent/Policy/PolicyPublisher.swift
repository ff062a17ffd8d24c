import FoundationEssentials
package import LinuxSupport
package import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

/// The one owner of the policy in force: reads it from the state database once per change,
/// makes a snapshot, hands it to every consumer in turn and returns when all have applied it.
///
/// New consumers plug in with `add(_:)`; nothing else calls them. Publishing is serialised, so
/// consumers see generations in order and never two at once.
package final class PolicyPublisher: Sendable {
    private let database: StateDatabase
    private let configuration: AgentConfiguration
    private let logger: Logger
    private let users: any Accounts
    private let consumers = Mutex<[any PolicyConsumer]>([])
    private let publishing = Mutex<UInt64>(0)
    private let latest = Mutex(PolicySnapshot.empty)

    package init(
        database: StateDatabase, configuration: AgentConfiguration, logger: Logger,
        users: any Accounts = UserDirectory()
    ) {
        self.users = users
        self.database = database
        self.configuration = configuration
        self.logger = logger
    }

    package func add(_ consumer: any PolicyConsumer) { consumers.withLock { $0.append(consumer) } }

    /// The snapshot last published.
    var current: PolicySnapshot { latest.withLock { $0 } }

    /// Reads the policy for the agent's start, before any consumer is added: each is set up with
    /// it, then added.
    func first() throws -> PolicySnapshot {
        try publishing.withLock { generation in
            let snapshot = try read(generation: generation + 1)
            generation = snapshot.generation
            for problem in snapshot.problems { logger.warning("\(problem)") }
            latest.withLock { $0 = snapshot }
            return snapshot
        }
    }

    /// Reads the policy, publishes it to every consumer, and returns it once all applied it. A
    /// database that cannot be read leaves the last snapshot in force (and is logged loudly).
    /// `unlessSubordinatesSame`: not when every authorized user's subordinate ids are what the
    /// snapshot in force has (the files changed for other users: each publication reads every
    /// child's applications again, and a machine whose accounts change often — the tests' — was
    /// made to read them every few seconds).
    @discardableResult
    package func publish(unlessSubordinatesSame: Bool = false) -> PolicySnapshot {
        publishing.withLock { generation in
            let snapshot: PolicySnapshot
            do {
                snapshot = try read(generation: generation + 1)
            } catch {
                logger.critical("cannot read the policy; the last one stays in force", metadata: ["error": "\(error)"])
                return latest.withLock { $0 }
            }
            let inForce = latest.withLock { $0 }
            if unlessSubordinatesSame, Self.subordinates(of: snapshot) == Self.subordinates(of: inForce) {
                return inForce
            }
            generation = snapshot.generation
            for problem in snapshot.problems { logger.warning("\(problem)") }
            latest.withLock { $0 = snapshot }
            for consumer in consumers.withLock({ $0 }) { consumer.apply(snapshot) }
            return snapshot
        }
    }

    /// Each user's uids and subordinate groups.
    private static func subordinates(of snapshot: PolicySnapshot) -> [UInt32: [UIDRanges]] {
        snapshot.users.mapValues { [$0.uids, $0.subordinateGIDs] }
    }

    private func read(generation: UInt64) throws -> PolicySnapshot {
        var problems: [String] = []
        let subordinateUIDs = readSubordinates(configuration.subordinateUIDs, &problems)
        let subordinateGIDs = readSubordinates(configuration.subordinateGIDs, &problems)
        var result: [UInt32: PolicySnapshot.User] = [:]
        var tokens: Set<String> = []
        for record in try database.authorizations() where record.status == .approved {
            // A uid given again to another account (the child's deleted, a new user made): the new
            // account inherits nothing of the old one's.
            if let holder = try? users.user(uid: record.uid), holder.name != record.userName {
                problems.append(
                    "uid \(record.uid) was authorized as '\(record.userName)' and now belongs to '\(holder.name)': "
                        + "nothing of \(record.userName)'s applies to \(holder.name) (screentime forget --user "
                        + "\(record.uid) removes it)")
                continue
            }
            // Time a guardian granted lifts those shields until it ends (the scheduler publishes
            // again then).
            let now = Date()
            let grants = try database.timeGrants(uid: record.uid, at: now)
            let locks = try database.loginLocks(uid: record.uid, at: now)
            let loginLock = LoginLock.inForce(
                locks: locks.map { ($0.reason.rawValue, $0.until) }, grants: grants, at: now)
            let policy = try database.stores(uid: record.uid).collection.policyInForce(
                grants: grants, alwaysAllowed: try database.alwaysAllowed(uid: record.uid), at: now)
            let account = try? users.user(uid: record.uid)
            let name = account?.name ?? record.userName
            var uids = UIDRanges([record.uid...record.uid])
            for range in subordinateUIDs.ranges(ofUser: name, uid: record.uid) { uids.insert(range) }
            let subordinateGroups = UIDRanges(subordinateGIDs.ranges(ofUser: name, uid: record.uid))
            result[record.uid] = PolicySnapshot.User(
                uid: record.uid, name: name, home: account?.home, member: record.member, policy: policy, uids: uids,
                groups: account.map { users.groupIDs(of: $0) } ?? [], subordinateGIDs: subordinateGroups,
                grantsEnd: (grants.map(\.until) + locks.map(\.until)).min(), loginLock: loginLock,
                lockout: try database.lockout(uid: record.uid))
            tokens.formUnion(policy.webDomainsShieldedByToken.keys.map(\.base64))
            tokens.formUnion(policy.applicationsShieldedByToken.keys.map(\.base64))
            tokens.formUnion(policy.applicationsBlocked.keys.map(\.base64))
            for shield in policy.webDomainCategoryShields { tokens.formUnion(shield.policy.exceptions.map(\.base64)) }
            tokens.formUnion(policy.grantedWebDomains.map(\.base64))
        }
        return PolicySnapshot(
            generation: generation, users: result, names: try database.tokenNames(tokens), problems: problems)
    }

    /// `/etc/subuid` or `/etc/subgid` (root's files, read with care all the same); a missing
    /// file is no subordinate ids.
    private func readSubordinates(_ path: String, _ problems: inout [String]) -> SubordinateIDs {
        guard Files.exists(path) else { return SubordinateIDs() }
        do {
            let bytes = try UntrustedFile.read(path, limit: 4 << 20)
            let ids = SubordinateIDs(parsing: String(decoding: bytes, as: UTF8.self))
            if ids.skippedLines > 0 { problems.append("\(path): \(ids.skippedLines) lines are not OWNER:START:COUNT") }
            return ids
        } catch {
            problems.append("cannot read \(path): \(error.message); subordinate ids are not known")
            return SubordinateIDs()
        }
    }
}
