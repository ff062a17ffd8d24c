// Worklog's monitor extension: a warning 5 minutes before the half hour of distractions is used,
// and at the half hour those apps and sites are shielded until the work day ends.
import DeviceActivity
import ManagedSettings

final class WorklogMonitor: DeviceActivityMonitor {
    let store = ManagedSettingsStore(named: .init("focus"))

    override func eventWillReachThresholdWarning(_ event: DeviceActivityEvent.Name, activity: DeviceActivityName) {
        DeviceActivityMonitorExtension.notice(
            title: "5 minutes of distractions left",
            text: "Worklog shields them for the rest of the work day at 30 minutes.")
    }

    override func eventDidReachThreshold(_ event: DeviceActivityEvent.Name, activity: DeviceActivityName) {
        // What the event counts is what the user picked: shield those.
        guard let watched = DeviceActivityCenter().events(for: activity)[event] else { return }
        store.shield.applications = watched.applications
        store.shield.webDomains = watched.webDomains
        if !watched.categories.isEmpty { store.shield.applicationCategories = .specific(watched.categories) }
        DeviceActivityMonitorExtension.notice(title: "Back to work", text: "Distractions are shielded until work ends.")
    }

    override func intervalDidEnd(for activity: DeviceActivityName) {
        store.clearAllSettings()
    }
}

DeviceActivityMonitorExtension.main(WorklogMonitor())
