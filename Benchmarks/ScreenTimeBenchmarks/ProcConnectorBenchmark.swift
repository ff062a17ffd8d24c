// `ScreenTimeBenchmarks proc-connector FORK_STORM` (run by Benchmarks/proc-connector.sh, as root):
// the proc connector's reader under a fork storm — the agent's (libnl-3) beside the hand-written
// one it replaced, in alternating rounds of the same run: events read per second, lost events,
// and the reader thread's CPU time per event.
import Foundation
import Glibc
import LinuxSupport
import ProcConnectorBaseline
import Synchronization

/// What one round of one reader saw.
struct ReaderRound {
    var events = 0
    var lost = 0
    var overruns = 0
    var seconds = 0.0
    var readerCPU = 0.0
    var forks = 0
}

/// A reader under test: opened, run on a thread of its own until stopped.
protocol ProcEventReader: AnyObject, Sendable {
    func read(_ handler: (ProcConnector.Event) -> Void)
    func stop()
    var counts: (events: Int, lost: Int) { get }
}

extension ProcConnector: ProcEventReader {
    func read(_ handler: (Event) -> Void) { try? run(handler) }
    var counts: (events: Int, lost: Int) { (eventsReceived, eventsLost) }
}

/// The agent's reader before libnl-3: ProcConnector.run as it was (poll, one recv per datagram,
/// parsed in C), counting events and losses as the new one does.
final class HandWrittenReader: ProcEventReader, @unchecked Sendable {
    private let fd: Int32
    /// A pipe in place of the agent's StopSignal (whose descriptor is LinuxSupport's own): the
    /// same two-descriptor poll.
    private var stopPipe: [Int32] = [-1, -1]
    private let stopped = Atomic<Bool>(false)
    private let received = Atomic<Int>(0)
    private let lostEvents = Atomic<Int>(0)

    init(receiveBuffer: Int = 4 << 20) throws {
        fd = baseline_proc_connector_open(Int32(receiveBuffer))
        guard fd >= 0 else { throw SystemError.call("proc connector (hand-written)", errno) }
        guard pipe(&stopPipe) == 0 else { throw SystemError.call("pipe", errno) }
    }

    deinit { for descriptor in [fd] + stopPipe { close(descriptor) } }

    var counts: (events: Int, lost: Int) { (received.load(ordering: .relaxed), lostEvents.load(ordering: .relaxed)) }

    func stop() {
        stopped.store(true, ordering: .releasing)
        _ = write(stopPipe[1], "x", 1)
    }

    func read(_ handler: (ProcConnector.Event) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var events = [baseline_proc_event](repeating: baseline_proc_event(), count: 64)
        var next: [UInt32] = []
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopPipe[0], events: Int16(POLLIN), revents: 0),
        ]
        while !stopped.load(ordering: .acquiring) {
            guard poll(&fds, 2, -1) >= 0 else { continue }
            if fds[1].revents != 0 { return }
            let length = buffer.withUnsafeMutableBytes {
                baseline_proc_connector_receive(fd, $0.baseAddress, UInt($0.count))
            }
            if length < 0 {
                if errno == ENOBUFS { handler(.overrun) }
                continue
            }
            let count = buffer.withUnsafeBytes { bytes in
                events.withUnsafeMutableBufferPointer {
                    baseline_proc_connector_parse(bytes.baseAddress, length, $0.baseAddress, Int32($0.count))
                }
            }
            var lost = 0
            for event in events.prefix(Int(count)) {
                // The same count as ProcConnector's: a gap in one CPU's event numbers.
                if event.what != 0, event.cpu < 4096 {
                    let cpu = Int(event.cpu)
                    if cpu >= next.count { next += [UInt32](repeating: 0, count: cpu + 1 - next.count) }
                    if next[cpu] != 0 {
                        let gap = event.sequence &- (next[cpu] &- 1)
                        if gap != 0, gap < 1 << 31 { lost += Int(gap) }
                    }
                    next[cpu] = event.sequence &+ 2
                }
                switch event.what {
                case 0x0000_0001 where event.pid == event.tgid:
                    handler(.fork(parent: event.parent_tgid, child: event.tgid))
                case 0x0000_0002 where event.pid == event.tgid: handler(.exec(pid: event.tgid))
                case 0x0000_0004 where event.pid == event.tgid:
                    handler(.uid(pid: event.tgid, real: event.ruid, effective: event.euid))
                case 0x8000_0000 where event.pid == event.tgid:
                    handler(.exit(pid: event.tgid, code: event.exit_code))
                default: continue
                }
            }
            received.add(events.prefix(Int(count)).filter { $0.what != 0 }.count, ordering: .relaxed)
            if lost > 0 { lostEvents.add(lost, ordering: .relaxed) }
        }
    }
}

