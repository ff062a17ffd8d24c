import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// The policy in force, read once from the state database and handed to every consumer (the
/// domain shield, the process shield, and the services that come): which users are authorized,
/// each one's merged policy, the names of the tokens it uses, and which kernel ids are whose.
///
/// Immutable: a change makes a new snapshot with the next generation. Consumers never read the
/// policy from SQLite themselves.
package struct PolicySnapshot: Sendable {
    struct User: Sendable {
        var uid: UInt32
        var name: String
        /// Nil when the account is no longer in the user database.
        var home: String?
        var member: FamilyControlsMember
        var policy: EffectivePolicy
        /// Every uid that is this user: its own and its subordinate ones.
        var uids: UIDRanges
        /// Its groups and its subordinate gids.
        var groups: Set<UInt32>
        var subordinateGIDs: UIDRanges
        /// When the first of the grants or login locks in force ends (the policy changes then);
        /// nil: none.
        var grantsEnd: Date? = nil
        /// Why the user's sessions are locked and logins refused (downtime or the day's screen
        /// time, with `--no-login`), and a guardian's grant of screen time that lifts it for now.
        var loginLock: LoginLock? = nil
        /// What a lock does to the user's open sessions.
        var lockout: LockoutAction = .hold

        /// Whether the user's sessions are locked now (a lock no grant lifts).
        var isLocked: Bool { loginLock.map { $0.grantedUntil == nil } ?? false }
    }

    /// A lock on logins in force (the core decides it, with the grants).
    typealias LoginLock = ScreenTimeCore.LoginLock

    var generation: UInt64
    var users: [UInt32: User]
    /// The names of the tokens the policies name (web domains' are what the DNS filter needs).
    var names: [String: TokenName]
    /// What could not be read while making it, in words.
    var problems: [String]

    static let empty = PolicySnapshot(generation: 0, users: [:], names: [:], problems: [])

    /// The authorized user a kernel uid belongs to: the user itself, or the one whose subordinate
    /// uids include it. Nil for everyone else.
    func owner(ofKernelUID uid: UInt32) -> UInt32? {
        if users[uid] != nil { return uid }
        return users.values.first { $0.uids.contains(uid) }?.uid
    }

    /// Every kernel uid range that is an authorized user, sorted.
    var allUIDRanges: [ClosedRange<UInt32>] {
        users.values.flatMap(\.uids.ranges).sorted { $0.lowerBound < $1.lowerBound }
    }
}

/// Something that puts policy snapshots in force: `apply` returns once it is (a reply to a
/// guardian means "in force now").
package protocol PolicyConsumer: AnyObject, Sendable {
    func apply(_ snapshot: PolicySnapshot)
}
