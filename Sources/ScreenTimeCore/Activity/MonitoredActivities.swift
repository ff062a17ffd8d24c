public import Foundation

/// One activity a client monitors: its schedule, its events, and when monitoring began (for
/// events that do not include past activity, and for a schedule that does not repeat).
public struct MonitoredActivity: Hashable, Sendable, Codable {
    public var name: DeviceActivityName
    public var schedule: DeviceActivitySchedule
    public var events: [DeviceActivityEvent.Name: DeviceActivityEvent]
    public var monitoringStart: Date

    public init(
        name: DeviceActivityName, schedule: DeviceActivitySchedule,
        events: [DeviceActivityEvent.Name: DeviceActivityEvent], monitoringStart: Date
    ) {
        self.name = name
        self.schedule = schedule
        self.events = events
        self.monitoringStart = monitoringStart
    }

    /// The interval in force or next at `now`; for a schedule that does not repeat, only the first
    /// interval from the start of monitoring, and nil once it has ended.
    public func currentOrNextInterval(at now: Date, calendar: Calendar) -> DateInterval? {
        if schedule.repeats { return schedule.nextInterval(at: now, calendar: calendar) }
        guard let first = schedule.nextInterval(at: monitoringStart, calendar: calendar), first.end > now else {
            return nil
        }
        return first
    }
}

/// The activities one client monitors (what `DeviceActivityCenter` keeps), with Apple's limit of
/// 20 per client.
public struct MonitoredActivities: Hashable, Sendable, Codable {
    /// Apple's limit on the activities one client monitors at once.
    public static var maximumActivities: Int { 20 }

    public private(set) var activities: [DeviceActivityName: MonitoredActivity] = [:]

    public init() {}

    /// Starts (or restarts, replacing) monitoring an activity. Checks the schedule, each event and
    /// the limit of 20 activities; nothing changes on error.
    public mutating func startMonitoring(
        _ name: DeviceActivityName, during schedule: DeviceActivitySchedule,
        events: [DeviceActivityEvent.Name: DeviceActivityEvent] = [:], at now: Date
    ) throws(ScreenTimeCoreError) {
        try schedule.validate()
        for (eventName, event) in events.sorted(by: { $0.key < $1.key }) {
            do {
                try event.validate()
            } catch {
                throw ScreenTimeCoreError(error.code, "event '\(eventName)': \(error.message)")
            }
        }
        if activities[name] == nil, activities.count >= Self.maximumActivities {
            throw ScreenTimeCoreError(
                .excessiveActivities,
                "this client already monitors \(activities.count) activities; at most \(Self.maximumActivities) (stop one first)"
            )
        }
        activities[name] = MonitoredActivity(name: name, schedule: schedule, events: events, monitoringStart: now)
    }

    /// Stops monitoring the named activities, or all of them; returns what was stopped.
    @discardableResult
    public mutating func stopMonitoring(_ names: [DeviceActivityName]? = nil) -> [MonitoredActivity] {
        let stopping = names ?? Array(activities.keys)
        return stopping.sorted().compactMap { activities.removeValue(forKey: $0) }
    }
}
