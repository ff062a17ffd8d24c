public import FoundationEssentials
public import ScreenTimeCore

/// What an event (or a limit) counts, by name; the agent resolves the names as `shield` does:
/// desktop-entry IDs (or `snap:NAME`), freedesktop categories, domains, web-category lists — and
/// tokens from a `FamilyActivitySelection`.
public struct ActivityItems: Codable, Sendable, Hashable {
    public var applications: [String]
    public var applicationCategories: [String]
    public var webDomains: [String]
    public var webCategories: [String]
    public var selection: FamilyActivitySelection?
    /// Services of the catalogue: each counts its apps and its web domains together.
    public var services: [String]?

    public init(
        applications: [String] = [], applicationCategories: [String] = [], webDomains: [String] = [],
        webCategories: [String] = [], selection: FamilyActivitySelection? = nil, services: [String] = []
    ) {
        self.services = services.isEmpty ? nil : services
        self.applications = applications
        self.applicationCategories = applicationCategories
        self.webDomains = webDomains
        self.webCategories = webCategories
        self.selection = selection
    }

    public var isEmpty: Bool {
        applications.isEmpty && applicationCategories.isEmpty && webDomains.isEmpty && webCategories.isEmpty
            && (selection?.isEmpty ?? true) && (services ?? []).isEmpty
    }
}

/// One event of a monitor: usage of its items reaching `thresholdSeconds` within an interval.
public struct MonitorEventRequest: Codable, Sendable, Hashable {
    public var name: String
    public var items: ActivityItems
    public var thresholdSeconds: Double
    public var includesPastActivity: Bool
    /// A threshold by the weekday an interval starts on (`DeviceActivityEvent.allowance`);
    /// `thresholdSeconds` is then its largest.
    public var allowance: DailyAllowance?

    public init(
        name: String, items: ActivityItems, thresholdSeconds: Double, includesPastActivity: Bool = false,
        allowance: DailyAllowance? = nil
    ) {
        self.name = name
        self.items = items
        self.thresholdSeconds = thresholdSeconds
        self.includesPastActivity = includesPastActivity
        self.allowance = allowance
    }
}

/// `monitor.start` (Apple's `DeviceActivityCenter.startMonitoring(_:during:events:)`): watch an
/// activity's intervals and events for one user, and run `extension` at each callback. Starting a
/// name already monitored replaces it.
public struct MonitorStartRequest: ControlRequest, Hashable {
    public typealias Reply = MonitorReply
    public static let kind = "monitor.start"
    public var user: UserReference?
    /// The client the monitor belongs to (default: `screentime`); an extension's is its own.
    public var client: String?
    public var name: String
    public var schedule: DeviceActivitySchedule
    /// Weekdays (1 = Sunday … 7) an interval may start on; nil: every day.
    public var weekdays: [Int]?
    public var events: [MonitorEventRequest]
    /// The monitor extension: an absolute path to a root-owned program no one else may write.
    public var `extension`: String?

    public init(
        user: UserReference?, client: String? = nil, name: String, schedule: DeviceActivitySchedule,
        weekdays: [Int]? = nil, events: [MonitorEventRequest] = [], extension: String? = nil
    ) {
        self.user = user
        self.client = client
        self.name = name
        self.schedule = schedule
        self.weekdays = weekdays
        self.events = events
        self.extension = `extension`
    }
}

/// `monitor.stop` (`stopMonitoring(_:)`): the named activities of one client and user, or all of
/// them when `names` is empty.
public struct MonitorStopRequest: ControlRequest, Hashable {
    public typealias Reply = MonitorListReply
    public static let kind = "monitor.stop"
    public var user: UserReference?
    public var client: String?
    public var names: [String]

    public init(user: UserReference?, client: String? = nil, names: [String]) {
        self.user = user
        self.client = client
        self.names = names
    }
}

/// `monitor.list` (`activities`, `schedule(for:)`, `events(for:)`): a user's monitors, every
/// client's for a guardian (or one client's).
public struct MonitorListRequest: ControlRequest, Hashable {
    public typealias Reply = MonitorListReply
    public static let kind = "monitor.list"
    public var user: UserReference?
    public var client: String?
    /// Only the calling program's own client's (what `DeviceActivityCenter.activities` lists).
    public var own: Bool?

    public init(user: UserReference?, client: String? = nil, own: Bool = false) {
        self.user = user
        self.client = client
        self.own = own ? true : nil
    }
}

