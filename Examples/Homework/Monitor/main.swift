// The Homework app's monitor extension: the agent runs it at each interval of the homework
// schedule, as the extension account, without network. It shields what the guardian picked when
// homework time starts and lifts it when it ends — with the app's authority over that child only.
import DeviceActivity
import FamilyControls
import Foundation
import ManagedSettings

final class HomeworkMonitor: DeviceActivityMonitor {
    let store = ManagedSettingsStore(named: .init("homework"))

    override func intervalDidStart(for activity: DeviceActivityName) {
        let library = ProcessInfo.processInfo.environment["HOMEWORK_LIBRARY"] ?? "/var/lib/homework"
        let user = callback?.user ?? ""
        guard let data = FileManager.default.contents(atPath: "\(library)/\(user).json"),
            let selection = try? JSONDecoder().decode(FamilyActivitySelection.self, from: data)
        else {
            DeviceActivityMonitorExtension.log("no selection for \(user)")
            return
        }
        store.shield.applications = selection.applicationTokens
        store.shield.applicationCategories = .specific(selection.categoryTokens)
        store.shield.webDomains = selection.webDomainTokens
        DeviceActivityMonitorExtension.log("homework started: shielded")
    }

    override func intervalDidEnd(for activity: DeviceActivityName) {
        store.clearAllSettings()
        DeviceActivityMonitorExtension.log("homework ended: lifted")
    }

    override func intervalWillEndWarning(for activity: DeviceActivityName) {
        DeviceActivityMonitorExtension.notice(title: "Homework time ends in 5 minutes", text: "Almost done!")
    }
}

DeviceActivityMonitorExtension.main(HomeworkMonitor())
