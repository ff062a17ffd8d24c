import CLinuxShim
import Glibc

/// The cgroup file system's `favordynmods` option: moves of processes between groups (a write to
/// `cgroup.procs`) stop waiting for an RCU grace period, at a small cost to every fork and exit.
///
/// Every move takes one lock shared by all hierarchies (the threadgroup rwsem), whose writer, the
/// first after a while, waits for a grace period unless a hierarchy favours moves. That wait is
/// the exec gate's: a shielded program is moved into the frozen group while its exec waits, and a
/// child who starts an app now and then meets the lock's slow first writer each time (on a kernel
/// 6.18 machine with lazy RCU at 250 Hz, one exec every 50 ms: held p50 14.2 ms, p99 26.7 ms; with
/// the option, 0.42 and 0.65 ms; `Benchmarks/process-shield.sh`). The option lasts until the
/// file system is mounted again (a reboot), and needs CAP_SYS_ADMIN and kernel 6.0.
public enum CgroupMoves {
    public static let option = "favordynmods"

    /// The file system options of the cgroup file system mounted at `mountPoint` (the last mount
    /// there), without `rw`/`ro`, which are the mount's: nil when no cgroup file system is there.
    public static func options(at mountPoint: String, in table: MountTable = .read()) -> [String]? {
        guard let mount = table.mounts.last(where: { $0.mountPoint == mountPoint }),
            mount.filesystem == "cgroup2" || mount.filesystem == "cgroup"
        else { return nil }
        return mount.superOptions.filter { $0 != "rw" && $0 != "ro" }
    }

    /// The options with `favordynmods` on or off, the others as they were (a reconfiguration sets
    /// every option anew: those not named are cleared, `nsdelegate` among them).
    public static func options(_ current: [String], favoring: Bool) -> [String] {
        let others = current.filter { $0 != option }
        return favoring ? others + [option] : others
    }

    /// Turns the option on (or off) for the cgroup file system mounted at `mountPoint`, its other
    /// options kept. Returns whether it changed anything (false: it was so already).
    @discardableResult
    public static func favor(_ favoring: Bool, at mountPoint: String) throws(SystemError) -> Bool {
        guard let current = options(at: mountPoint) else {
            throw SystemError(.systemCall, "no cgroup file system is mounted at \(mountPoint)")
        }
        guard current.contains(option) != favoring else { return false }
        try reconfigure(mountPoint, options: options(current, favoring: favoring))
        return true
    }

    /// Sets exactly these options (each `key` or `key=value`) on the file system at `mountPoint`.
    static func reconfigure(_ mountPoint: String, options: [String]) throws(SystemError) {
        let fd = try systemCall("fspick(\(mountPoint))") { screentime_fspick(mountPoint) }
        defer { close(fd) }
        for option in options {
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            _ = try systemCall("fsconfig(\(mountPoint), \(option))") {
                parts.count == 2
                    ? screentime_fsconfig_set(fd, parts[0], parts[1]) : screentime_fsconfig_set(fd, option, nil)
            }
        }
        _ = try systemCall("fsconfig(\(mountPoint), reconfigure)") { screentime_fsconfig_reconfigure(fd) }
    }
}
