public import FoundationEssentials

/// A callback the agent owes a client's monitor extension for an event.
public enum EventNotice: Hashable, Sendable, Codable {
    /// Usage came within the schedule's `warningTime` of the threshold.
    case eventWillReachThresholdWarning(DeviceActivityEvent.Name)
    /// One of several warnings (`MonitoredActivity.warnings`), with its lead time.
    case eventWillReachThresholdWarningAt(DeviceActivityEvent.Name, mark: TimeInterval)
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
    /// Of several warnings, the shortest lead time given for each event in this interval.
    private var warnedMarks: [DeviceActivityEvent.Name: TimeInterval]?

    public init() {}

    /// Whether the event reached its threshold in the interval starting at `intervalStart`.
    public func hasReached(_ name: DeviceActivityEvent.Name, intervalStart: Date) -> Bool {
        self.intervalStart == intervalStart && reached.contains(name)
    }

    /// The usage that counts toward `event` in `interval` up to `now`: from the interval's start,
    /// or from when monitoring started if it started later and past activity does not count.
    public static func usage(
        of event: DeviceActivityEvent, activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger,
        now: Date, calendar: ZonedCalendar = .current()
    ) -> TimeInterval {
        let start = event.includesPastActivity ? interval.start : max(interval.start, activity.monitoringStart)
        let end = min(now, interval.end)
        guard start < end else { return 0 }
        let window = DateInterval(start: start, end: end)
        let filter = event.usageFilter
        var total = ledger.total(filter, during: window)
        // What was used in free periods does not count.
        if let periods = activity.freePeriods, !periods.isEmpty {
            for free in FreePeriod.union(periods, in: window, calendar: calendar) {
                total -= ledger.total(filter, during: free)
            }
        }
        return max(0, total)
    }

    /// The notices due at `now` for `activity` in `interval`, each given once per interval, in
    /// event-name order, a warning before its threshold.
    public mutating func evaluate(
        _ activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger, now: Date,
        calendar: ZonedCalendar = .current()
    ) -> [EventNotice] {
        if intervalStart != interval.start {
            intervalStart = interval.start
            warned = []
            reached = []
            warnedMarks = nil
        }
        let warning = activity.schedule.warningDuration
        var notices: [EventNotice] = []
        if activity.warnings != nil {
            return evaluateMarks(activity, interval: interval, ledger: ledger, now: now, calendar: calendar)
        }
        for (name, event) in activity.events.sorted(by: { $0.key < $1.key }) where !reached.contains(name) {
            // A day with no threshold of its own (a limit on other days only) has nothing.
            guard let threshold = event.threshold(forIntervalStartingAt: interval.start, calendar: calendar) else {
                continue
            }
            let used = usage(
                of: event, activity: activity, interval: interval, ledger: ledger, now: now, calendar: calendar)
            // An allowance of nothing is reached at once, with no warning.
            if warning > 0, threshold > 0, !warned.contains(name), used >= max(0, threshold - warning) {
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

    /// `evaluate` for an activity with several warnings: for each event, the latest warning whose
    /// moment has come, if it is shorter than the one given.
    private mutating func evaluateMarks(
        _ activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger, now: Date, calendar: ZonedCalendar
    ) -> [EventNotice] {
        var notices: [EventNotice] = []
        let marks = activity.warningMarks
        for (name, event) in activity.events.sorted(by: { $0.key < $1.key }) where !reached.contains(name) {
            guard let threshold = event.threshold(forIntervalStartingAt: interval.start, calendar: calendar) else {
                continue
            }
            let used = usage(
                of: event, activity: activity, interval: interval, ledger: ledger, now: now, calendar: calendar)
            if threshold > 0, let mark = marks.filter({ used >= max(0, threshold - $0) }).min(),
                mark < (warnedMarks?[name] ?? .infinity)
            {
                warnedMarks = (warnedMarks ?? [:]).merging([name: mark]) { $1 }
                warned.insert(name)
                notices.append(.eventWillReachThresholdWarningAt(name, mark: mark))
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
        _ activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger, now: Date,
        calendar: ZonedCalendar = .current()
    ) -> Date? {
        let warning = activity.schedule.warningDuration
        var earliest: TimeInterval?
        for (name, event) in activity.events where !(intervalStart == interval.start && reached.contains(name)) {
            guard let threshold = event.threshold(forIntervalStartingAt: interval.start, calendar: calendar) else {
                continue
            }
            let used = usage(
                of: event, activity: activity, interval: interval, ledger: ledger, now: now, calendar: calendar)
            var remaining = threshold - used
            if activity.warnings != nil {
                // The next of several warnings not given yet.
                let given = intervalStart == interval.start ? warnedMarks?[name] ?? .infinity : .infinity
                if threshold > 0, let next = activity.warningMarks.filter({ $0 < given }).max() {
                    remaining = max(0, threshold - next) - used
                }
                earliest = min(earliest ?? .infinity, max(0, remaining))
                continue
            }
            let alreadyWarned = intervalStart == interval.start && warned.contains(name)
            if warning > 0, threshold > 0, !alreadyWarned { remaining = max(0, threshold - warning) - used }
            earliest = min(earliest ?? .infinity, max(0, remaining))
        }
        guard let earliest else { return nil }
        let date = now.addingTimeInterval(earliest)
        return date < interval.end ? date : nil
    }

    private func usage(
        of event: DeviceActivityEvent, activity: MonitoredActivity, interval: DateInterval, ledger: UsageLedger,
        now: Date, calendar: ZonedCalendar
    ) -> TimeInterval {
        Self.usage(of: event, activity: activity, interval: interval, ledger: ledger, now: now, calendar: calendar)
    }
}
