public import FoundationEssentials
public import ScreenTimeCore

/// `login`: what the PAM module (`pam_screentime.so`, root only) tell the agent of a login, and ask.
///
/// - `account`: may this user log in now? A child in downtime with `--no-login`, or whose day's
///   screen time is used up with `--no-login`, may not; everyone else may.
/// - `open`: a session of this user opened (the caller's parent process is the session's leader:
///   login, sshd, su or the display manager's worker); the agent lists it in `status`, counts a
///   text session's time as screen time, and ends it when the leader exits.
/// - `close`: that session closed.
public struct LoginRequest: ControlRequest, Hashable {
    public typealias Reply = LoginReply
    public static let kind = "login"

    public enum Phase: String, Codable, Sendable, CaseIterable {
        case account, open, close
    }

    public var phase: Phase
    /// The user logging in (`PAM_USER`).
    public var user: String
    /// The PAM service (`login`, `sshd`, `su`, `lightdm`, …).
    public var service: String
    /// `PAM_TTY`: `tty1`, `/dev/pts/3`, `:0`, `ssh`; empty when there is none.
    public var tty: String
    /// `PAM_RHOST`, for ssh.
    public var remoteHost: String?

    public init(phase: Phase, user: String, service: String, tty: String, remoteHost: String? = nil) {
        self.phase = phase
        self.user = user
        self.service = service
        self.tty = tty
        self.remoteHost = remoteHost
    }

    /// What kind of login this is, from the service and the tty: `graphical` (a display
    /// manager, or an X display as tty), `ssh`, `su` (su, sudo, runuser) or `tty` — or `other`
    /// when there is no terminal (a cron job, `su -c` from a script): listed, never counted as
    /// screen time.
    public var loginKind: String {
        let service = service.lowercased()
        if tty.hasPrefix(":")
            || ["gdm", "lightdm", "sddm", "xdm", "lxdm", "slim", "greetd"].contains(where: {
                service.hasPrefix($0)
            })
        {
            return "graphical"
        }
        if service.hasPrefix("sshd") || tty == "ssh" { return "ssh" }
        guard !tty.isEmpty else { return "other" }
        if ["su", "su-l", "sudo", "sudo-i", "runuser", "runuser-l"].contains(service) { return "su" }
        return "tty"
    }
}

public struct LoginReply: Codable, Sendable, Hashable {
    /// Whether the login may go on.
    public var allowed: Bool
    /// Said to the person logging in when it may not (and why, and until when).
    public var message: String?
    /// When they may log in again, when it may not.
    public var until: Date?

    public init(allowed: Bool, message: String? = nil, until: Date? = nil) {
        self.allowed = allowed
        self.message = message
        self.until = until
    }
}

/// A login session of an authorized user, as `status` lists it.
public struct LoginReport: Codable, Sendable, Hashable {
    /// `graphical`, `tty`, `ssh` or `su`.
    public var kind: String
    public var service: String
    public var tty: String
    public var remoteHost: String?
    public var since: Date
    /// The process the session lives in (its PAM leader).
    public var leader: Int32

    public init(kind: String, service: String, tty: String, remoteHost: String?, since: Date, leader: Int32) {
        self.kind = kind
        self.service = service
        self.tty = tty
        self.remoteHost = remoteHost
        self.since = since
        self.leader = leader
    }
}

/// Why a user's sessions are locked and logins refused now.
public struct LoginLockReport: Codable, Sendable, Hashable {
    /// `downtime` or `screen time`.
    public var reason: String
    public var until: Date
    /// A guardian's grant of more screen time lifts it until then.
    public var grantedUntil: Date?

    public init(reason: String, until: Date, grantedUntil: Date?) {
        self.reason = reason
        self.until = until
        self.grantedUntil = grantedUntil
    }
}

/// `grant --screen-time`: a guardian gives a child more screen time now: for `minutes`, logins
/// are not refused and sessions not locked by downtime or the day's screen time.
public struct ScreenTimeGrantRequest: ControlRequest, Hashable {
    public typealias Reply = TimeRequestReport
    public static let kind = "grant.screenTime"
    public var user: UserReference?
    public var minutes: Int
    /// How long, instead of minutes (then 0): the rest of the day, until a time.
    public var length: GrantLength?

    public init(user: UserReference?, minutes: Int) {
        self.user = user
        self.minutes = minutes
    }

    public init(user: UserReference?, length: GrantLength) {
        self.user = user
        if case .minutes(let minutes) = length { self.minutes = minutes } else { self.minutes = 0 }
        self.length = length
    }
}

/// `lock`: a guardian locks a child's sessions and refuses its logins now — until a guardian
/// unlocks it (`length` nil), for a while, until a time, or for the rest of the day. The child is
/// told first, and held as downtime with `--no-login` holds it. `unlock` lifts it.
public struct LockRequest: ControlRequest, Hashable {
    public typealias Reply = LockReply
    public static let kind = "lock"
    public var user: UserReference?
    public var length: GrantLength?
    /// Lift the lock instead.
    public var unlock: Bool

    public init(user: UserReference?, length: GrantLength? = nil, unlock: Bool = false) {
        self.user = user
        self.length = length
        self.unlock = unlock
    }
}

public struct LockReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    /// Until when the guardian's lock holds; nil when there is none (now).
    public var until: Date?
    /// Whether it holds until a guardian unlocks it.
    public var untilUnlocked: Bool
    /// Whether a lock was lifted (with `unlock`).
    public var lifted: Bool

    public init(user: UserSummary, until: Date?, untilUnlocked: Bool, lifted: Bool) {
        self.user = user
        self.until = until
        self.untilUnlocked = untilUnlocked
        self.lifted = lifted
    }
}

/// What a lock (downtime or screen time with `--no-login`, a guardian's `lock`) does to a child's
/// open sessions, besides refusing its logins.
public enum LockoutAction: String, Codable, Sendable, Hashable, CaseIterable {
    /// Every program of the child is held (frozen) and its terminals told: the default.
    case hold
    /// The child's sessions are ended: its programs and its sessions' leaders are killed.
    case logout
    /// The sessions are held and the computer suspended (the agent's `suspendCommand`).
    case suspend
    /// The sessions are held and logind asked to lock their screens: a desktop whose lock screen
    /// is drawn by its compositor (GNOME Shell) shows it; elsewhere this is `hold`.
    case lockScreen = "lock-screen"
}

/// `lockout`: what a lock does to a child's sessions; without `action`, reads it.
public struct LockoutRequest: ControlRequest, Hashable {
    public typealias Reply = LockoutReply
    public static let kind = "lockout"
    public var user: UserReference?
    public var action: LockoutAction?
    /// The warnings before a lock, downtime and a limit, in seconds before (30, 10, 5 and 1
    /// minutes unless a guardian chose others); an empty list: none.
    public var warnings: [Double]?

    public init(user: UserReference?, action: LockoutAction? = nil, warnings: [Double]? = nil) {
        self.user = user
        self.action = action
        self.warnings = warnings
    }
}

public struct LockoutReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var action: LockoutAction
    /// Seconds before, longest first.
    public var warnings: [Double]

    public init(user: UserSummary, action: LockoutAction, warnings: [Double]) {
        self.user = user
        self.action = action
        self.warnings = warnings
    }
}