/// `limit`: a daily time limit on apps, app categories and domains (built on a monitor of the
/// command line's client and a store): once the child's foreground time on them reaches
/// `dailySeconds` today they are shielded until midnight. `remove` takes the limit on exactly
/// these items away.
public struct LimitRequest: ControlRequest, Hashable {
    public typealias Reply = MonitorListReply
    public static let kind = "limit"
    public var user: UserReference?
    public var items: ActivityItems
    public var dailySeconds: Double?
    /// A day's time that differs by day of the week (`mon-fri=1h,sat,sun=3h`), instead of
    /// `dailySeconds`; a day not in it has no daily limit, a day at 0 has nothing.
    public var daily: DailyAllowance?
    /// The week's time, Monday to Sunday, beside (or instead of) the day's: the tighter wins.
    public var weeklySeconds: Double?
    /// The month's time, from the 1st: the same.
    public var monthlySeconds: Double?
    /// The store the shield goes in (default `limits`).
    public var store: String?
    public var remove: Bool
    /// The whole day's screen time instead of items: every application, web domain and text
    /// login counts (once, however many at once). Reached, every application is shielded until
    /// midnight.
    public var screenTime: Bool?
    /// With `screenTime`: reached, the child's sessions are locked and logins refused until
    /// midnight (the PAM hooks ask).
    public var noLogin: Bool?

    public init(
        user: UserReference?, items: ActivityItems, dailySeconds: Double?, store: String? = nil, remove: Bool = false,
        screenTime: Bool = false, noLogin: Bool = false
    ) {
        self.user = user
        self.items = items
        self.dailySeconds = dailySeconds
        self.store = store
        self.remove = remove
        self.screenTime = screenTime ? true : nil
        self.noLogin = noLogin ? true : nil
    }
}

/// `downtime`: from `from` to `to` (hour and minute, the next day when `to` is earlier) on the
/// given weekdays, every application but the allowed ones is shielded; `off` ends it.
public struct DowntimeRequest: ControlRequest, Hashable {
    public typealias Reply = MonitorListReply
    public static let kind = "downtime"
    public var user: UserReference?
    public var from: DateComponents?
    public var to: DateComponents?
    public var weekdays: [Int]?
    /// Applications still allowed (desktop-entry IDs, `snap:NAME`).
    public var allow: [String]
    public var off: Bool
    /// During downtime the child's sessions are locked and logins refused (the PAM hooks ask).
    public var noLogin: Bool
    /// A name, for several downtimes (school nights, weekends): 1 to 40 letters, digits, `. _ -`.
    public var name: String?

    public init(
        user: UserReference?, from: DateComponents?, to: DateComponents?, weekdays: [Int]? = nil, allow: [String] = [],
        off: Bool = false, noLogin: Bool = false
    ) {
        self.user = user
        self.from = from
        self.to = to
        self.weekdays = weekdays
        self.allow = allow
        self.off = off
        self.noLogin = noLogin
    }

    private enum CodingKeys: String, CodingKey { case user, from, to, weekdays, allow, off, noLogin, name }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        user = try container.decodeIfPresent(String.self, forKey: .user)
        from = try container.decodeIfPresent(TimeOfDay.self, forKey: .from)?.components
        to = try container.decodeIfPresent(TimeOfDay.self, forKey: .to)?.components
        weekdays = try container.decodeIfPresent([Int].self, forKey: .weekdays)
        allow = try container.decodeIfPresent([String].self, forKey: .allow) ?? []
        off = try container.decodeIfPresent(Bool.self, forKey: .off) ?? false
        noLogin = try container.decodeIfPresent(Bool.self, forKey: .noLogin) ?? false
        name = try container.decodeIfPresent(String.self, forKey: .name)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(user, forKey: .user)
        try container.encodeIfPresent(from.map(TimeOfDay.init), forKey: .from)
        try container.encodeIfPresent(to.map(TimeOfDay.init), forKey: .to)
        try container.encodeIfPresent(weekdays, forKey: .weekdays)
        try container.encode(allow, forKey: .allow)
        try container.encode(off, forKey: .off)
        if noLogin { try container.encode(true, forKey: .noLogin) }
        try container.encodeIfPresent(name, forKey: .name)
    }

    /// An hour and minute on the wire: `{"hour": 21, "minute": 0}`.
    private struct TimeOfDay: Codable {
        var hour: Int
        var minute: Int
        init(_ components: DateComponents) {
            hour = components.hour ?? -1
            minute = components.minute ?? 0
        }
        var components: DateComponents { DateComponents(hour: hour, minute: minute) }
    }
}

