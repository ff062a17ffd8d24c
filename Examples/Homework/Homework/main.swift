// Homework — the 2021 seed's app for a child's account, on Linux. A guardian picks apps and
// categories; during homework hours the monitor extension shields them and lifts them after; the
// shield says "Homework first"; asking for more time is answered with `.defer`.
//
//   homework setup --child alice [--app ID]… [--category Game]… [--from 16:00 --to 18:00]
//   homework status --child alice
//   homework stop --child alice
import DeviceActivity
import FamilyControls
import Foundation
import ManagedSettings
import ManagedSettingsUI

/// Where the guardian installed the extensions, and where the picked selection is kept for the
/// monitor extension (Apple's app group container): root's, readable by the extension account.
let extensions = ProcessInfo.processInfo.environment["HOMEWORK_EXTENSIONS"] ?? "/usr/local/lib/homework"
let library = ProcessInfo.processInfo.environment["HOMEWORK_LIBRARY"] ?? "/var/lib/homework"

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("homework: \(message)\n".utf8))
    exit(1)
}

func option(_ name: String, in arguments: [String]) -> [String] {
    var values: [String] = []
    var index = 0
    while index < arguments.count {
        if arguments[index] == name, index + 1 < arguments.count { values.append(arguments[index + 1]) }
        index += 1
    }
    return values
}

func time(_ text: String) -> DateComponents {
    let parts = text.split(separator: ":").compactMap { Int($0) }
    guard parts.count == 2 else { fail("a time is HH:MM, not \(text)") }
    return DateComponents(hour: parts[0], minute: parts[1])
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, let child = option("--child", in: arguments).first else {
    fail("usage: homework setup|status|stop --child USER [--app ID]… [--category C]… [--from HH:MM --to HH:MM]")
}
let activity = DeviceActivityName(rawValue: "homework")
let center = DeviceActivityCenter(user: child, monitorExtension: extensions + "/homework-monitor")

switch command {
case "setup":
    // The picker: in the terminal, or from what was given.
    let picker = FamilyActivityPicker(user: child)
    let apps = option("--app", in: arguments)
    let categories = option("--category", in: arguments)
    let selection: FamilyActivitySelection
    do {
        if apps.isEmpty && categories.isEmpty {
            guard let picked = try picker.present() else { fail("nothing picked") }
            selection = picked
        } else {
            selection = try picker.selection(applications: apps, categories: categories)
        }
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        let path = "\(library)/\(child).json"
        try JSONEncoder().encode(selection).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        // The shield's look and its buttons: this app's own extensions.
        try ShieldExtensions.register(
            user: child, configuration: extensions + "/homework-shield", action: extensions + "/homework-action")
        // Homework hours, every day.
        let schedule = DeviceActivitySchedule(
            intervalStart: time(option("--from", in: arguments).first ?? "16:00"),
            intervalEnd: time(option("--to", in: arguments).first ?? "18:00"), repeats: true,
            warningTime: DateComponents(minute: 5))
        try center.startMonitoring(activity, during: schedule)
    } catch {
        fail("\(error)")
    }
    print(
        "homework hours set for \(child): \(selection.applicationTokens.count) apps, \(selection.categoryTokens.count) categories"
    )
case "status":
    guard let schedule = center.schedule(for: activity) else {
        print("no homework hours for \(child)")
        exit(0)
    }
    let start = schedule.intervalStart
    let end = schedule.intervalEnd
    print(
        String(
            format: "homework hours for %@: %02d:%02d–%02d:%02d", child, start.hour ?? 0, start.minute ?? 0,
            end.hour ?? 0, end.minute ?? 0))
    let store = ManagedSettingsStore(named: .init("homework"), user: child)
    print("shielded now: \(store.shield.applications?.count ?? 0) apps")
case "stop":
    center.stopMonitoring([activity])
    ManagedSettingsStore(named: .init("homework"), user: child).clearAllSettings()
    try? ShieldExtensions.reset(user: child)
    print("homework hours stopped for \(child)")
default:
    fail("unknown command \(command)")
}
