// Worklog — the 2022 seed's app for someone who restricts themself, on Linux. The user authorizes
// themself (no guardian), picks distracting apps and sites; during work hours a monitor watches
// them: 5 minutes before 30 minutes are used a warning shows, at 30 minutes they are shielded for
// the rest of the day's work hours; a report extension renders the week.
//
//   worklog setup [--app ID]… [--domain D]… [--from 09:00 --to 17:00] [--after 30]
//   worklog report
//   worklog stop
import DeviceActivity
import FamilyControls
import Foundation
import ManagedSettings

let extensions = ProcessInfo.processInfo.environment["WORKLOG_EXTENSIONS"] ?? "/usr/local/lib/worklog"

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("worklog: \(message)\n".utf8))
    exit(1)
}

func option(_ name: String, in arguments: [String]) -> [String] {
    zip(arguments, arguments.dropFirst()).filter { $0.0 == name }.map(\.1)
}

func time(_ text: String) -> DateComponents {
    let parts = text.split(separator: ":").compactMap { Int($0) }
    guard parts.count == 2 else { fail("a time is HH:MM, not \(text)") }
    return DateComponents(hour: parts[0], minute: parts[1])
}

let arguments = Array(CommandLine.arguments.dropFirst())
let activity = DeviceActivityName(rawValue: "workday")
let center = DeviceActivityCenter(monitorExtension: extensions + "/worklog-monitor")

switch arguments.first {
case "setup":
    do {
        try await AuthorizationCenter.shared.requestAuthorization(for: .individual)
        let picker = FamilyActivityPicker()
        let apps = option("--app", in: arguments)
        let domains = option("--domain", in: arguments)
        let selection: FamilyActivitySelection
        if apps.isEmpty && domains.isEmpty {
            guard let picked = try picker.present() else { fail("nothing picked") }
            selection = picked
        } else {
            selection = try picker.selection(applications: apps, domains: domains)
        }
        let distracted = DeviceActivityEvent(
            applications: selection.applicationTokens, categories: selection.categoryTokens,
            webDomains: selection.webDomainTokens,
            threshold: DateComponents(minute: Int(option("--after", in: arguments).first ?? "30") ?? 30))
        let schedule = DeviceActivitySchedule(
            intervalStart: time(option("--from", in: arguments).first ?? "09:00"),
            intervalEnd: time(option("--to", in: arguments).first ?? "17:00"), repeats: true,
            warningTime: DateComponents(minute: 5))
        try center.startMonitoring(activity, during: schedule, events: [.init(rawValue: "distracted"): distracted])
        print("worklog is on: \(AuthorizationCenter.shared.authorizationStatus)")
    } catch {
        fail("\(error)")
    }
case "report":
    do {
        print(try DeviceActivityReport(filter: .thisWeek, extension: extensions + "/worklog-report").render())
    } catch {
        fail("\(error)")
    }
case "stop":
    center.stopMonitoring([activity])
    ManagedSettingsStore(named: .init("focus")).clearAllSettings()
    print("worklog is off")
default:
    fail("usage: worklog setup|report|stop")
}
