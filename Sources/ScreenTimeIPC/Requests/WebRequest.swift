public import FoundationEssentials

/// `web.signIn`: the dashboard (`screentime-web`, from its own account only) signs a guardian in,
/// with their password (checked through PAM, throttled as `authorize` is) or a pairing code a
/// guardian made at the PC (`web.pair`), and gets the session its later requests carry. Only a
/// guardian may sign in; a child, an individual and anyone else are refused.
public struct WebSignInRequest: ControlRequest, Hashable {
    public typealias Reply = WebSignInReply
    public static let kind = "web.signIn"
    /// The guardian's user name; with a pairing code, none (the code names its guardian).
    public var user: String?
    public var password: String?
    /// A code `screentime web pair` printed: the session is then a paired device's, long-lived.
    public var pairingCode: String?
    /// What the device calls itself (a browser's name), shown in `screentime web devices`.
    public var device: String
    /// The device's address, as the dashboard saw it: wrong tries wait and lock out per device.
    public var client: String?

    public init(
        user: String? = nil, password: String? = nil, pairingCode: String? = nil, device: String,
        client: String? = nil
    ) {
        self.client = client
        self.user = user
        self.password = password
        self.pairingCode = pairingCode
        self.device = device
    }
}

public struct WebSignInReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    /// The session's secret, given once: the dashboard keeps it in the device's cookie.
    public var token: String
    public var session: WebSessionReport

    public init(user: UserSummary, token: String, session: WebSessionReport) {
        self.user = user
        self.token = token
        self.session = session
    }
}

/// A dashboard session as the agent lists it (never its secret).
public struct WebSessionReport: Codable, Sendable, Hashable {
    /// A short public name of the session, for `--revoke`.
    public var id: String
    public var user: String
    public var device: String
    /// Whether it is a paired device's (long-lived) rather than a password sign-in's.
    public var paired: Bool
    public var created: Date
    public var lastUsed: Date
    public var expires: Date

    public init(
        id: String, user: String, device: String, paired: Bool, created: Date, lastUsed: Date, expires: Date
    ) {
        self.id = id
        self.user = user
        self.device = device
        self.paired = paired
        self.created = created
        self.lastUsed = lastUsed
        self.expires = expires
    }
}

/// `web.signOut`: ends the session the request is made in.
public struct WebSignOutRequest: ControlRequest, Hashable {
    public typealias Reply = WebSessionsReply
    public static let kind = "web.signOut"
    public init() {}
}

/// `web.devices`: a guardian's dashboard sessions; `revoke` ends one of them by its id (or
/// `all`). A guardian sees and ends only their own.
public struct WebSessionsRequest: ControlRequest, Hashable {
    public typealias Reply = WebSessionsReply
    public static let kind = "web.devices"
    public var revoke: String?
    public init(revoke: String? = nil) { self.revoke = revoke }
}

public struct WebSessionsReply: Codable, Sendable, Hashable {
    public var sessions: [WebSessionReport]
    /// How many sessions the request ended.
    public var ended: Int

    public init(sessions: [WebSessionReport], ended: Int = 0) {
        self.sessions = sessions
        self.ended = ended
    }
}

/// `web.pair`: a guardian at the PC makes a one-time code (and the address to open) that signs a
/// phone in as a paired device of theirs, without typing a password on it.
public struct WebPairRequest: ControlRequest, Hashable {
    public typealias Reply = WebPairReply
    public static let kind = "web.pair"
    public init() {}
}

public struct WebPairReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    /// Eight characters from an alphabet without look-alikes, used once, for `expires`.
    public var code: String
    public var expires: Date

    public init(user: UserSummary, code: String, expires: Date) {
        self.user = user
        self.code = code
        self.expires = expires
    }
}

/// `web.service`: turn the dashboard on (where it listens) or off, or only read how it is
/// (guardians, from a terminal: not from a dashboard session). The agent runs `screentime-web` as
/// its own account while it is on, across restarts, and starts it again if it dies.
public struct WebServiceRequest: ControlRequest, Hashable {
    public typealias Reply = WebServiceReply
    public static let kind = "web.service"
    /// On or off; nil only reads.
    public var enable: Bool?
    /// The port (1024 to 65535); nil keeps the one set (8443 at first).
    public var port: Int?
    /// The addresses to listen on (IP addresses, at most 8); nil keeps those set, empty means
    /// this PC's home-network addresses and loopback.
    public var listen: [String]?

    public init(enable: Bool? = nil, port: Int? = nil, listen: [String]? = nil) {
        self.enable = enable
        self.port = port
        self.listen = listen
    }
}

public struct WebServiceReply: Codable, Sendable, Hashable {
    public var enabled: Bool
    public var port: Int
    /// The addresses set; empty: the home network's and loopback.
    public var listen: [String]
    /// The dashboard's pid while it runs.
    public var pid: Int32?
    /// Why it does not run while on (it cannot start, or keeps ending), in words.
    public var problem: String?
    /// How many times it was started again after it ended by itself.
    public var restarts: Int
    public var changedBy: String?
    public var changedAt: Date?
    /// The dashboard's own directory, where it writes status.json (its addresses and its
    /// certificate's fingerprint).
    public var directory: String?

    public init(
        enabled: Bool, port: Int, listen: [String], pid: Int32?, problem: String?, restarts: Int,
        changedBy: String?, changedAt: Date?
    ) {
        self.enabled = enabled
        self.port = port
        self.listen = listen
        self.pid = pid
        self.problem = problem
        self.restarts = restarts
        self.changedBy = changedBy
        self.changedAt = changedAt
    }
}