/// One monitored activity, as `monitor list` shows it.
public struct MonitorReport: Codable, Sendable, Hashable {
    /// One event, with its items' names where the reader may see them.
    public struct Event: Codable, Sendable, Hashable {
        public var name: String
        public var thresholdSeconds: Double
        public var includesPastActivity: Bool
        /// Tokens of what it counts.
        public var applications: [String]
        public var categories: [String]
        public var webDomains: [String]
        /// Names of those, where the reader may see them.
        public var itemNames: [String]?
        /// Whether it was reached in the current interval.
        public var reached: Bool
        /// Foreground time counted toward it in the current interval, so far.
        public var usedSeconds: Double?
        /// A day's threshold that differs by day of the week (`mon-fri=1h,sat,sun=3h`); then
        /// `thresholdSeconds` is the current (or next) interval's, and `noThresholdToday` says the
        /// day has none.
        public var allowance: String?
        public var noThresholdToday: Bool?

        public init(
            name: String, thresholdSeconds: Double, includesPastActivity: Bool, applications: [String],
            categories: [String], webDomains: [String], itemNames: [String]?, reached: Bool, usedSeconds: Double?
        ) {
            self.name = name
            self.thresholdSeconds = thresholdSeconds
            self.includesPastActivity = includesPastActivity
            self.applications = applications
            self.categories = categories
            self.webDomains = webDomains
            self.itemNames = itemNames
            self.reached = reached
            self.usedSeconds = usedSeconds
        }
    }

    /// The last run of its extension (or built-in reaction).
    public struct Run: Codable, Sendable, Hashable {
        public var callback: String
        public var event: String?
        public var at: Date
        /// `ok`, `failed`, `stopped` (hung or flooded), `refused` (the program may not run).
        public var outcome: String
        /// What went wrong, in words; nil when all went well.
        public var problem: String?

        public init(callback: String, event: String?, at: Date, outcome: String, problem: String?) {
            self.callback = callback
            self.event = event
            self.at = at
            self.outcome = outcome
            self.problem = problem
        }
    }

    public var client: String
    public var name: String
    public var schedule: DeviceActivitySchedule
    public var weekdays: [Int]?
    public var events: [Event]
    public var `extension`: String?
    /// `limit` or `downtime` for the built-in ones.
    public var builtIn: String?
    public var monitoringStart: Date
    /// The interval in progress or next; nil once a schedule that does not repeat is over.
    public var currentInterval: DateInterval?
    public var inInterval: Bool
    public var lastRun: Run?
    /// The agent's own rules warn several times (seconds before, longest first); nil: the
    /// schedule's one `warningTime`.
    public var warnings: [Double]?

    public init(
        client: String, name: String, schedule: DeviceActivitySchedule, weekdays: [Int]?, events: [Event],
        extension: String?, builtIn: String?, monitoringStart: Date, currentInterval: DateInterval?, inInterval: Bool,
        lastRun: Run?
    ) {
        self.client = client
        self.name = name
        self.schedule = schedule
        self.weekdays = weekdays
        self.events = events
        self.extension = `extension`
        self.builtIn = builtIn
        self.monitoringStart = monitoringStart
        self.currentInterval = currentInterval
        self.inInterval = inInterval
        self.lastRun = lastRun
    }
}

public struct MonitorReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var monitor: MonitorReport

    public init(user: UserSummary, monitor: MonitorReport) {
        self.user = user
        self.monitor = monitor
    }
}

public struct MonitorListReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var monitors: [MonitorReport]
    /// The time zone the schedules follow (the system's).
    public var timeZone: String

    public init(user: UserSummary, monitors: [MonitorReport], timeZone: String) {
        self.user = user
        self.monitors = monitors
        self.timeZone = timeZone
    }
}

/// `free`: hours in which a child's use counts toward none of the agent's limits and screen time
/// (homework time), optionally shielding some categories meanwhile (Game). Named, so a child may
/// have several; `off` removes one.
public struct FreeTimeRequest: ControlRequest, Hashable {
    public typealias Reply = MonitorListReply
    public static let kind = "free"
    public var user: UserReference?
    public var name: String?
    public var from: DateComponents?
    public var to: DateComponents?
    public var weekdays: [Int]?
    /// Categories shielded while it lasts (freedesktop names: `Game`).
    public var shieldCategories: [String]
    public var off: Bool

    public init(
        user: UserReference?, name: String? = nil, from: DateComponents?, to: DateComponents?, weekdays: [Int]? = nil,
        shieldCategories: [String] = [], off: Bool = false
    ) {
        self.user = user
        self.name = name
        self.from = from
        self.to = to
        self.weekdays = weekdays
        self.shieldCategories = shieldCategories
        self.off = off
    }
}
