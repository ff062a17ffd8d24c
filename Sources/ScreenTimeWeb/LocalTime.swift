import FoundationEssentials
import ScreenTimeCore

/// The machine's wall clock, read as the agent reads it (`ScreenTimeCore`'s `ZoneInfo`: `TZ`, then
/// `/etc/localtime`, from the system's zone files), so that the dashboard's days and hours are the
/// agent's.
///
/// The dashboard links FoundationEssentials alone, not Foundation: that leaves out ICU and its
/// libraries (10 MB of its resident memory), and with them every time zone but GMT.
enum LocalTime {
    /// The start of the local day `days` days after the one `date` falls in (a day is 23 or 25
    /// hours across a change of summer time).
    static func startOfDay(_ date: Date, addingDays days: Int = 0) -> Date {
        WallClock.current().startOfDay(date, adding: days)
    }

    /// `date` in local time, written by `WallClock`'s patterns in English, as the pages' other
    /// words are: `"EEE HH:mm"` gives "Mon 14:05".
    static func format(_ date: Date, _ pattern: String) -> String {
        WallClock.current().format(date, pattern)
    }

    /// The local zone's name, for the agent to find in its own zone database: `TZ` when it names a
    /// zone (or a file of the zone directory), else the machine's zone.
    static func zoneIdentifier(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let zone = ZoneInfo.current(environment: environment)
        return zone.isNamed ? zone.identifier : ZoneInfo.current(environment: [:]).identifier
    }
}
