import Foundation
import ScreenTimeTestThreads
import Testing

@testable import LinuxSupport

@Suite(.threadsOfTheirOwn) struct RunQueueWaitTests {
    @Test func schedstatGivesWhatRanAndWhatWaited() {
        let figures = RunQueueWait.parseSchedstat(Array("294591457 192592 9\n".utf8))
        #expect(figures?.ran == 294_591_457)
        #expect(figures?.waited == 192_592)
    }

    @Test(arguments: ["", "1 2\n", "1 2 3 4\n", "1 -2 3\n", "1 2x 3\n", "1 99999999999999999999 3\n", "a b c\n"])
    func anythingElseIsNoSchedstat(_ text: String) {
        #expect(RunQueueWait.parseSchedstat(Array(text.utf8)) == nil)
    }

    /// A thread's name is its own to choose: the state is the field after the last `)`.
    @Test func theStateFollowsTheLastParenthesis() {
        #expect(RunQueueWait.parseState(Array("42 (Xvfb) S 1 42 42 0 -1".utf8)) == UInt8(ascii: "S"))
        #expect(RunQueueWait.parseState(Array("42 (a) R (b) S 1 42".utf8)) == UInt8(ascii: "S"))
        #expect(RunQueueWait.parseState(Array("42 (x)".utf8)) == nil)
        #expect(RunQueueWait.parseState(Array("42 x S".utf8)) == nil)
    }

    @Test func aThreadThatWorksRunsAndIsReadyAThreadThatIsGoneIsNothing() {
        let scheduler = RunQueueWait(threads: [
            (getpid(), getpid(), false), (getpid(), 0, false), (getpid(), Int32.max, true),
        ])
        let before = scheduler.sample()
        var sum = 0.0
        for value in 0..<3_000_000 { sum += sqrt(Double(value)) }
        let after = scheduler.sample()
        #expect(sum > 0)
        // The main thread: this test runs on another, so only its figures are known to grow
        // or stay; the other two read as nothing.
        #expect(after[0].ran >= before[0].ran)
        #expect(after[1] == RunQueueWait.Thread(ran: .zero, waited: .zero, ready: false))
        #expect(after[2] == RunQueueWait.Thread(ran: .zero, waited: .zero, ready: false))
    }

