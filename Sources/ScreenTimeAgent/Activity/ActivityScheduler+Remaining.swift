import FoundationEssentials
import ScreenTimeCore

extension ActivityScheduler {
    /// A monitor's activity as it counts: the agent's own limits leave out the user's free
    /// periods (the free-time monitors among `entries`).
    static func counted(_ monitor: Monitor, among entries: [Entry]) -> MonitoredActivity {
        var activity = monitor.activity
        guard monitor.builtIn?.countsFreeTimeOut == true else { return activity }
        let periods = entries.compactMap { entry -> FreePeriod? in
            guard entry.monitor.uid == monitor.uid, case .free = entry.monitor.builtIn else { return nil }
            return FreePeriod(schedule: entry.monitor.activity.schedule, weekdays: entry.monitor.activity.weekdays)
        }
        if !periods.isEmpty { activity.freePeriods = periods }
        return activity
    }

    /// `counted(_:among:)` with the user's monitors now.
    func counted(_ monitor: Monitor) -> MonitoredActivity {
        Self.counted(monitor, among: entries(uid: monitor.uid))
    }

    /// What a user still has at `now` of the built-in limits that count `counts` (an event of
    /// a limit, or of the whole screen time), the tightest of them: time left in their interval
    /// in progress, 0 for one reached. Nil when no such limit is in progress.
    func remaining(uid: UInt32, at now: Date, _ counts: (Monitor.BuiltIn, DeviceActivityEvent) -> Bool) -> TimeInterval?
    {
        var tightest: TimeInterval?
        let calendar = Self.systemCalendar()
        let all = entries(uid: uid)
        for entry in all {
            guard let builtIn = entry.monitor.builtIn else { continue }
            let activity = Self.counted(entry.monitor, among: all)
            guard let interval = activity.currentOrNextInterval(at: now, calendar: calendar),
                interval.start <= now, now < interval.end
            else { continue }
            for (name, event) in activity.events where counts(builtIn, event) {
                guard let threshold = event.threshold(forIntervalStartingAt: interval.start, calendar: calendar)
                else { continue }
                var left: TimeInterval = 0
                if !entry.progress.thresholds.hasReached(name, intervalStart: interval.start) {
                    let ledger = usage?.ledger(uid: uid, during: interval) ?? UsageLedger()
                    let used = ThresholdTracker.usage(
                        of: event, activity: activity, interval: interval, ledger: ledger, now: now, calendar: calendar)
                    left = max(0, threshold - used)
                }
                tightest = min(tightest ?? left, left)
            }
        }
        return tightest
    }
}
