// `ScreenTimeBenchmarks focus DISPLAY WINDOW WINDOW` (run by Benchmarks/focus.sh): how soon a
// focus change reaches the agent's X11 watch (events: `_NET_ACTIVE_WINDOW` PropertyNotify)
// beside ActivityWatch's way (aw-watcher-window reads the active window once a second), both
// watching the same display in the same run; and what each costs its thread in wakeups and CPU
// with the session idle for a minute and with a focus change every 100 ms.
import Foundation
import Glibc
import LinuxSupport
import Synchronization

/// Voluntary context switches (wakeups after sleeping) and CPU seconds of one thread so far.
private func threadCost(_ tid: Int32) -> (wakeups: Int, cpu: Double) {
    let status = (try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)) ?? ""
    let wakeups =
        status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
        .flatMap { Int($0.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
    let stat = (try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8)) ?? ""
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    let ticks = fields.count > 12 ? (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0) : 0
    return (wakeups, ticks / Double(sysconf(Int32(_SC_CLK_TCK))))
}

/// The calling thread's id (`/proc/thread-self` is `PID/task/TID`).
private func threadID() -> Int32 {
    let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return Int32(link.split(separator: "/").last ?? "") ?? 0
}

private final class Observations: Sendable {
    /// Each window seen active, with when.
    let seen = Mutex<[(window: UInt32, at: ContinuousClock.Instant)]>([])
    let tid = Atomic<Int32>(0)

    func first(_ window: UInt32, after start: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        seen.withLock { $0.first { $0.window == window && $0.at >= start }?.at }
    }
}

private func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction + 0.5))]
}

func focusBenchmark(display name: String, windows: [UInt32]) throws {
    guard let display = X11Display(name), windows.count == 2 else {
        print("focus benchmark: usage: focus DISPLAY WINDOW WINDOW")
        return
    }
    let stop = try StopSignal()
    let events = Observations()
    let polls = Observations()
    // The agent's way: its own watch on a thread of its own, reporting changes as they come.
    let eventThread = Thread {
        events.tid.store(threadID(), ordering: .releasing)
        guard let watch = try? X11FocusWatch(display: display, cookie: nil, idleTimeout: .seconds(3600)) else { return }
        try? watch.run(stop: stop) { change in
            if case .front(let found, _) = change, let window = found.first?.id {
                events.seen.withLock { $0.append((window, .now)) }
            }
        }
    }
    // ActivityWatch's way: read the active window every second.
    let pollThread = Thread {
        polls.tid.store(threadID(), ordering: .releasing)
        guard let watch = try? X11FocusWatch(display: display, cookie: nil, idleTimeout: .seconds(3600)) else { return }
        var last: UInt32 = 0
        while !stop.wait(for: .seconds(1)) {
            let window = watch.activeWindow()
            if window != last {
                last = window
                polls.seen.withLock { $0.append((window, .now)) }
            }
        }
    }
    eventThread.start()
    pollThread.start()
    let switcher = try X11FocusWatch(display: display, cookie: nil, idleTimeout: .seconds(3600))
    Thread.sleep(forTimeInterval: 1.5)

    // Latency: 30 switches, 1.2 to 2.2 s apart (so that the poller sees each).
    var eventLatency: [Double] = []
    var pollLatency: [Double] = []
    var pending: [(window: UInt32, at: ContinuousClock.Instant)] = []
    for round in 0..<30 {
        let target = windows[round % 2]
        let start = ContinuousClock.now
        switcher.requestActivation(target)
        pending.append((target, start))
        Thread.sleep(forTimeInterval: 1.2 + Double.random(in: 0...1))
    }
    Thread.sleep(forTimeInterval: 1.2)
    func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }
    // A request the window manager did not act on within a second (its focus-stealing rules) is
    // left out of both columns.
    var ignored = 0
    for (window, start) in pending {
        guard let seen = events.first(window, after: start), seen - start < .seconds(1) else {
            ignored += 1
            continue
        }
        eventLatency.append(milliseconds(seen - start))
        if let polled = polls.first(window, after: start) { pollLatency.append(milliseconds(polled - start)) }
    }
    print("focus change → seen by the watch (30 switches asked of openbox on Xvfb, \(ignored) not acted on; ms)")
    for (name, values) in [("events (the agent)       ", eventLatency), ("poll every 1 s (baseline)", pollLatency)] {
        print(
            "  \(name) "
                + String(
                    format: "p50 %7.2f  p90 %7.2f  max %7.2f  (%d)", percentile(values, 0.5), percentile(values, 0.9),
                    values.max() ?? .nan, values.count))
    }

    // Idle for a minute: wakeups and CPU of each thread.
    let eventTID = events.tid.load(ordering: .acquiring)
    let pollTID = polls.tid.load(ordering: .acquiring)
    var eventBefore = threadCost(eventTID)
    var pollBefore = threadCost(pollTID)
    Thread.sleep(forTimeInterval: 60)
    var eventAfter = threadCost(eventTID)
    var pollAfter = threadCost(pollTID)
    print("session idle for 60 s: wakeups, CPU seconds of the watching thread")
    print(
        String(
            format: "  events (the agent)        %5d wakeups  %.3f s", eventAfter.wakeups - eventBefore.wakeups,
            eventAfter.cpu - eventBefore.cpu))
    print(
        String(
            format: "  poll every 1 s (baseline) %5d wakeups  %.3f s", pollAfter.wakeups - pollBefore.wakeups,
            pollAfter.cpu - pollBefore.cpu))

    // A focus change every 100 ms for 10 s.
    eventBefore = threadCost(eventTID)
    pollBefore = threadCost(pollTID)
    for round in 0..<100 {
        switcher.requestActivation(windows[round % 2])
        Thread.sleep(forTimeInterval: 0.1)
    }
    eventAfter = threadCost(eventTID)
    pollAfter = threadCost(pollTID)
    let changes = events.seen.withLock { $0.count }
    print("a focus change every 100 ms for 10 s: wakeups, CPU seconds of the watching thread")
    print(
        String(
            format: "  events (the agent)        %5d wakeups  %.3f s  (%d changes seen in all)",
            eventAfter.wakeups - eventBefore.wakeups, eventAfter.cpu - eventBefore.cpu, changes))
    print(
        String(
            format: "  poll every 1 s (baseline) %5d wakeups  %.3f s  (sees at most one change a second)",
            pollAfter.wakeups - pollBefore.wakeups, pollAfter.cpu - pollBefore.cpu))
    stop.raise()
}