private func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// One round: the reader on a thread of its own (default priority, as the agent's watcher runs
/// when it cannot have SCHED_FIFO), the storm, then until the reader has been idle for 200 ms.
/// Events per second are those read by then over the storm's time (every event on the machine,
/// the storm's and any other's, for both readers alike).
func measure(_ reader: any ProcEventReader, storm: String, workers: Int, seconds: Double) throws -> ReaderRound {
    final class ThreadState: Sendable {
        let overruns = Atomic<Int>(0)
        let cpu = Mutex(0.0)
        let finished = DispatchSemaphore(value: 0)
    }
    let state = ThreadState()
    let thread = Thread {
        let start = threadCPUSeconds()
        reader.read { event in
            if event == .overrun { state.overruns.add(1, ordering: .relaxed) }
        }
        state.cpu.withLock { $0 = threadCPUSeconds() - start }
        state.finished.signal()
    }
    thread.start()
    Thread.sleep(forTimeInterval: 0.2)
    let before = reader.counts
    let clock = ContinuousClock()
    let started = clock.now
    let process = Process()
    process.executableURL = URL(fileURLWithPath: storm)
    process.arguments = ["\(workers)", "\(seconds)"]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    process.waitUntilExit()
    let stormTime = clock.now - started
    let forks =
        Int(
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    var last = reader.counts
    var lastChange = clock.now
    while clock.now - lastChange < .milliseconds(200) {
        Thread.sleep(forTimeInterval: 0.01)
        let now = reader.counts
        if now != last {
            last = now
            lastChange = clock.now
        }
    }
    reader.stop()
    state.finished.wait()
    let (whole, fraction) = stormTime.components
    return ReaderRound(
        events: last.events - before.events, lost: last.lost - before.lost,
        overruns: state.overruns.load(ordering: .relaxed),
        seconds: Double(whole) + Double(fraction) / 1e18, readerCPU: state.cpu.withLock { $0 }, forks: forks)
}

func procConnectorBenchmark(storm: String) throws {
    let workers = 2
    let seconds = 2.0
    let rounds = 3
    print(
        "Proc connector under a fork storm (\(workers) workers, \(Int(seconds)) s a round, \(rounds) rounds each,"
            + " alternating; reader at default priority)")
    for buffer in [4 << 20, 32 << 10] {
        var results: [String: [ReaderRound]] = [:]
        for _ in 0..<rounds {
            results["libnl-3", default: []].append(
                try measure(ProcConnector(receiveBuffer: buffer), storm: storm, workers: workers, seconds: seconds))
            results["hand-written", default: []].append(
                try measure(HandWrittenReader(receiveBuffer: buffer), storm: storm, workers: workers, seconds: seconds))
        }
        print("  receive buffer \(buffer >> 10) KiB\(buffer == 4 << 20 ? " (the agent's)" : " (libnl's default)"):")
        for name in ["libnl-3", "hand-written"] {
            let all = results[name] ?? []
            let rates = all.map { Double($0.events) / $0.seconds }.sorted()
            let events = all.reduce(0) { $0 + $1.events }
            let lost = all.reduce(0) { $0 + $1.lost }
            let overruns = all.reduce(0) { $0 + $1.overruns }
            let forks = all.reduce(0) { $0 + $1.forks }
            let cpu = all.reduce(0) { $0 + $1.readerCPU }
            print(
                "    "
                    + name.padding(toLength: 13, withPad: " ", startingAt: 0)
                    + String(
                        format: "%9.0f events/s (median)  %8d events  lost %7d (%d overruns)  reader CPU %5.2f µs/event"
                            + "  storm %6d forks",
                        rates[rates.count / 2], events, lost, overruns, cpu * 1e6 / Double(max(events, 1)), forks))
        }
    }
}
