public import Foundation
import ScreenTimeClient
public import ScreenTimeCore
import ScreenTimeIPC

/// The callbacks of a monitor extension (Apple's `DeviceActivityMonitor`): subclass it, override
/// what you need, and run the subclass with `DeviceActivityMonitorExtension.main(_:)`. Inside, a
/// `ManagedSettingsStore` acts for the monitor's user and client, with no password.
open class DeviceActivityMonitor {
    public init() {}

    /// The callback being run (its user, client and interval): Linux's addition, set before the
    /// callback method is called.
    public internal(set) var callback: DeviceActivityMonitorExtension.Callback?

    /// An interval of the activity began (or was in progress when monitoring started).
    open func intervalDidStart(for activity: DeviceActivityName) {}
    /// An interval of the activity ended.
    open func intervalDidEnd(for activity: DeviceActivityName) {}
    /// The event's usage reached its threshold in this interval.
    open func eventDidReachThreshold(_ event: DeviceActivityEvent.Name, activity: DeviceActivityName) {}
    /// An interval begins within the schedule's `warningTime`.
    open func intervalWillStartWarning(for activity: DeviceActivityName) {}
    /// An interval ends within the schedule's `warningTime`.
    open func intervalWillEndWarning(for activity: DeviceActivityName) {}
    /// The event's usage is within `warningTime` of its threshold.
    open func eventWillReachThresholdWarning(_ event: DeviceActivityEvent.Name, activity: DeviceActivityName) {}
}

/// The entry point of a monitor extension: `DeviceActivityMonitorExtension.main(MyMonitor())` in
/// its `main.swift`. It reads the callback the agent sends on standard input, calls it, and exits
/// (within the agent's 10 s). What it prints for the log: `log(_:)`.
public enum DeviceActivityMonitorExtension {
    /// The callback as the agent sends it.
    public struct Callback: Decodable, Sendable {
        public var event: String
        public var activity: String
        public var eventName: String?
        public var user: String
        public var uid: UInt32
        public var client: String
        public var intervalStart: Date
        public var intervalEnd: Date
    }

    public static func main(_ monitor: DeviceActivityMonitor) -> Never {
        let input = FileHandle.standardInput.readDataToEndOfFile()
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let callback = try? decoder.decode(Callback.self, from: input) else {
            FileHandle.standardError.write(
                Data("DeviceActivityMonitorExtension: the agent's input could not be read\n".utf8))
            exit(65)
        }
        let activity = DeviceActivityName(callback.activity)
        let event = callback.eventName.map { DeviceActivityEvent.Name($0) }
        monitor.callback = callback
        switch callback.event {
        case "intervalDidStart": monitor.intervalDidStart(for: activity)
        case "intervalDidEnd": monitor.intervalDidEnd(for: activity)
        case "intervalWillStartWarning": monitor.intervalWillStartWarning(for: activity)
        case "intervalWillEndWarning": monitor.intervalWillEndWarning(for: activity)
        case "eventDidReachThreshold": if let event { monitor.eventDidReachThreshold(event, activity: activity) }
        case "eventWillReachThresholdWarning":
            if let event { monitor.eventWillReachThresholdWarning(event, activity: activity) }
        default:
            log("unknown callback \(callback.event)")
        }
        exit(0)
    }

    /// A line for the agent's log (what an extension prints goes there, as JSON lines).
    public static func log(_ message: String) {
        guard let data = try? JSONEncoder().encode(["log": message]) else { return }
        FileHandle.standardOutput.write(data + Data([10]))
    }
}

extension DeviceActivityMonitorExtension {
    /// A small notice in the user's sessions, closing by itself (a warning that time is nearly
    /// up); false when too many were shown lately or it could not be asked for.
    @discardableResult
    public static func notice(title: String, text: String, user: String? = nil) -> Bool {
        (try? ScreenTimeClient().send(NoticeRequest(user: user, title: title, text: text)))?.shown ?? false
    }
}
