import FoundationEssentials
import Glibc

/// The machine's wall clock, read by glibc (`TZ`, then `/etc/localtime`), as the agent reads it
/// with Foundation.
///
/// The dashboard links FoundationEssentials alone, not Foundation: that leaves out ICU and its
/// libraries (10 MB of its resident memory), and with them every time zone but GMT — so its days,
/// hours and the zone it names in a report come from here.
enum LocalTime {
    /// The start of the local day `days` days after the one `date` falls in (a day is 23 or 25
    /// hours across a change of summer time: mktime works it out).
    static func startOfDay(_ date: Date, addingDays days: Int = 0) -> Date {
        var fields = parts(date)
        fields.tm_hour = 0
        fields.tm_min = 0
        fields.tm_sec = 0
        fields.tm_mday += Int32(days)
        fields.tm_isdst = -1
        let seconds = mktime(&fields)
        return seconds == -1 ? date : Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `date` in local time, written by `strftime` in the C locale (English day and month names,
    /// as the pages' other words are): `"%a %H:%M"` gives "Mon 14:05".
    static func format(_ date: Date, _ pattern: String) -> String {
        var fields = parts(date)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, pattern, &fields)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The local zone's name, as the agent's `TimeZone(identifier:)` takes it: `TZ` when set, else
    /// where `/etc/localtime` points in the zone database, else `/etc/timezone`, else UTC.
    static func zoneIdentifier(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if var zone = environment["TZ"], !zone.isEmpty {
            if zone.hasPrefix(":") { zone.removeFirst() }
            return zoneName(fromPath: zone) ?? zone
        }
        var target = [CChar](repeating: 0, count: 512)
        let length = readlink("/etc/localtime", &target, target.count - 1)
        if length > 0,
            let name = zoneName(
                fromPath: String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        {
            return name
        }
        if let data = FileManager.default.contents(atPath: "/etc/timezone") {
            let name = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).first
            if let name, !name.isEmpty { return String(name) }
        }
        return "UTC"
    }

    /// "Europe/Paris" from "/usr/share/zoneinfo/Europe/Paris" (or "../usr/share/zoneinfo/…").
    static func zoneName(fromPath path: String) -> String? {
        guard let range = path.firstRange(of: "zoneinfo/") else { return nil }
        let name = path[range.upperBound...]
        return name.isEmpty ? nil : String(name)
    }

    private static func parts(_ date: Date) -> tm {
        // glibc reads the zone once unless asked again: tzset() follows a change of /etc/localtime
        // (a stat when nothing changed), so days and hours agree with `zoneIdentifier()`.
        tzset()
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var fields = tm()
        localtime_r(&seconds, &fields)
        return fields
    }
}
