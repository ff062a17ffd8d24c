public import Foundation
import ScreenTimeClient
public import ScreenTimeCore
import ScreenTimeIPC

/// When an activity is monitored (Apple's `DeviceActivitySchedule`).
public typealias DeviceActivitySchedule = ScreenTimeCore.DeviceActivitySchedule
/// An application's token (Apple's `ApplicationToken`).
public typealias ApplicationToken = ScreenTimeCore.ApplicationToken
/// A web domain's token (Apple's `WebDomainToken`).
public typealias WebDomainToken = ScreenTimeCore.WebDomainToken
/// A category's token (Apple's `ActivityCategoryToken`).
public typealias ActivityCategoryToken = ScreenTimeCore.ActivityCategoryToken

/// The name of a monitored activity (Apple's `DeviceActivityName`): 1 to 128 characters, no
/// control characters (checked by the agent when monitoring starts).
public struct DeviceActivityName: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// Usage to watch for within an activity's intervals (Apple's `DeviceActivityEvent`): reached
/// when the applications, categories and web domains together have been used for `threshold`
/// within one interval.
public struct DeviceActivityEvent: Hashable, Sendable {
    /// An event's name (Apple's `DeviceActivityEvent.Name`).
    public struct Name: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
    }

    public var applications: Set<ApplicationToken>
    public var categories: Set<ActivityCategoryToken>
    public var webDomains: Set<WebDomainToken>
    /// The usage that reaches it, as a duration (`DateComponents(minute: 30)`).
    public var threshold: DateComponents
    /// Whether usage in the interval from before monitoring started counts.
    public var includesPastActivity: Bool

    public init(
        applications: Set<ApplicationToken> = [], categories: Set<ActivityCategoryToken> = [],
        webDomains: Set<WebDomainToken> = [], threshold: DateComponents, includesPastActivity: Bool = false
    ) {
        self.applications = applications
        self.categories = categories
        self.webDomains = webDomains
        self.threshold = threshold
        self.includesPastActivity = includesPastActivity
    }

    var thresholdSeconds: Double {
        let parts = [
            (threshold.day, 86_400.0), (threshold.hour, 3_600.0), (threshold.minute, 60.0), (threshold.second, 1.0),
        ]
        return parts.reduce(0) { $0 + Double($1.0 ?? 0) * $1.1 }
    }
}

/// Apple's `DeviceActivityCenter.MonitoringError`, with the agent's message.
public enum MonitoringError: Error, Sendable, Hashable, CustomStringConvertible {
    case excessiveActivities(String)
    case intervalTooLong(String)
    case intervalTooShort(String)
    case invalidDateComponents(String)
    case unauthorized(String)
    /// Anything else the agent refused (an unknown token, an extension it may not run).
    case other(code: String, message: String)

    init(_ error: any Error) {
        guard let error = error as? ScreenTimeIPCError else {
            self = .other(code: "internalError", message: "\(error)")
            return
        }
        switch error.code.rawValue {
        case "excessiveActivities": self = .excessiveActivities(error.message)
        case "intervalTooLong": self = .intervalTooLong(error.message)
        case "intervalTooShort": self = .intervalTooShort(error.message)
        case "invalidDateComponents": self = .invalidDateComponents(error.message)
        case "notAllowed", "notAuthorized": self = .unauthorized(error.message)
        default: self = .other(code: error.code.rawValue, message: error.message)
        }
    }

    public var description: String {
        switch self {
        case .excessiveActivities(let message), .intervalTooLong(let message), .intervalTooShort(let message),
            .invalidDateComponents(let message), .unauthorized(let message), .other(_, let message):
            message
        }
    }
}

/// Starts and stops monitoring activities (Apple's `DeviceActivityCenter`): at each interval's
/// start and end, each warning and each event's threshold, the agent runs the monitor extension —
/// even when no program of this client runs.
///
/// On Linux the center names its user (by default the one running the program, or an extension's
/// own) and its monitor extension: a root-owned program (`DeviceActivityMonitorExtension`).
public final class DeviceActivityCenter: @unchecked Sendable {
    public let user: String?
    public let monitorExtension: String?
    let client: ScreenTimeClient

    public init(user: String? = nil, monitorExtension: String? = nil, socket: String? = nil) {
        self.user = user
        self.monitorExtension = monitorExtension
        client = ScreenTimeClient(socket: socket)
    }

    /// Starts (or restarts) monitoring an activity: Apple's rules and errors (an interval of 15
    /// minutes to a week, 20 activities per client).
    public func startMonitoring(
        _ activity: DeviceActivityName, during schedule: DeviceActivitySchedule,
        events: [DeviceActivityEvent.Name: DeviceActivityEvent] = [:]
    ) throws {
        let requested = events.sorted { $0.key.rawValue < $1.key.rawValue }.map { name, event in
            MonitorEventRequest(
                name: name.rawValue,
                items: ActivityItems(
                    selection: FamilyActivitySelection(
                        applicationTokens: event.applications, categoryTokens: event.categories,
                        webDomainTokens: event.webDomains)),
                thresholdSeconds: event.thresholdSeconds, includesPastActivity: event.includesPastActivity)
        }
        do {
            _ = try client.send(
                MonitorStartRequest(
                    user: user, name: activity.rawValue, schedule: schedule, events: requested,
                    extension: monitorExtension))
        } catch {
            throw MonitoringError(error)
        }
    }

    /// Stops monitoring the activities, or all of this client's when none is named.
    public func stopMonitoring(_ activities: [DeviceActivityName] = []) {
        _ = try? client.send(MonitorStopRequest(user: user, names: activities.map(\.rawValue)))
    }

    /// The activities this client monitors.
    public var activities: [DeviceActivityName] {
        monitors().map { DeviceActivityName($0.name) }
    }

    /// The schedule of an activity, if it is monitored.
    public func schedule(for activity: DeviceActivityName) -> DeviceActivitySchedule? {
        monitors().first { $0.name == activity.rawValue }?.schedule
    }

    /// The events of an activity.
    public func events(for activity: DeviceActivityName) -> [DeviceActivityEvent.Name: DeviceActivityEvent] {
        guard let monitor = monitors().first(where: { $0.name == activity.rawValue }) else { return [:] }
        var events: [DeviceActivityEvent.Name: DeviceActivityEvent] = [:]
        for event in monitor.events {
            events[DeviceActivityEvent.Name(event.name)] = DeviceActivityEvent(
                applications: Set(event.applications.compactMap { try? ApplicationToken(base64: $0) }),
                categories: Set(event.categories.compactMap { try? ActivityCategoryToken(base64: $0) }),
                webDomains: Set(event.webDomains.compactMap { try? WebDomainToken(base64: $0) }),
                threshold: DurationText.components(event.thresholdSeconds),
                includesPastActivity: event.includesPastActivity)
        }
        return events
    }

    /// This client's own monitors (the agent knows this program, or this extension, as its client).
    private func monitors() -> [MonitorReport] {
        (try? client.send(MonitorListRequest(user: user, own: true)))?.monitors ?? []
    }
}
