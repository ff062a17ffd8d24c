public import FoundationEssentials

/// The callbacks of a monitor extension (Apple's `DeviceActivityMonitor`).
public enum MonitorCallback: String, Hashable, Sendable, Codable, CaseIterable {
    case intervalDidStart
    case intervalDidEnd
    case intervalWillStartWarning
    case intervalWillEndWarning
    case eventDidReachThreshold
    case eventWillReachThresholdWarning
}

/// One callback owed for an activity: which, for which interval, and for which event.
public struct ActivityCallback: Hashable, Sendable, Codable {
    public var callback: MonitorCallback
    public var interval: DateInterval
    public var event: DeviceActivityEvent.Name?
    /// For a warning of an activity with several (`MonitoredActivity.warnings`): which lead time.
    public var warning: TimeInterval?

    public init(
        _ callback: MonitorCallback, interval: DateInterval, event: DeviceActivityEvent.Name? = nil,
        warning: TimeInterval? = nil
    ) {
        self.callback = callback
        self.interval = interval
        self.event = event
        self.warning = warning
    }
}

/// What has been told for one monitored activity, so that each callback comes exactly once per
/// interval — across restarts of the agent (which persists this value with the callbacks it
/// owes, in one transaction), a wall clock set forward or back, and time spent asleep or down.
///
/// The rules, as Apple's: an interval gets `intervalDidStart` once it is in progress (also when
/// monitoring starts inside it, or the agent comes back inside it) and `intervalDidEnd` once it is
/// over (also when it ended while the agent was down); a whole interval missed while down gets
/// neither. A warning is given while it is still ahead of its moment (a warning whose moment passed
/// while down, with the boundary still ahead, is given at once). Nothing is told twice for an
/// interval, and nothing for an interval earlier than one already told (the clock set back).
public struct ActivityProgress: Hashable, Sendable, Codable {
    /// The latest interval whose `intervalDidStart` was given.
    public private(set) var started: DateInterval?
    /// The start of the latest interval whose `intervalDidEnd` was given.
    public private(set) var endedStart: Date?
    /// The start of the interval whose start warning was given.
    public private(set) var startWarned: Date?
    /// Of several warnings, the shortest lead time given for `startWarned`.
    public private(set) var startWarnedMark: TimeInterval?
    /// The start of the interval whose end warning was given.
    public private(set) var endWarned: Date?
    public private(set) var thresholds = ThresholdTracker()

    public init() {}

    /// The callbacks due at `now`, in the order to run them, with this progress moved past them.
    /// `ledger` holds the user's foreground time (at least within the current interval); nil when
    /// the activity has no events.
    public mutating func advance(
        _ activity: MonitoredActivity, now: Date, calendar: ZonedCalendar, ledger: UsageLedger?
    ) -> [ActivityCallback] {
        var due: [ActivityCallback] = []
        let candidate = activity.currentOrNextInterval(at: now, calendar: calendar)
        let ongoing = candidate.flatMap { $0.start <= now && now < $0.end ? $0 : nil }
        // The interval told as started is over, or another one began before it ended.
        if let started, endedStart != started.start,
            now >= started.end || (ongoing.map { $0.start > started.start } ?? false)
        {
            due.append(ActivityCallback(.intervalDidEnd, interval: started))
            endedStart = started.start
        }
        if let ongoing, started.map({ ongoing.start > $0.start }) ?? true {
            due.append(ActivityCallback(.intervalDidStart, interval: ongoing))
            started = ongoing
        }
        let warning = activity.schedule.warningDuration
        if let ongoing, started?.start == ongoing.start {
            if warning > 0, endWarned != ongoing.start, now >= ongoing.end.addingTimeInterval(-warning) {
                due.append(ActivityCallback(.intervalWillEndWarning, interval: ongoing))
                endWarned = ongoing.start
            }
            if let ledger, !activity.events.isEmpty {
                for notice in thresholds.evaluate(
                    activity, interval: ongoing, ledger: ledger, now: now, calendar: calendar)
                {
                    switch notice {
                    case .eventWillReachThresholdWarning(let name):
                        due.append(ActivityCallback(.eventWillReachThresholdWarning, interval: ongoing, event: name))
                    case .eventWillReachThresholdWarningAt(let name, let mark):
                        due.append(
                            ActivityCallback(
                                .eventWillReachThresholdWarning, interval: ongoing, event: name, warning: mark))
                    case .eventDidReachThreshold(let name):
                        due.append(ActivityCallback(.eventDidReachThreshold, interval: ongoing, event: name))
                    }
                }
            }
        }
        let marks = activity.warningMarks
        if !marks.isEmpty, let upcoming = upcoming(activity, after: now, candidate: candidate, calendar: calendar),
            started.map({ upcoming.start > $0.start }) ?? true,
            let mark = marks.filter({ now >= upcoming.start.addingTimeInterval(-$0) }).min(),
            mark < givenStartMark(for: upcoming, activity)
        {
            due.append(
                ActivityCallback(
                    .intervalWillStartWarning, interval: upcoming, warning: activity.warnings == nil ? nil : mark))
            startWarned = upcoming.start
            startWarnedMark = mark
        }
        return due
    }

