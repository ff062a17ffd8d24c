import Foundation
import Glibc
import LinuxSupport
import ScreenTimeTestThreads
import Synchronization
import Testing

/// The X11 watch alone, against a scripted server that says exactly what a test needs when it
/// needs it (the fixture `fake-x-server.py`).
@Suite(.threadsOfTheirOwn) struct X11FocusWatchTests {
    /// A focus change the server tells while the watch waits for a reply is read by libxcb with
    /// that reply and kept; the socket has nothing more for `poll`. The server here tells nothing
    /// after it: the watch must still see the window now active, at once.
    @Test func aChangeToldDuringARoundTripIsSeenThoughNothingFollows() throws {
        try Files.makeDirectory("/tmp/.X11-unix", mode: 0o1777)
        var number = Int.random(in: 6000...6900)
        while Files.exists("/tmp/.X11-unix/X\(number)") { number = Int.random(in: 6000...6900) }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [AgentWorld.fixture("fake-x-server.py"), "\(number)", "late-focus"]
        try server.run()
        defer {
            // SIGKILL: the test's thread may block SIGTERM, and the server inherits its mask.
            kill(server.processIdentifier, SIGKILL)
            _ = AgentWorld.ended(server, within: 10)
            unlink("/tmp/.X11-unix/X\(number)")
        }
        // Its socket file is there from its bind, before it listens: connected to until it answers
        // (on a busy machine, tests side by side, that was refused once).
        let listening = Date().addingTimeInterval(10)
        let display = try #require(X11Display(":\(number)"))
        var connected: X11FocusWatch?
        while connected == nil {
            do {
                connected = try X11FocusWatch(display: display, cookie: nil, idleTimeout: .seconds(300))
            } catch {
                guard Date() < listening else { throw error }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        let watch = try #require(connected)
        #expect(watch.readsFocus)
        let stop = try StopSignal()
        let seen = Mutex<[[Int32?]]>([])
        let ended = Mutex<String?>(nil)
        let box = UncheckedBox(watch)
        let thread = Thread {
            do throws(SystemError) {
                try box.value.run(stop: stop) { change in
                    if case .front(let windows, _) = change { seen.withLock { $0.append(windows.map(\.pid)) } }
                }
                ended.withLock { $0 = "stopped" }
            } catch {
                ended.withLock { $0 = error.message }
            }
        }
        thread.start()
        let deadline = Date().addingTimeInterval(5)
        while seen.withLock({ $0.last }) != [2222], Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        stop.raise()
        let stopped = Date().addingTimeInterval(5)
        while ended.withLock({ $0 }) == nil, Date() < stopped { Thread.sleep(forTimeInterval: 0.02) }

        let told = seen.withLock { $0 }
        #expect(told.first == [1111], "\(told)")
        #expect(told.last == [2222], "the window made active during a round trip was never seen: \(told)")
        #expect(ended.withLock { $0 } == "stopped")
    }
}

/// Hands a value the test keeps to the thread that runs the watch (the watch is used by one
/// thread at a time: this one waits while it runs).
private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
