import Foundation
import Glibc
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// The wall clock and the time zone changed under a running agent: the machine's own clock and
/// /etc/localtime are changed, so every other test would see it. `scripts/run-tests` runs this
/// suite alone, after the others, with SCREENTIME_CLOCK_TESTS=1; each test puts the clock (by the
/// monotonic time that passed) and the zone back.
@Suite(
    .threadsOfTheirOwn, .serialized,
    .enabled(
        if: isRoot && ProcessInfo.processInfo.environment["SCREENTIME_CLOCK_TESTS"] == "1",
        "sets the machine's clock and time zone: scripts/run-tests runs it alone (SCREENTIME_CLOCK_TESTS=1)"))
struct ClockIntegrationTests {
    private func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    /// Moves the machine's wall clock by `seconds`.
    private func shiftClock(by seconds: Int) throws {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        now.tv_sec += seconds
        guard clock_settime(CLOCK_REALTIME, &now) == 0 else {
            throw WorldError("clock_settime: \(String(cString: strerror(errno)))")
        }
    }

    /// The wall clock as it was plus the monotonic time since, set again.
    private struct Restorer {
        var wall = timespec()
        var monotonic = timespec()

        init() {
            clock_gettime(CLOCK_REALTIME, &wall)
            clock_gettime(CLOCK_MONOTONIC, &monotonic)
        }

        func restore() {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            var nanoseconds =
                (now.tv_sec - monotonic.tv_sec) * 1_000_000_000 + (now.tv_nsec - monotonic.tv_nsec) + wall.tv_nsec
            var target = timespec()
            target.tv_sec = wall.tv_sec + nanoseconds / 1_000_000_000
            nanoseconds %= 1_000_000_000
            target.tv_nsec = nanoseconds
            clock_settime(CLOCK_REALTIME, &target)
        }
    }

    private func clock(_ date: Date, in zone: TimeZone = .current) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    @Test func aClockSetForwardAcrossABoundaryTellsItOnceAndSetBackTellsNothingAgain() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let installed = try ActivityIntegrationTests.Installed(world)
        defer { installed.remove() }
        let authorized = try world.cli(as: world.guardian, "authorize", "--child", world.child)
        #expect(authorized.status == 0, "\(authorized.stderr)")
        let program = try installed.script(
            "monitor", "input=$(cat); echo \"$(date +%s) $input\" >> \(installed.notes)/calls")
        let start = Date().addingTimeInterval(30 * 60)
        let set = try world.cli(
            as: world.guardian, "monitor", "start", "later", "--user", world.child, "--from", clock(start), "--to",
            clock(start.addingTimeInterval(20 * 60)), "--repeats", "--extension", program)
        #expect(set.status == 0, "\(set.stderr)")
        Thread.sleep(forTimeInterval: 2)
        #expect(installed.lines("calls").isEmpty)
        let restorer = Restorer()
        defer { restorer.restore() }
        // Forward past the start: told at once (the kernel ends the timer's wait), once.
        try shiftClock(by: 31 * 60)
        #expect(eventually(5) { installed.lines("calls").count == 1 }, "\(installed.lines("calls"))")
        #expect(installed.lines("calls").first?.contains("intervalDidStart") == true)
        // Back before it, and forward across it again: the same interval, told nothing more.
        try shiftClock(by: -31 * 60)
        Thread.sleep(forTimeInterval: 3)
        try shiftClock(by: 31 * 60)
        Thread.sleep(forTimeInterval: 3)
        #expect(installed.lines("calls").count == 1, "\(installed.lines("calls"))")
        restorer.restore()
        let scheduler = try world.cli(as: world.guardian, "monitor", "list", "--user", world.child)
        #expect(scheduler.status == 0, "\(scheduler.stderr)")
    }

    @Test func aDailyLimitByDayHoldsSaturdaysFigureOnASaturday() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        let unshield = try world.cli(
            as: world.guardian, "unshield", "--user", world.child, "--app", "org.example.Counter")
        #expect(unshield.status == 0, "\(unshield.stderr)")
        let restorer = Restorer()
        defer { restorer.restore() }
        // To the coming Friday at noon (whatever today is), where the limit is set.
        let friday = try #require(
            Calendar.current.nextDate(
                after: Date(), matching: DateComponents(hour: 12, minute: 0, weekday: 6), matchingPolicy: .nextTime))
        try shiftClock(by: Int(friday.timeIntervalSinceNow.rounded()))
        let set = try world.cli(
            as: world.guardian, "limit", "--user", world.child, "--app", "org.example.Counter", "--daily",
            "sat=0,sun-fri=12h")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("fri=12h,sat=0,sun=12h") || set.stdout.contains("sat=0"), "\(set.stdout)")
        #expect(set.stdout.contains("(12h today)"), "\(set.stdout)")
        let output = try world.childDirectory() + "/count"
        let counter = try world.launch(as: world.child, world.counter, [output])
        #expect(eventually { world.count(output) != nil })
        Thread.sleep(forTimeInterval: 2)
        #expect(!world.isFrozen(counter), "held on a Friday with 12 hours to use")
        // A day later it is Saturday, whose figure is nothing: held at once.
        try shiftClock(by: 86_400)
        #expect(eventually(10) { world.isFrozen(counter) })
        let list = try world.cli(as: world.guardian, "monitor", "list", "--user", world.child)
        #expect(list.stdout.contains("(0 today)") && list.stdout.contains("reached"), "\(list.stdout)")
        restorer.restore()
    }

    @Test func aTimeZoneChangedIntoAnIntervalStartsItAtOnce() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let installed = try ActivityIntegrationTests.Installed(world)
        defer { installed.remove() }
        let authorized = try world.cli(as: world.guardian, "authorize", "--child", world.child)
        #expect(authorized.status == 0, "\(authorized.stderr)")
        let program = try installed.script(
            "monitor", "input=$(cat); echo \"$(date +%s) $input\" >> \(installed.notes)/calls")
        // Now in Karachi (UTC+5, no summer time) the interval is in progress; in the machine's
        // zone it is hours away (or, if the machine is already on Karachi's time, Kiritimati's).
        let original = Files.readLink("/etc/localtime")
        defer {
            unlink("/etc/localtime")
            if let original { symlink(original, "/etc/localtime") }
        }
        let target = TimeZone.current.secondsFromGMT() == 5 * 3600 ? "Pacific/Kiritimati" : "Asia/Karachi"
        let zone = try #require(TimeZone(identifier: target))
        let now = Date()
        let set = try world.cli(
            as: world.guardian, "monitor", "start", "zoned", "--user", world.child, "--from",
            clock(now.addingTimeInterval(-60), in: zone), "--to", clock(now.addingTimeInterval(20 * 60), in: zone),
            "--extension", program)
        #expect(set.status == 0, "\(set.stderr)")
        Thread.sleep(forTimeInterval: 2)
        #expect(installed.lines("calls").isEmpty, "started in the machine's zone: \(installed.lines("calls"))")
        unlink("/etc/localtime")
        symlink("/usr/share/zoneinfo/\(target)", "/etc/localtime")
        #expect(eventually(5) { installed.lines("calls").count == 1 }, "\(installed.lines("calls"))")
        #expect(installed.lines("calls").first?.contains("intervalDidStart") == true)
    }
}
