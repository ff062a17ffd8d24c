import FoundationEssentials
import ScreenTimeCore

/// One monitored activity of one client for one user, as the agent keeps it: Apple's activity,
/// and what runs at its callbacks — a guardian app's extension program, or one of the agent's
/// own reactions (a daily limit, downtime).
package struct Monitor: Codable, Sendable, Hashable {
    struct Key: Hashable, Sendable, Comparable, CustomStringConvertible {
        var uid: UInt32
        var client: ClientID
        var name: DeviceActivityName

        static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.uid, lhs.client.rawValue, lhs.name.rawValue) < (rhs.uid, rhs.client.rawValue, rhs.name.rawValue)
        }

        var description: String { "\(client)/\(name) of uid \(uid)" }
    }

    /// The agent's own reactions, for the limits and downtime it offers itself.
    enum BuiltIn: Codable, Sendable, Hashable {
        /// When the day's usage reaches the threshold, these are shielded in `store` until the
        /// next interval (the next day) starts.
        case limit(LimitShield)
        /// While an interval lasts, every application but the allowed ones is shielded in `store`;
        /// with `noLogin`, the user's sessions are locked and logins refused too.
        case downtime(store: StoreName, allowed: Set<ApplicationToken>, noLogin: Bool? = nil)
        /// When the day's whole screen time reaches the threshold, every application is shielded
        /// in `store` until the next day; with `noLogin`, sessions are locked and logins refused.
        case screenTime(store: StoreName, noLogin: Bool)
        /// While an interval lasts, the user's use counts toward none of the agent's limits and
        /// screen time; these categories are shielded in `store` meanwhile.
        case free(store: StoreName, shielded: Set<ActivityCategoryToken>)

        var name: String {
            switch self {
            case .limit: "limit"
            case .downtime: "downtime"
            case .screenTime: "screen time"
            case .free: "free time"
            }
        }

        /// Whether what it counts leaves out the user's free periods (the agent's own limits).
        var countsFreeTimeOut: Bool {
            switch self {
            case .limit, .screenTime: true
            case .downtime, .free: false
            }
        }

        /// Whether it locks sessions and refuses logins while in force.
        var noLogin: Bool {
            switch self {
            case .limit, .free: false
            case .downtime(_, _, let noLogin): noLogin ?? false
            case .screenTime(_, let noLogin): noLogin
            }
        }
    }

    struct LimitShield: Codable, Sendable, Hashable {
        var store: StoreName
        var applications: Set<ApplicationToken>
        var categories: Set<ActivityCategoryToken>
        var webDomains: Set<WebDomainToken>
    }

    var uid: UInt32
    var client: ClientID
    var activity: MonitoredActivity
    /// The extension program: an absolute path, checked again before each run.
    var program: String?
    var builtIn: BuiltIn?
    /// The names of each event's items, as given (what a guardian sees in `monitor list`).
    var itemNames: [String: [String]]

    var key: Key { Key(uid: uid, client: client, name: activity.name) }
}

/// A callback owed to a monitor, written with the progress that made it owed (one transaction):
/// run, then deleted. One still here after a restart is run then.
package struct OwedCallback: Sendable, Hashable {
    var id: Int64
    var key: Monitor.Key
    var callback: ActivityCallback
}

/// How one run of a monitor's reaction went, for `monitor list` and `status`.
struct ExtensionRun: Sendable, Hashable {
    enum Outcome: String, Sendable {
        case ok, failed, stopped, refused
    }

    var key: Monitor.Key
    var callback: ActivityCallback
    var at: Date
    var outcome: Outcome
    var problem: String?
}
