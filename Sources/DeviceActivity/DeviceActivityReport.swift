public import Foundation
import ScreenTimeClient
public import ScreenTimeIPC

/// A user's usage in a stretch of time, as a report extension gets it (Apple's
/// `DeviceActivityResults`): totals per application, category and web domain, and segments by
/// hour or day — names where the reader may see them, else tokens.
public typealias DeviceActivityResults = UsageReport

/// Which usage a report covers (Apple's `DeviceActivityFilter`).
public struct DeviceActivityFilter: Sendable, Hashable {
    /// How the stretch is split (Apple's `SegmentInterval`).
    public enum SegmentInterval: Sendable, Hashable {
        case hourly(during: DateInterval)
        case daily(during: DateInterval)
    }

    public var segment: SegmentInterval

    public init(segment: SegmentInterval) { self.segment = segment }

    /// Today, by hour, in the local time zone.
    public static var today: DeviceActivityFilter {
        let day = Calendar.current.dateInterval(of: .day, for: Date()) ?? DateInterval(start: Date(), duration: 86_400)
        return DeviceActivityFilter(segment: .hourly(during: day))
    }

    /// This week so far and its remaining days, by day.
    public static var thisWeek: DeviceActivityFilter {
        let week =
            Calendar.current.dateInterval(of: .weekOfYear, for: Date())
            ?? DateInterval(start: Date(), duration: 7 * 86_400)
        return DeviceActivityFilter(segment: .daily(during: week))
    }
}

/// A report rendered by a report extension (Apple's `DeviceActivityReport`, which is a view
/// there; here text or HTML): the agent gathers the usage, runs the extension with names and no
/// network, and hands back what it printed.
public struct DeviceActivityReport: Sendable {
    public let filter: DeviceActivityFilter
    public let user: String?
    public let reportExtension: String
    let client: ScreenTimeClient

    public init(filter: DeviceActivityFilter, user: String? = nil, extension path: String, socket: String? = nil) {
        self.filter = filter
        self.user = user
        reportExtension = path
        client = ScreenTimeClient(socket: socket)
    }

    /// The extension's rendering; throws what the agent refused or the extension's failure.
    public func render() throws(ScreenTimeIPCError) -> String {
        let (interval, segments): (DateInterval, ReportRequest.Segments) =
            switch filter.segment {
            case .hourly(let during): (during, .hourly)
            case .daily(let during): (during, .daily)
            }
        let request = ReportRequest(
            user: user, from: interval.start, to: interval.end, segments: segments,
            timeZone: TimeZone.current.identifier, extension: reportExtension)
        return try client.send(request).rendered ?? ""
    }

    /// The usage data itself, without an extension (for a program that renders it).
    public func results() throws(ScreenTimeIPCError) -> DeviceActivityResults {
        let (interval, segments): (DateInterval, ReportRequest.Segments) =
            switch filter.segment {
            case .hourly(let during): (during, .hourly)
            case .daily(let during): (during, .daily)
            }
        return try client.send(
            ReportRequest(
                user: user, from: interval.start, to: interval.end, segments: segments,
                timeZone: TimeZone.current.identifier))
    }
}

/// The entry point of a report extension: `DeviceActivityReportExtension.main { results in … }`
/// returns the text or HTML to print. It reads the usage on standard input.
public enum DeviceActivityReportExtension {
    public static func main(_ render: (DeviceActivityResults) -> String) -> Never {
        let input = FileHandle.standardInput.readDataToEndOfFile()
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let results = try? decoder.decode(DeviceActivityResults.self, from: input) else {
            FileHandle.standardError.write(
                Data("DeviceActivityReportExtension: the agent's input could not be read\n".utf8))
            exit(65)
        }
        FileHandle.standardOutput.write(Data(render(results).utf8))
        exit(0)
    }
}
