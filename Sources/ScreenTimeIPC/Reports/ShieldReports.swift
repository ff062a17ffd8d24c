public import FoundationEssentials

/// The DNS filter for one user, as `status` shows it.
public struct DomainShieldReport: Codable, Sendable, Hashable {
    /// Whether the user's DNS goes through the agent's filter now (rules installed, queue read).
    public var filtering: Bool
    /// What keeps the filter from working as it should, in words; empty when all is well.
    public var problems: [String]
    /// The latest shielded lookups (and connections naming a shielded host), newest first.
    public var recentLookups: [ShieldEventReport]
    /// Connections refused since the agent started, by why: `name` (a shielded host in a TLS
    /// hello or HTTP request), `address` (returned for a shielded name), `quic`, `unreadable`
    /// (TLS or HTTP that cannot be read), `urgent`, `lost` (an opening whose state was lost),
    /// `changed` (passed before the web shields changed). Absent from older agents.
    public var refusedConnections: [String: Int]?

    public init(
        filtering: Bool, problems: [String], recentLookups: [ShieldEventReport],
        refusedConnections: [String: Int]? = nil
    ) {
        self.filtering = filtering
        self.problems = problems
        self.recentLookups = recentLookups
        self.refusedConnections = refusedConnections
    }
}

/// The process shield for one user, as `status` shows it.
public struct ProcessShieldReport: Codable, Sendable, Hashable {
    /// Whether the agent hears of the user's processes as they start (proc connector read).
    public var watching: Bool
    /// How shielded processes are held: `cgroup v2 freezer`, `cgroup v1 freezer` or `SIGSTOP`.
    public var method: String
    /// What keeps the shield from working as it should, in words; empty when all is well.
    public var problems: [String]
    /// The user's processes frozen now, by pid: at most `ProcessShieldReport.frozenListed` of
    /// them (a child can hold thousands; the reply stays within a message).
    public var frozen: [FrozenProcessReport]
    /// How many of the user's processes are frozen now, listed or not (nil from an agent before
    /// the list had a limit: then all are listed).
    public var frozenCount: Int?
    /// The most frozen processes a report lists.
    public static let frozenListed = 200
    /// The latest things done to the user's processes, newest first.
    public var recent: [ApplicationEventReport]
    /// Whether blocked apps' known programs are refused before they run (fanotify), rather than
    /// only killed at exec.
    public var refusesBlockedExecs: Bool?
    /// Whether only programs a guardian installed may run (`application.denyAppInstallation`).
    public var onlyInstalledPrograms: Bool?
    /// How long the exec gate took to answer the kernel's asks lately (every user's: an exec
    /// waits for it), in microseconds.
    public var gateAnswers: TimingReport?

    public init(
        watching: Bool, method: String, problems: [String], frozen: [FrozenProcessReport],
        recent: [ApplicationEventReport], refusesBlockedExecs: Bool? = nil
    ) {
        self.refusesBlockedExecs = refusesBlockedExecs
        self.watching = watching
        self.method = method
        self.problems = problems
        self.frozen = frozen
        self.recent = recent
    }
}

public struct FrozenProcessReport: Codable, Sendable, Hashable {
    public var pid: Int32
    /// The application token it is frozen for.
    public var token: String
    public var since: Date
    /// The program's name (`comm`), for the reader to recognise it.
    public var command: String
    /// `shielded`, `being judged` (held while the agent reads what it runs) or `could not be
    /// judged` (those reads did not come back); nil from agents before this field.
    public var reason: String?

    public init(pid: Int32, token: String, since: Date, command: String) {
        self.pid = pid
        self.token = token
        self.since = since
        self.command = command
    }
}

public struct ApplicationEventReport: Codable, Sendable, Hashable {
    public var time: Date
    public var token: String
    public var pid: Int32
    /// `frozen`, `thawed`, `killed`, `refused` or `uninstalled` (a program no guardian installed).
    public var action: String

    public init(time: Date, token: String, pid: Int32, action: String) {
        self.time = time
        self.token = token
        self.pid = pid
        self.action = action
    }
}

/// Shielded lookups of one domain for one reason, counted over a span of time.
public struct ShieldEventReport: Codable, Sendable, Hashable {
    public var first: Date
    public var last: Date
    public var count: Int
    /// The web-domain token of the name looked up: the shield it met (as the guardian wrote it), or for a category or filter its registrable domain.
    public var token: String
    /// `domain`, `category`, `filter` or `bypass`.
    public var reason: String
    /// The web category whose list held the name, for `category`.
    public var category: String?

    public init(first: Date, last: Date, count: Int, token: String, reason: String, category: String?) {
        self.first = first
        self.last = last
        self.count = count
        self.token = token
        self.reason = reason
        self.category = category
    }
}

/// Durations of the latest of something, in microseconds.
public struct TimingReport: Codable, Sendable, Hashable {
    /// How many there were in all (the percentiles are of the latest few thousand).
    public var count: Int
    public var p50: Int
    public var p99: Int
    public var slowest: Int

    public init(count: Int, p50: Int, p99: Int, slowest: Int) {
        self.count = count
        self.p50 = p50
        self.p99 = p99
        self.slowest = slowest
    }
}
