public import FoundationEssentials
public import ScreenTimeCore

/// `ask`: a child (or an individual) asks the guardians for more time on a shielded app or web
/// domain, named as `shield` names them, or by the token the shield window showed.
public struct AskRequest: ControlRequest, Hashable {
    public typealias Reply = TimeRequestReport
    public static let kind = "ask"
    public var user: UserReference?
    public var application: String?
    public var webDomain: String?
    /// The token of what the shield showed (an app or a domain), instead of a name.
    public var token: String?
    public var minutes: Int
    public var note: String?

    public init(
        user: UserReference? = nil, application: String? = nil, webDomain: String? = nil, token: String? = nil,
        minutes: Int = 15, note: String? = nil
    ) {
        self.user = user
        self.application = application
        self.webDomain = webDomain
        self.token = token
        self.minutes = minutes
        self.note = note
    }
}

/// `requests`: asks for more time, newest first — every user's for a guardian (or one user's),
/// one's own for a child.
public struct TimeRequestsRequest: ControlRequest, Hashable {
    public typealias Reply = TimeRequestsReply
    public static let kind = "requests"
    public var user: UserReference?
    /// Pending ones only.
    public var pending: Bool

    public init(user: UserReference? = nil, pending: Bool = false) {
        self.user = user
        self.pending = pending
    }
}

/// `decide`: a guardian grants a request (its minutes, or `minutes`) or denies it.
public struct DecideRequest: ControlRequest, Hashable {
    public typealias Reply = TimeRequestReport
    public static let kind = "decide"
    public var id: Int64
    public var grant: Bool
    public var minutes: Int?
    /// How long, instead of minutes: 15 minutes, the rest of the day, until a time. Added to
    /// whichever is later of what the child still has and a grant running on the same thing.
    public var length: GrantLength?
    /// In person, in the child's session: a guardian's name and password (checked as
    /// `authorize` checks them, wrong ones counted against the child's session).
    public var guardian: GuardianCredentials?
    /// Granted with no end (a site asked for joins what the child may always open, past the
    /// filter and the shields): until a guardian ends it (`grant --end`). Not with minutes or a length.
    public var always: Bool?

    /// Where a grant with no end is kept: the year 3000. A guardian's lock with no end
    /// (`PolicyService.untilUnlocked`) is this same date.
    public static let alwaysUntil = Date(timeIntervalSince1970: 32_503_680_000)

    public init(
        id: Int64, grant: Bool, minutes: Int? = nil, length: GrantLength? = nil, guardian: GuardianCredentials? = nil,
        always: Bool? = nil
    ) {
        self.id = id
        self.grant = grant
        self.minutes = minutes
        self.length = length
        self.guardian = guardian
        self.always = always
    }
}

/// `grant --end`: a guardian ends a grant now (an ask's, or more screen time); what it lifted is
/// shielded (or locked) again at once.
public struct EndGrantRequest: ControlRequest, Hashable {
    public typealias Reply = TimeRequestReport
    public static let kind = "grant.end"
    public var id: Int64

    public init(id: Int64) { self.id = id }
}

/// One ask for more time, as `requests` lists it.
public struct TimeRequestReport: Codable, Sendable, Hashable {
    public var id: Int64
    public var user: String
    public var uid: UInt32
    /// The app's name (or desktop ID) or the web domain, where the reader may see names.
    public var application: String?
    public var webDomain: String?
    public var token: String
    public var minutes: Int
    public var note: String?
    public var state: TimeRequestState
    public var createdAt: Date
    public var decidedAt: Date?
    public var decidedBy: String?
    public var until: Date?
    /// An ask for a site (not an app, not screen time).
    public var isSiteAsk: Bool { application == nil && webDomain != nil }
    /// Granted with no end (`grant --always`).
    public var isAlways: Bool { state == .granted && (until ?? .distantPast) >= DecideRequest.alwaysUntil }

    public init(
        id: Int64, user: String, uid: UInt32, application: String?, webDomain: String?, token: String, minutes: Int,
        note: String?, state: TimeRequestState, createdAt: Date, decidedAt: Date?, decidedBy: String?, until: Date?
    ) {
        self.id = id
        self.user = user
        self.uid = uid
        self.application = application
        self.webDomain = webDomain
        self.token = token
        self.minutes = minutes
        self.note = note
        self.state = state
        self.createdAt = createdAt
        self.decidedAt = decidedAt
        self.decidedBy = decidedBy
        self.until = until
    }
}

public struct TimeRequestsReply: Codable, Sendable, Hashable {
    public var requests: [TimeRequestReport]
    public init(requests: [TimeRequestReport]) { self.requests = requests }
}

/// `shield-config`: a client's configuration extension (renders the shield) and action extension
/// (answers its buttons) for a user; `reset` removes both.
public struct ShieldConfigRequest: ControlRequest, Hashable {
    public typealias Reply = ShieldConfigReply
    public static let kind = "shield-config"
    public var user: UserReference?
    public var client: String?
    public var configuration: String?
    public var action: String?
    public var reset: Bool

    public init(
        user: UserReference?, client: String? = nil, configuration: String? = nil, action: String? = nil,
        reset: Bool = false
    ) {
        self.user = user
        self.client = client
        self.configuration = configuration
        self.action = action
        self.reset = reset
    }
}

public struct ShieldConfigReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var client: String
    public var configuration: String?
    public var action: String?

    public init(user: UserSummary, client: String, configuration: String?, action: String?) {
        self.user = user
        self.client = client
        self.configuration = configuration
        self.action = action
    }
}

/// `notice`: a small window in the user's sessions that closes by itself — what a monitor
/// extension shows (a warning that time is nearly up). Guardians for anyone authorized, an
/// individual for themself, an extension for its user; a few a minute at most.
public struct NoticeRequest: ControlRequest, Hashable {
    public typealias Reply = NoticeReply
    public static let kind = "notice"
    public var user: UserReference?
    public var title: String
    public var text: String

    public init(user: UserReference? = nil, title: String, text: String) {
        self.user = user
        self.title = title
        self.text = text
    }
}

public struct NoticeReply: Codable, Sendable, Hashable {
    /// Whether it was shown (false: too many lately, or no session to show it in).
    public var shown: Bool
    public init(shown: Bool) { self.shown = shown }
}
