public import FoundationEssentials

/// `report`: a user's foreground time in a stretch of time, per application, category and web
/// domain, split into hours or days.
public struct ReportRequest: ControlRequest, Hashable {
    public typealias Reply = UsageReport
    public static let kind = "report"

    /// How the stretch is split into segments.
    public enum Segments: String, Codable, Sendable, Hashable {
        case hourly, daily
    }

    public var user: UserReference?
    public var from: Date
    public var to: Date
    public var segments: Segments
    /// The time zone whose hours and days the segments follow (an identifier such as
    /// `Europe/Paris`; the asker's own).
    public var timeZone: String
    /// A report extension (an absolute path to a root-owned program) that renders the report: it
    /// gets the report as JSON on standard input, runs without network, and what it prints (text
    /// or HTML) comes back in `rendered`.
    public var `extension`: String?

    public init(
        user: UserReference?, from: Date, to: Date, segments: Segments, timeZone: String, extension: String? = nil
    ) {
        self.user = user
        self.from = from
        self.to = to
        self.segments = segments
        self.timeZone = timeZone
        self.extension = `extension`
    }
}

/// A user's foreground time in a stretch of time. Seconds everywhere; names only where the
/// reader may see them (a guardian, an individual, a child whose guardian allowed names).
public struct UsageReport: Codable, Sendable, Hashable {
    public struct Application: Codable, Sendable, Hashable {
        /// The desktop ID (or Snap name, or `program <hash>` for a program with no desktop entry).
        public var id: String?
        public var name: String?
        public var token: String
        public var seconds: Double
        public var categories: [String]?

        public init(id: String?, name: String?, token: String, seconds: Double, categories: [String]?) {
            self.id = id
            self.name = name
            self.token = token
            self.seconds = seconds
            self.categories = categories
        }
    }

    public struct Category: Codable, Sendable, Hashable {
        public var name: String?
        public var token: String
        public var seconds: Double

        public init(name: String?, token: String, seconds: Double) {
            self.name = name
            self.token = token
            self.seconds = seconds
        }
    }

    /// A registrable domain the user's programs looked up (from the DNS filter). Its `seconds` are
    /// the time a web browser was in front while the domain was in use (within a few minutes of
    /// a lookup of it or a connection naming it); that time is the browser's too.
    public struct WebDomain: Codable, Sendable, Hashable {
        public var domain: String?
        public var token: String
        public var lookups: Int
        public var firstLookup: Date
        public var lastLookup: Date
        public var seconds: Double?

        public init(domain: String?, token: String, lookups: Int, firstLookup: Date, lastLookup: Date) {
            self.domain = domain
            self.token = token
            self.lookups = lookups
            self.firstLookup = firstLookup
            self.lastLookup = lastLookup
        }
    }

    /// A service of the catalogue that was used: its apps' time in front and its sites' time in
    /// a browser in front (counted by registrable domain, as `WebDomain`'s).
    public struct Service: Codable, Sendable, Hashable {
        public var id: String?
        public var name: String?
        public var token: String
        public var seconds: Double
        public var applicationSeconds: Double
        public var webSeconds: Double

        public init(
            id: String?, name: String?, token: String, applicationSeconds: Double, webSeconds: Double
        ) {
            self.id = id
            self.name = name
            self.token = token
            self.seconds = applicationSeconds + webSeconds
            self.applicationSeconds = applicationSeconds
            self.webSeconds = webSeconds
        }
    }

    public struct Segment: Codable, Sendable, Hashable {
        public var start: Date
        public var end: Date
        public var seconds: Double
        /// The applications used in the segment, by token, in seconds.
        public var applications: [String: Double]

        public init(start: Date, end: Date, seconds: Double, applications: [String: Double]) {
            self.start = start
            self.end = end
            self.seconds = seconds
            self.applications = applications
        }
    }

    /// Where a limit stands now: the day's or the week's time of what it limits, used and left.
    public struct LimitStanding: Codable, Sendable, Hashable {
        /// What it limits (names where the reader may see them; else a count), or `screen time`.
        public var name: String
        /// `day` or `week`.
        public var period: String
        /// The allowance by day of the week, where it differs (`mon-fri=1h,sat,sun=3h`).
        public var allowance: String?
        /// The current day's (or week's) time; nil on a day it has none.
        public var limitSeconds: Double?
        public var usedSeconds: Double?
        public var reached: Bool

        public init(
            name: String, period: String, allowance: String?, limitSeconds: Double?, usedSeconds: Double?,
            reached: Bool
        ) {
            self.name = name
            self.period = period
            self.allowance = allowance
            self.limitSeconds = limitSeconds
            self.usedSeconds = usedSeconds
            self.reached = reached
        }

        /// What is left now; nil with no limit today.
        public var leftSeconds: Double? {
            limitSeconds.map { reached ? 0 : max(0, $0 - (usedSeconds ?? 0)) }
        }
    }

    public var user: UserSummary
    public var from: Date
    public var to: Date
    public var segmentation: ReportRequest.Segments
    public var timeZone: String
    /// All foreground time: two applications in front at once in two sessions count once.
    public var totalSeconds: Double
    /// Most used first.
    public var applications: [Application]
    public var categories: [Category]
    public var webDomains: [WebDomain]
    public var segments: [Segment]
    /// Whether names are shown (else tokens alone).
    public var names: Bool
    /// What a report extension made of it, when one was asked for.
    public var rendered: String?
    /// The agent's limits on the user now (the day's and the week's, screen time's and items'),
    /// the tighter of each pair is the one that holds first.
    public var limits: [LimitStanding]?
    /// The catalogue's services that were used, most first.
    public var services: [Service]?

    public init(
        user: UserSummary, from: Date, to: Date, segmentation: ReportRequest.Segments, timeZone: String,
        totalSeconds: Double, applications: [Application], categories: [Category], webDomains: [WebDomain],
        segments: [Segment], names: Bool
    ) {
        self.user = user
        self.from = from
        self.to = to
        self.segmentation = segmentation
        self.timeZone = timeZone
        self.totalSeconds = totalSeconds
        self.applications = applications
        self.categories = categories
        self.webDomains = webDomains
        self.segments = segments
        self.names = names
    }
}

/// A graphical session of a user's, as `status` shows it.
public struct SessionReport: Codable, Sendable, Hashable {
    public var kind: SessionKind
    /// `:0`, or the sway socket.
    public var display: String
    /// Where focus is read from, in words (`X11 _NET_ACTIVE_WINDOW`), or why it is not.
    public var focusSource: String
    /// Whether input stopped for the idle timeout (its time does not count).
    public var idle: Bool
    /// The application in front now (its token, and its name where the reader may see names).
    public var inFront: String?
    public var inFrontName: String?
    /// What is wrong, when the session cannot be read now.
    public var problem: String?
    /// Why its time does not count now though input comes (logind says it is locked, or not the
    /// seat's active session).
    public var held: String?

    public init(
        kind: SessionKind, display: String, focusSource: String, idle: Bool, inFront: String?, inFrontName: String?,
        problem: String?, held: String? = nil
    ) {
        self.kind = kind
        self.display = display
        self.focusSource = focusSource
        self.idle = idle
        self.inFront = inFront
        self.inFrontName = inFrontName
        self.problem = problem
        self.held = held
    }
}
