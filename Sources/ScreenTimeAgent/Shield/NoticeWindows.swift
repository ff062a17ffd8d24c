import LinuxSupport
import Synchronization

/// The windows the agent started that close by themselves: a shielded site's notice, a limit's
/// warning, a guardian's answer. A notice takes the focus where the window manager gives it, and
/// the usage tracker counts the time in front of one to what was in front before it: a child who
/// raises notices on purpose (by looking up shielded names) keeps no app's time off its limit.
///
/// Known by process and start time (a pid taken since by another process is not a notice), from
/// their start until their end; a user has at most `ShieldPresenter.windowsPerUser` windows open.
final class NoticeWindows: Sendable {
    private let open = Mutex<[Int32: UInt64]>([:])
    private let inspector = ProcessInspector()

    init() {}

    /// A notice was started as the process `pid`.
    func started(_ pid: Int32) {
        guard let startTime = inspector.startTime(pid: pid) else { return }
        open.withLock { $0[pid] = startTime }
    }

    /// The process `pid` ended (whether a notice or not).
    func ended(_ pid: Int32) {
        open.withLock { _ = $0.removeValue(forKey: pid) }
    }

    /// Whether the process `pid` is a notice the agent started and still open.
    func contains(_ pid: Int32) -> Bool {
        guard let startTime = open.withLock({ $0[pid] }) else { return false }
        return inspector.startTime(pid: pid) == startTime
    }
}
