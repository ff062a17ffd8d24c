import Foundation
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// The scheduler on a state database in a temporary directory, with a manual clock: what is owed
/// is on disk before it is handed over, and a restart (a new scheduler on the same file) tells
/// nothing twice.
@Suite struct ActivitySchedulerTests {
    /// What the scheduler hands to the extension host, kept.
    final class Delivered: ProgramCallbackSink {
        let owed = Mutex<[OwedCallback]>([])
        func take(_ owed: [OwedCallback]) { self.owed.withLock { $0 += owed } }
        var names: [String] { owed.withLock { $0.map(\.callback.callback.rawValue) } }
    }

    private func scheduler(_ path: String, _ clock: ManualClock, _ delivered: Delivered) throws -> ActivityScheduler {
        let scheduler = ActivityScheduler(
            database: try StateDatabase(path: path), usage: nil, usersInFrontGained: nil, publisher: nil,
            reactions: nil, programCallbacks: delivered, logger: Logger(label: "test"), now: { clock.now })
        return scheduler
    }

    private func monitor(start: Date, calendar: ZonedCalendar) throws -> Monitor {
        let components = calendar.dateComponents([.hour, .minute], from: start)
        let end = calendar.dateComponents([.hour, .minute], from: start.addingTimeInterval(3_600))
        let activity = MonitoredActivity(
            name: try DeviceActivityName.validated("homework"),
            schedule: DeviceActivitySchedule(
                intervalStart: DateComponents(hour: components.hour, minute: components.minute),
                intervalEnd: DateComponents(hour: end.hour, minute: end.minute), repeats: true),
            events: [:], monitoringStart: start.addingTimeInterval(-600))
        return Monitor(
            uid: 1001, client: .commandLine, activity: activity, program: "/usr/local/lib/x/monitor", builtIn: nil,
            itemNames: [:])
    }

    @Test func whatIsOwedIsOnDiskBeforeItRunsAndARestartTellsNothingTwice() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.sqlite"
        let clock = ManualClock(Date(timeIntervalSince1970: 1_900_000_000))
        let calendar = ActivityScheduler.systemCalendar()
        let start = calendar.nextDate(
            after: clock.now, matching: DateComponents(minute: 0, second: 0))!
        let homework = try monitor(start: start, calendar: calendar)
        try StateDatabase(path: path).saveMonitor(homework)

        let delivered = Delivered()
        var first: ActivityScheduler? = try scheduler(path, clock, delivered)
        first?.step()
        #expect(delivered.names.isEmpty, "nothing before the start")
        clock.set(start.addingTimeInterval(1))
        first?.step()
        #expect(delivered.names == ["intervalDidStart"])
        // On disk, owed, before anyone ran it: another process reading the file sees it.
        let owed = try StateDatabase(path: path).owedCallbacks()
        #expect(owed.map(\.callback.callback) == [.intervalDidStart])
        first = nil

        // Restarted before it ran: the scheduler owes it still (it is run at start), and a step
        // makes nothing new owed.
        let again = Delivered()
        let second = try scheduler(path, clock, again)
        second.step()
        #expect(again.names.isEmpty)
        #expect(try StateDatabase(path: path).owedCallbacks().count == 1)
        // Run: owed no more; the end comes once.
        let database = try StateDatabase(path: path)
        for callback in owed {
            try database.ran(
                callback,
                ExtensionRun(key: callback.key, callback: callback.callback, at: clock.now, outcome: .ok, problem: nil))
        }
        #expect(try database.owedCallbacks().isEmpty)
        #expect(try database.lastRuns(uid: 1001)[homework.key]?.outcome == .ok)
        clock.set(start.addingTimeInterval(3_601))
        second.step()
        second.step()
        #expect(again.names == ["intervalDidEnd"])
        // Stopped: what it still owed goes with it, and nothing more is told.
        try database.deleteMonitors([homework.key])
        #expect(try database.owedCallbacks().isEmpty)
        #expect(try database.lastRuns(uid: 1001).isEmpty)
    }

    @Test func theNextWakeIsTheNextBoundaryAndNothingWakesBetween() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.sqlite"
        let clock = ManualClock(Date(timeIntervalSince1970: 1_900_000_000))
        let calendar = ActivityScheduler.systemCalendar()
        let start = calendar.nextDate(
            after: clock.now.addingTimeInterval(3_600), matching: DateComponents(minute: 0, second: 0))!
        try StateDatabase(path: path).saveMonitor(try monitor(start: start, calendar: calendar))
        let scheduler = try scheduler(path, clock, Delivered())
        scheduler.step()
        #expect(scheduler.wakeReport.nextWake == start)
    }

    /// A change made while the scheduler's loop does not run (before the agent's services start,
    /// or an agent that serves nothing) is stepped by the one who made it: what it made owed is
    /// handed over when the change returns (before, nothing was, and the change waited 5 s).
    @Test func aChangeWhileTheLoopDoesNotRunIsSteppedByItsCaller() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.sqlite"
        let clock = ManualClock(Date(timeIntervalSince1970: 1_900_000_000))
        let delivered = Delivered()
        let scheduler = try scheduler(path, clock, delivered)
        let database = try StateDatabase(path: path)
        let started = clock.now.addingTimeInterval(-600)
        try scheduler.change {
            try database.saveMonitor(try monitor(start: started, calendar: ActivityScheduler.systemCalendar()))
        }
        #expect(delivered.names == ["intervalDidStart"])
        #expect(scheduler.wakeReport.nextWake != nil)
    }
}

