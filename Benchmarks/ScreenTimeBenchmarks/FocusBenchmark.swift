// `ScreenTimeBenchmarks focus DISPLAY WINDOW WINDOW` (run by Benchmarks/focus.sh): how soon a
// focus change reaches the agent's X11 watch (events: `_NET_ACTIVE_WINDOW` PropertyNotify)
// beside ActivityWatch's way (aw-watcher-window reads the active window once a second), both
// watching the same display in the same run; and what each costs its thread in wakeups and CPU
// with the session idle for a minute, with a focus change every 100 ms, and with the pointer moving.
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

/// Whether a thread of the process is one of libdispatch's (named after its queue).
private func isDispatchThread(_ tid: Int32) -> Bool {
    let name = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
    return name.contains("qos") || name.contains("dispatch")
}

/// The process's threads now.
private func threadIDs() -> Set<Int32> {
    Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) })
}

private final class Observations: Sendable {
    /// Each window seen active, with when.
    let seen = Mutex<[(window: UInt32, at: ContinuousClock.Instant)]>([])
    let tid = Atomic<Int32>(0)
    /// The threads its X connection started (the relay that frames the server's bytes).
    let connectionThreads = Mutex<Set<Int32>>([])
    let connected = Atomic<Bool>(false)

    /// Connects, noting the threads that connecting started (one watch connects at a time).
    func connect(_ display: X11Display) -> X11FocusWatch? {
        tid.store(threadID(), ordering: .releasing)
        let before = threadIDs()
        let watch = try? X11FocusWatch(display: display, cookie: nil, idleTimeout: .seconds(3600))
        // Not libdispatch's threads (named after their queues): a first timer starts them.
        let started = threadIDs().subtracting(before).subtracting([threadID()]).filter { !isDispatchThread($0) }
        connectionThreads.withLock { $0 = started }
        connected.store(true, ordering: .releasing)
        return watch
    }

    /// Wakeups and CPU of its thread and its connection's.
    func cost() -> (wakeups: Int, cpu: Double) {
        let own = threadCost(tid.load(ordering: .acquiring))
        return connectionThreads.withLock { $0 }.map(threadCost).reduce(own) { ($0.0 + $1.0, $0.1 + $1.1) }
    }

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
        guard let watch = events.connect(display) else { return }
        try? watch.run(stop: stop) { change in
            if case .front(let found, _) = change, let window = found.first?.id {
                events.seen.withLock { $0.append((window, .now)) }
            }
        }
    }
    // ActivityWatch's way: read the active window every second.
    let pollThread = Thread {
        guard let watch = polls.connect(display) else { return }
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
    while !events.connected.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.01) }
    pollThread.start()
    while !polls.connected.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.01) }
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

    // libdispatch's threads: the agent watch's watchdog timers run there, and so does the
    // worker-pool monitor libdispatch starts on Linux in any process that used a global queue
    // (the agent's too, whatever its watches do), which wakes once a second.
    func dispatchWakeups() -> Int { threadIDs().filter(isDispatchThread).map { threadCost($0).wakeups }.reduce(0, +) }
    func measure(_ title: String, _ note: (Int) -> String, during work: () -> Void) {
        let eventBefore = events.cost()
        let pollBefore = polls.cost()
        let dispatchBefore = dispatchWakeups()
        work()
        let eventAfter = events.cost()
        let pollAfter = polls.cost()
        let timers = dispatchWakeups() - dispatchBefore
        print(title + ": wakeups and CPU seconds of the watching thread and its connection's")
        print(
            String(
                format: "  events (the agent)        %5d wakeups  %.3f s%@", eventAfter.wakeups - eventBefore.wakeups,
                eventAfter.cpu - eventBefore.cpu,
                note(events.seen.withLock { $0.count })))
        print(
            String(
                format: "  poll every 1 s (baseline) %5d wakeups  %.3f s%@", pollAfter.wakeups - pollBefore.wakeups,
                pollAfter.cpu - pollBefore.cpu, note(-1)))
        print(
            "  libdispatch's threads: \(timers) wakeups (the watch's stall timers, and its once-a-second pool monitor)")
    }
    measure("session idle for 60 s", { _ in "" }) { Thread.sleep(forTimeInterval: 60) }
    measure(
        "a focus change every 100 ms for 10 s",
        { $0 < 0 ? "  (sees at most one change a second)" : "  (\($0) changes seen in all)" }
    ) {
        for round in 0..<100 {
            switcher.requestActivation(windows[round % 2])
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
    // A mouse moved all along: the watch hears the first move of each second only.
    measure("the pointer moving every 10 ms for 10 s (XTest relative motion: raw events, as a mouse's)", { _ in "" }) {
        var arguments: [String] = []
        for step in 0..<1000 {
            arguments += ["mousemove_relative", "--", step % 2 == 0 ? "3" : "-3", "0", "sleep", "0.01"]
        }
        // posix_spawn and waitpid, not Foundation's Process: its wait for the child wakes
        // libdispatch's threads about 85 times a second, which this column would take for the watch's.
        var mover: pid_t = 0
        var argv: [UnsafeMutablePointer<CChar>?] = (["/usr/bin/xdotool"] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let spawned = posix_spawn(&mover, "/usr/bin/xdotool", nil, nil, &argv, environ)
        if spawned == 0 {
            var status: Int32 = 0
            while waitpid(mover, &status, 0) < 0 && errno == EINTR {}
        } else {
            print("  (xdotool did not run: \(String(cString: strerror(spawned))))")
        }
    }
    stop.raise()
}
