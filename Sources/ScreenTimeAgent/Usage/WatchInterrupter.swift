import LinuxSupport

/// A session's watch as whoever must stop it holds it: the watch is used by its own thread alone;
/// others only interrupt it (each watch's `interrupt()` may be called from any thread).
final class WatchInterrupter: @unchecked Sendable {
    private let interruptWatch: () -> Void

    init(_ watch: SwayFocusWatch) { interruptWatch = watch.interrupt }
    init(_ watch: WaylandIdleWatch) { interruptWatch = watch.interrupt }
    init(_ watch: X11FocusWatch) { interruptWatch = watch.interrupt }

    func interrupt() { interruptWatch() }
}
