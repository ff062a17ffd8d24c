import Foundation
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
public typealias DeviceActivityName = ScreenTimeCore.DeviceActivityName
/// Usage to watch for within an activity's intervals (Apple's `DeviceActivityEvent`): reached
/// when the applications, categories and web domains together have been used for `threshold`
/// within one interval.
public typealias DeviceActivityEvent = ScreenTimeCore.DeviceActivityEvent

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

    /// Why monitoring could not start (Apple's `DeviceActivityCenter.MonitoringError`). Any other
    /// refusal of the agent (an unknown token, an extension it may not run, no agent) is thrown as
    /// the agent's `ScreenTimeIPCError`; the agent's own words for the last failure are in
    /// `lastErrorMessage`.
    public enum MonitoringError: Error, Sendable, Hashable, CustomStringConvertible {
        /// More than 20 activities for this client.
        case excessiveActivities
        /// An interval over a week.
        case intervalTooLong
        /// An interval under 15 minutes.
        case intervalTooShort
        /// A start, end or warning time that is not one.
        case invalidDateComponents
        /// The user is not authorized, or this program may not monitor them.
        case unauthorized

        init?(_ error: ScreenTimeIPCError) {
            switch error.code.rawValue {
            case "excessiveActivities": self = .excessiveActivities
            case "intervalTooLong": self = .intervalTooLong
            case "intervalTooShort": self = .intervalTooShort
            case "invalidDateComponents": self = .invalidDateComponents
            case "notAllowed", "notAuthorized": self = .unauthorized
            default: return nil
            }
        }

        public var description: String {
            switch self {
            case .excessiveActivities: "too many activities are monitored (at most 20 per client)"
            case .intervalTooLong: "the interval is longer than a week"
            case .intervalTooShort: "the interval is shorter than 15 minutes"
            case .invalidDateComponents: "the schedule's date components are not valid"
            case .unauthorized: "not authorized to monitor this user"
            }
        }
    }

    /// The agent's words for the last refusal of `startMonitoring` (nil after a success). Not Apple's.
    public var lastErrorMessage: String? { lock.withLock { failure } }
    private let lock = NSLock()
    private var failure: String?

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
                thresholdSeconds: event.thresholdDuration, includesPastActivity: event.includesPastActivity,
                allowance: event.allowance)
        }
        do throws(ScreenTimeIPCError) {
            _ = try client.send(
                MonitorStartRequest(
                    user: user, name: activity.rawValue, schedule: schedule, events: requested,
                    extension: monitorExtension))
            lock.withLock { failure = nil }
        } catch {
            lock.withLock { failure = error.message }
            if let monitoring = MonitoringError(error) { throw monitoring }
            throw error
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