    @Test func aThreadKeptFromTheProcessorIsStarvingOneThatRanIsNot() {
        let quarter = Duration.milliseconds(250)
        let was = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(2), ready: true)
        let kept = RunQueueWait.Thread(ran: .seconds(1) + .milliseconds(10), waited: .seconds(2), ready: true)
        let worked = RunQueueWait.Thread(ran: .seconds(1) + .milliseconds(600), waited: .seconds(2), ready: true)
        let asleep = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(2), ready: false)
        #expect(RunQueueWait.starving(from: [was], to: [kept], over: quarter * 4))
        #expect(!RunQueueWait.starving(from: [was], to: [worked], over: quarter * 4))
        #expect(!RunQueueWait.starving(from: [was], to: [asleep], over: quarter * 4))
        let waited = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(3), ready: false)
        #expect(RunQueueWait.waited(from: [was, was], to: [waited, asleep]) == .seconds(1))
    }

    /// A `stat` line with `nice` in field 19 and `policy` in field 41 (the name chosen by the
    /// thread, with a parenthesis and spaces of its own).
    private func statLine(nice: Int, policy: Int) -> String {
        var fields = (4...52).map { "\($0)" }
        fields[19 - 4] = "\(nice)"
        fields[41 - 4] = "\(policy)"
        return "42 (X) 19 (v) S " + fields.joined(separator: " ") + "\n"
    }

    @Test func theNiceValueAndThePolicyFollowTheLastParenthesis() {
        let parsed = RunQueueWait.parseSchedule(Array(statLine(nice: -5, policy: 3).utf8))
        #expect(parsed?.nice == -5)
        #expect(parsed?.policy == 3)
        #expect(RunQueueWait.parseSchedule(Array("42 (x) S 1 2 3".utf8)) == nil)
    }

    @Test(arguments: [("0-1", 2), ("0", 1), ("0-3,6,8-9", 7), ("1,3\n", 2)])
    func processorListsAreCounted(_ list: String, _ count: Int) {
        #expect(RunQueueWait.countCPUs(list) == count)
    }

    @Test(arguments: ["", "a", "3-1", "1-", "-1", "0-99999999"])
    func anythingElseIsNoProcessorList(_ list: String) {
        #expect(RunQueueWait.countCPUs(list) == nil)
    }

    /// A tree standing for /proc and /sys/fs/cgroup: a server thread as the system started it,
    /// then each way its owner can make it wait on purpose.
    @Test func aServerSlowedOnPurposeIsToldApart() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("rqw-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        let task = base + "/proc/42/task/42"
        try FileManager.default.createDirectory(atPath: task, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: base + "/cg/system.slice/display.scope", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: base + "/cg/user.slice/hers/game", withIntermediateDirectories: true)
        chown(base + "/cg/user.slice/hers", 1000, 1000)
        chown(base + "/cg/user.slice/hers/game", 1000, 1000)
        func write(_ text: String, _ path: String) throws {
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
        func set(
            nice: Int = 0, policy: Int = 0, cpus: String = "0-3", group: Int = 0,
            cgroup: String = "/system.slice/display.scope"
        ) throws {
            try write(statLine(nice: nice, policy: policy), task + "/stat")
            try write(
                "Name:\tXvfb\nCpus_allowed:\tf\nCpus_allowed_list:\t\(cpus)\nMems_allowed_list:\t0\n", task + "/status")
            try write("/autogroup-7 nice \(group)\n", base + "/proc/42/autogroup")
            try write("0::\(cgroup)\n", task + "/cgroup")
        }
        let scheduler = RunQueueWait(
            threads: [(42, 42, true)], root: base + "/proc", cgroupRoot: base + "/cg", online: 4)
        try set()
        #expect(!scheduler.slowedOnPurpose(pid: 42, tid: 42), "as the system started it")
        #expect(scheduler.sample(states: false, settings: true).first?.slowed == false)
        try set(nice: -10)
        #expect(!scheduler.slowedOnPurpose(pid: 42, tid: 42), "a server given more than its share")
        for (what, change) in [
            ("niced", { try set(nice: 12) }), ("batch", { try set(policy: 3) }), ("idle", { try set(policy: 5) }),
            ("pinned", { try set(cpus: "1") }), ("a cpuset of two", { try set(cpus: "0,2") }),
            ("its autogroup niced", { try set(group: 19) }),
            ("a control group of hers", { try set(cgroup: "/user.slice/hers/game") }),
            ("a control group path climbing out", { try set(cgroup: "/system.slice/../user.slice/hers") }),
            ("a control group that is not there", { try set(cgroup: "/gone.slice") }),
        ] as [(String, () throws -> Void)] {
            try change()
            #expect(scheduler.slowedOnPurpose(pid: 42, tid: 42), "\(what)")
        }
        try set(nice: 19)
        let sampled = scheduler.sample(states: false, settings: true)
        #expect(sampled.first?.slowed == true)
        #expect(scheduler.sample(states: false).first?.slowed == false, "only read when asked")
        unlink(task + "/stat")
        #expect(scheduler.slowedOnPurpose(pid: 42, tid: 42), "unreadable")
    }

    /// What a slowed thread waited explains nothing, and it is not waited for as starving.
    @Test func aSlowedThreadsWaitExplainsNothing() {
        let was = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(2), ready: true)
        var kept = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(3), ready: true)
        #expect(RunQueueWait.waited(from: [was], to: [kept]) == .seconds(1))
        #expect(RunQueueWait.starving(from: [was], to: [kept], over: .seconds(1)))
        kept.slowed = true
        #expect(RunQueueWait.waited(from: [was], to: [kept]) == .zero)
        #expect(!RunQueueWait.starving(from: [was], to: [kept], over: .seconds(1)))
    }

    /// A real process of the test's: as started, then reniced (and, as root, niced back).
    @Test func aRealProcessRenicedIsSlowed() throws {
        let sleeper = try Self.sleeper()
        defer { Self.end(sleeper) }
        let pid = sleeper.processIdentifier
        let scheduler = RunQueueWait(threads: [(pid, pid, true)])
        let inherited = scheduler.slowedOnPurpose(pid: pid, tid: pid)
        // The test's own settings are inherited: judged as this process is.
        #expect(inherited == scheduler.slowedOnPurpose(pid: getpid(), tid: getpid()))
        #expect(setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid), 15) == 0)
        #expect(scheduler.slowedOnPurpose(pid: pid, tid: pid))
        // Only root may lower a niceness again.
        let back = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid), 0)
        if getuid() == 0 {
            #expect(back == 0)
            #expect(scheduler.slowedOnPurpose(pid: pid, tid: pid) == inherited, "niced back")
        } else {
            #expect(back == -1 && errno == EACCES, "a user cannot nice back")
        }
    }

    /// A real process of the test's pinned to one processor, where there are more.
    @Test(.enabled(if: RunQueueWait.ownProcessors() > 1, "pinning means something only with 2 processors or more"))
    func aRealProcessPinnedToOneProcessorIsSlowed() throws {
        let sleeper = try Self.sleeper()
        defer { Self.end(sleeper) }
        let pid = sleeper.processIdentifier
        let scheduler = RunQueueWait(threads: [(pid, pid, true)])
        // Not pinned yet: judged as this process is.
        #expect(
            scheduler.slowedOnPurpose(pid: pid, tid: pid) == scheduler.slowedOnPurpose(pid: getpid(), tid: getpid()))
        let pin = try TestProgram("/usr/bin/taskset", ["-p", "1", "\(pid)"])
        pin.waitUntilExit()
        #expect(pin.terminationStatus == 0)
        #expect(scheduler.slowedOnPurpose(pid: pid, tid: pid), "pinned to one processor")
    }

    private static func sleeper() throws -> TestProgram {
        try TestProgram("/bin/sleep", ["30"])
    }

    private static func end(_ sleeper: TestProgram) {
        // SIGKILL: a child a swift-testing test starts inherits its blocked signals.
        kill(sleeper.processIdentifier, SIGKILL)
        sleeper.waitUntilExit()
    }

    /// What a wait's looks saw decides whether its waits for a processor excuse it.
    @Test func aWaitIsExcusedOnlyWithNothingSlowedAndNoProcessorIdle() {
        let now = ContinuousClock.now
        var probe = RunQueueWait.Probe()
        #expect(probe.excuses(idleNow: .seconds(1), at: now), "nothing looked at")
        probe.idleFrom = (now - .milliseconds(500), .seconds(1))
        #expect(probe.excuses(idleNow: .seconds(1) + .milliseconds(10), at: now), "10 ms idle of 500")
        #expect(!probe.excuses(idleNow: .seconds(1) + .milliseconds(400), at: now), "a processor idle most of it")
        #expect(probe.excuses(idleNow: nil, at: now), "idle time unreadable")
        probe.idleFrom = (now - .milliseconds(20), .seconds(1))
        #expect(probe.excuses(idleNow: .seconds(2), at: now), "looked at too shortly to tell")
        probe = RunQueueWait.Probe()
        probe.slowed = true
        #expect(!probe.excuses(idleNow: nil, at: now), "slowed at a look")
    }

    @Test func idleTimeIsIdleAndIOWaitOfTheFirstLine() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("rqw-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let scheduler = RunQueueWait(threads: [], root: base)
        #expect(scheduler.idleTime() == nil, "no file")
        try "cpu  10 0 5 300 20 0 0 0 0 0\ncpu0 5 0 2 150 10 0 0 0 0 0\n".write(
            toFile: base + "/stat", atomically: false, encoding: .utf8)
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        #expect(scheduler.idleTime() == .milliseconds(320 * 1000 / ticks))
        try "intr 1 2 3\n".write(toFile: base + "/stat", atomically: false, encoding: .utf8)
        #expect(scheduler.idleTime() == nil, "not a cpu line")
        #expect(RunQueueWait(threads: []).idleTime() != nil, "this machine's")
    }
}