    /// The next moment something may come due after `advance(…, now:)`: a boundary, a warning's
    /// moment, or the earliest a threshold could be reached if matching usage went on without a
    /// break. Nil when nothing more can happen (a schedule that does not repeat, over). `inUse`
    /// says whether anything of the user's is in front now: when nothing is, no threshold can come
    /// before usage starts again (whoever counts usage wakes the scheduler then).
    public func nextWake(
        _ activity: MonitoredActivity, now: Date, calendar: ZonedCalendar, ledger: UsageLedger?, inUse: Bool = true
    ) -> Date? {
        var moments: [Date] = []
        if let started, endedStart != started.start { moments.append(started.end) }
        let candidate = activity.currentOrNextInterval(at: now, calendar: calendar)
        let warning = activity.schedule.warningDuration
        if let candidate {
            if candidate.start > now {
                moments.append(candidate.start)
            } else {
                moments.append(candidate.end)
                let told = started?.start == candidate.start
                if told, warning > 0, endWarned != candidate.start {
                    moments.append(candidate.end.addingTimeInterval(-warning))
                }
                if inUse, let ledger, told,
                    let check = thresholds.nextCheck(
                        activity, interval: candidate, ledger: ledger, now: now, calendar: calendar)
                {
                    moments.append(check)
                }
            }
        }
        if let upcoming = upcoming(activity, after: now, candidate: candidate, calendar: calendar),
            started.map({ upcoming.start > $0.start }) ?? true
        {
            let given = givenStartMark(for: upcoming, activity)
            for mark in activity.warningMarks where mark < given {
                moments.append(upcoming.start.addingTimeInterval(-mark))
            }
        }
        // What is due already was told by `advance`; a moment not after `now` is a threshold
        // check of usage that did not grow (the next second is soon enough).
        return moments.map { $0 > now ? $0 : now.addingTimeInterval(1) }.min()
    }

    /// The shortest lead time already warned of for `upcoming`'s start (infinity: none yet). A
    /// progress kept before there were several warnings told its one.
    private func givenStartMark(for upcoming: DateInterval, _ activity: MonitoredActivity) -> TimeInterval {
        guard startWarned == upcoming.start else { return .infinity }
        return startWarnedMark ?? activity.schedule.warningDuration
    }

    /// The next interval that starts after `now`.
    private func upcoming(
        _ activity: MonitoredActivity, after now: Date, candidate: DateInterval?, calendar: ZonedCalendar
    ) -> DateInterval? {
        guard let candidate else { return nil }
        if candidate.start > now { return candidate }
        return activity.interval(startingAfter: candidate.start, calendar: calendar)
    }
}
