public import Foundation

/// A callback the agent owes a client's monitor extension for an event.
public enum EventNotice: Hashable, Sendable, Codable {
    /// Usage came within the schedule's `warningTime` of the threshold.
    case eventWillReachThresholdWarning(DeviceActivityEvent.Name)
    /// Usage reached the threshold.
    case eventDidReachThreshold(DeviceActivityEvent.Name)
}

/// Which events of one activity have been reported in its current interval, so that each warning
/// and each threshold is reported exactly once per interval — also across restarts of the agent,
/// which persists this value.
public struct ThresholdTracker: Hashable, Sendable, Codable {
    private var intervalStart: Date?
    private var warned: Set<DeviceActivityEvent.Name> = []
    private var reached: Set<DeviceActivityEvent.Name> = []

    public init() {}

    /// Whether the event reached its threshold in the interval starting at `intervalStart`.
    public func hasReached(_ name: DeviceActivityEvent.Name, intervalStart: Date) -> Bool {
        self.intervalStart == intervalStart && reached.contains(name)
    }

    /// The usage that counts toward `event` in `interval` up to `now`: from the interval's start,
    /// or from when monitoring started if it started later and past activity does not count.
    public static func usage(
        of event: DeviceActivityEvent, activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger,
        now: Date
    ) -> TimeInterval {
        let start = event.includesPastActivity ? interval.start : max(interval.start, activity.monitoringStart)
        let end = min(now, interval.end)
        guard start < end else { return 0 }
        return ledger.total(event.usageFilter, during: DateInterval(start: start, end: end))
    }

    /// The notices due at `now` for `activity` in `interval`, each given once per interval, in
    /// event-name order, a warning before its threshold.
    public mutating func evaluate(
        _ activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger, now: Date
    ) -> [EventNotice] {
        if intervalStart != interval.start {
            intervalStart = interval.start
            warned = []
            reached = []
        }
        let warning = activity.schedule.warningDuration
        var notices: [EventNotice] = []
        for (name, event) in activity.events.sorted(by: { $0.key < $1.key }) where !reached.contains(name) {
            let used = usage(of: event, activity: activity, interval: interval, ledger: ledger, now: now)
            let threshold = event.thresholdDuration
            if warning > 0, !warned.contains(name), used >= max(0, threshold - warning) {
                warned.insert(name)
                notices.append(.eventWillReachThresholdWarning(name))
            }
            if used >= threshold {
                reached.insert(name)
                notices.append(.eventDidReachThreshold(name))
            }
        }
        return notices
    }

    /// The earliest moment a notice could become due if matching usage went on without a break
    /// from `now`: when to evaluate again. Nil if nothing more can happen in this interval.
    public func nextCheck(
        _ activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger, now: Date
    ) -> Date? {
        let warning = activity.schedule.warningDuration
        var earliest: TimeInterval?
        for (name, event) in activity.events where !(intervalStart == interval.start && reached.contains(name)) {
            let used = usage(of: event, activity: activity, interval: interval, ledger: ledger, now: now)
            var remaining = event.thresholdDuration - used
            let alreadyWarned = intervalStart == interval.start && warned.contains(name)
            if warning > 0, !alreadyWarned { remaining = max(0, event.thresholdDuration - warning) - used }
            earliest = min(earliest ?? .infinity, max(0, remaining))
        }
        guard let earliest else { return nil }
        let date = now.addingTimeInterval(earliest)
        return date < interval.end ? date : nil
    }

    private func usage(
        of event: DeviceActivityEvent, activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger,
        now: Date
    ) -> TimeInterval {
        Self.usage(of: event, activity: activity, interval: interval, ledger: ledger, now: now)
    }
}