/// A monitor extension's authority, through the agent's router: the channel's user and client,
/// whatever the request says, and whatever the connection's peer credentials (the agent's own,
/// root) would allow.
@Suite struct ExtensionAuthorityTests {
    private func send<R: ControlRequest>(
        _ request: R, _ agent: AccessMatrixTests.Agent, authority: ExtensionAuthority
    ) -> ScreenTimeIPCError.Code? {
        let bytes = try! RequestEnvelope.encode(request)
        let reply = agent.router.reply(
            to: bytes,
            context: RequestContext(peer: PeerCredentials(pid: 1, uid: 0, gid: 0), authority: authority))
        do {
            _ = try ReplyCoding.decode(R.Reply.self, from: reply)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func anExtensionActsForItsUserAndClientOnly() throws {
        let agent = try AccessMatrixTests.Agent()
        #expect(agent.send(AuthorizeRequest(user: "kid", member: .child), as: AccessMatrixTests.mum) == nil)
        #expect(agent.send(AuthorizeRequest(user: "sib", member: .child), as: AccessMatrixTests.mum) == nil)
        let authority = ExtensionAuthority(uid: AccessMatrixTests.kid, client: "org.example.Homework")
        func shield(user: String?, client: String?) -> ShieldRequest {
            ShieldRequest(target: StoreTarget(user: user, client: client, store: "school"), webDomains: ["example.com"])
        }
        #expect(send(shield(user: nil, client: nil), agent, authority: authority) == nil)
        #expect(send(shield(user: "kid", client: "org.example.Homework"), agent, authority: authority) == nil)
        #expect(send(shield(user: "sib", client: nil), agent, authority: authority) == .notAllowed)
        #expect(send(shield(user: "kid", client: "screentime"), agent, authority: authority) == .notAllowed)
        #expect(
            send(ClearRequest(StoreTarget(user: "kid", client: "other")), agent, authority: authority) == .notAllowed)
        #expect(send(StatusRequest(user: "kid"), agent, authority: authority) == nil)
        #expect(send(StatusRequest(user: "sib"), agent, authority: authority) == .notAllowed)
        #expect(send(AuthorizeRequest(user: "sib", member: .child), agent, authority: authority) == .notAllowed)
        #expect(send(RevokeRequest(user: "kid"), agent, authority: authority) == .notAllowed)
        #expect(send(UnlockRequest(user: "kid"), agent, authority: authority) == .notAllowed)
        let day = DateInterval(start: Date(timeIntervalSince1970: 1_900_000_000), duration: 86_400)
        #expect(
            send(
                ReportRequest(user: "kid", from: day.start, to: day.end, segments: .hourly, timeZone: "UTC"), agent,
                authority: authority) == .notAllowed)
        // Its user revoked: the channel is worth nothing.
        #expect(agent.send(RevokeRequest(user: "kid"), as: AccessMatrixTests.mum) == nil)
        #expect(send(shield(user: nil, client: nil), agent, authority: authority) == .notAuthorized)
    }
}
