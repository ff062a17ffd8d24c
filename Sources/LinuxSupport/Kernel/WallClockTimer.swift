import CLinuxShim
public import FoundationEssentials
import Glibc

/// Sleeps until a moment on the wall clock, and notices when the wall clock or the time zone
/// changes meanwhile — what a schedule of wall-clock boundaries needs, without polling.
///
/// The timer is a `timerfd` on `CLOCK_REALTIME`, armed at an absolute time with
/// `TFD_TIMER_CANCEL_ON_SET`: the kernel ends the wait when anyone sets the clock (a jump either
/// way), and a moment passed during a suspend is due at resume. The time zone is the system's
/// (`/etc/localtime`, `/etc/timezone`), watched with inotify on `/etc`.
public final class WallClockTimer: @unchecked Sendable {
    public enum Wake: Sendable, Equatable {
        /// The moment came.
        case due
        /// Someone set the wall clock.
        case clockChanged
        /// The system's time zone changed.
        case zoneChanged
        /// `wake()` was called (or a stop signal raised).
        case woken
    }

    private let timer: Int32
    private let zone: Int32
    /// Only its descriptor is used (drained at each wake), not its raised flag.
    private let wakeup: StopSignal
    private static let zoneFiles: Set<String> = ["localtime", "timezone"]

    /// - Parameter zoneDirectory: where the time-zone files are watched (`/etc`).
    public init(zoneDirectory: String = "/etc") throws(SystemError) {
        wakeup = try StopSignal()
        timer = timerfd_create(CLOCK_REALTIME, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        guard timer >= 0 else { throw SystemError.call("timerfd_create(CLOCK_REALTIME)", errno) }
        zone = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard zone >= 0 else {
            let error = errno
            close(timer)
            throw SystemError.call("inotify_init1", error)
        }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB)
        if inotify_add_watch(zone, zoneDirectory, mask) < 0 {
            let error = errno
            close(timer)
            close(zone)
            throw SystemError.call("inotify_add_watch(\(zoneDirectory))", error)
        }
    }

    deinit {
        close(timer)
        close(zone)
    }

    /// Makes a `wait` in progress (or the next one) return `.woken`.
    public func wake() { wakeup.raise() }

    /// Waits until `deadline` (nil: until something else happens), or until the clock is set, the
    /// time zone changes, `wake()` is called or `stop` is raised.
    public func wait(until deadline: Date?, unless stop: StopSignal? = nil) throws(SystemError) -> Wake {
        // Without a deadline the timer is still armed, far ahead, so that setting the clock is seen.
        let target = deadline ?? Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01
        let seconds = max(1, target.timeIntervalSince1970)
        var arm = itimerspec()
        arm.it_value.tv_sec = Int(seconds.rounded(.down))
        arm.it_value.tv_nsec = Int((seconds - seconds.rounded(.down)) * 1e9)
        try systemCall("timerfd_settime") {
            timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET), &arm, nil)
        }
        var fds = [
            pollfd(fd: timer, events: Int16(POLLIN), revents: 0),
            pollfd(fd: zone, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop?.fd ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        try systemCall("poll(timer)") { poll(&fds, nfds_t(fds.count), -1) }
        if fds[3].revents != 0 { return .woken }
        if fds[2].revents != 0 {
            drain(wakeup.fd)
            return .woken
        }
        if fds[1].revents != 0, zoneChanged() { return .zoneChanged }
        if fds[0].revents != 0 {
            var expirations: UInt64 = 0
            let got = read(timer, &expirations, 8)
            if got < 0, errno == ECANCELED { return .clockChanged }
            return .due
        }
        // Only an unrelated file in the directory changed.
        return .woken
    }

    /// Whether the inotify events read name a time-zone file.
    private func zoneChanged() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var relevant = false
        while true {
            let length = buffer.withUnsafeMutableBytes { read(zone, $0.baseAddress, $0.count) }
            if length <= 0 { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= length {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                let nameLength = Int(event.len)
                if nameLength > 0, offset + header + nameLength <= length {
                    let name = String(
                        decoding: buffer[(offset + header)..<(offset + header + nameLength)].prefix { $0 != 0 },
                        as: UTF8.self)
                    if Self.zoneFiles.contains(name) { relevant = true }
                }
                offset += header + nameLength
            }
        }
        return relevant
    }

    private func drain(_ fd: Int32) {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}
