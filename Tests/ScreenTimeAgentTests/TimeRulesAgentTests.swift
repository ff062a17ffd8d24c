import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

/// Limits by day and by week, grants that add up and end early, and a guardian's lock, through the
/// agent's own router and policy service (the test kit's, in this process).
@Suite struct TimeRulesAgentTests {
    static let mum: UInt32 = 1000, kid: UInt32 = 1001

    struct Agent {
        let agent = try! InProcessAgent()

        func send<R: ControlRequest>(_ request: R, as uid: UInt32 = mum) throws -> R.Reply {
            let reply = agent.router.reply(
                to: try RequestEnvelope.encode(request),
                context: RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid)))
            return try ReplyCoding.decode(R.Reply.self, from: reply)
        }

        func code<R: ControlRequest>(_ request: R, as uid: UInt32 = mum) -> ScreenTimeIPCError.Code? {
            do {
                _ = try send(request, as: uid)
                return nil
            } catch {
                return (error as? ScreenTimeIPCError)?.code ?? .internalError
            }
        }

        var kidInForce: PolicySnapshot.User? { agent.publisher.current.users[TimeRulesAgentTests.kid] }
    }

    private func authorized() throws -> Agent {
        let agent = Agent()
        _ = try agent.send(AuthorizeRequest(user: "kid", member: .child))
        return agent
    }

    @Test func aGuardianLocksAChildUntilUnlockedForAWhileAndNoGrantLiftsIt() throws {
        let agent = try authorized()
        // Only a guardian locks; the child cannot lock or unlock itself.
        #expect(agent.code(LockRequest(user: "kid"), as: Self.kid) == .notAllowed)
        #expect(agent.code(LockRequest(user: "mum")) == .notAuthorized)

        let locked = try agent.send(LockRequest(user: "kid"))
        #expect(locked.untilUnlocked && locked.until == nil)
        #expect(agent.kidInForce?.isLocked == true)
        #expect(agent.kidInForce?.loginLock?.reason == "guardian")
        // More screen time does not lift a guardian's lock: it says how to.
        #expect(agent.code(ScreenTimeGrantRequest(user: "kid", length: .minutes(30))) == .invalidArgument)
        #expect(agent.code(LockRequest(user: "kid", unlock: true), as: Self.kid) == .notAllowed)
        #expect(try agent.send(LockRequest(user: "kid", unlock: true)).lifted)
        #expect(agent.kidInForce?.isLocked == false)
        #expect(try agent.send(LockRequest(user: "kid", unlock: true)).lifted == false)

        // For a while: until then; a grant of screen time running is ended by the lock.
        let granted = try agent.send(ScreenTimeGrantRequest(user: "kid", length: .minutes(60)))
        let before = Date()
        let half = try agent.send(LockRequest(user: "kid", length: .minutes(30)))
        let until = try #require(half.until)
        #expect(abs(until.timeIntervalSince(before) - 1_800) < 5)
        #expect(agent.kidInForce?.isLocked == true)
        let requests = try agent.send(TimeRequestsRequest(user: "kid")).requests
        #expect(requests.first { $0.id == granted.id }?.state == .ended)
        // `unlock` (the lockout's command) lifts it too.
        #expect(try agent.send(UnlockRequest(user: "kid")).lockLifted == true)
        #expect(agent.kidInForce?.isLocked == false)
        // Bad lengths are refused and change nothing.
        #expect(agent.code(LockRequest(user: "kid", length: .minutes(0))) == .invalidArgument)
        #expect(agent.code(LockRequest(user: "kid", length: .until(hour: 25, minute: 0))) == .invalidArgument)
        #expect(agent.kidInForce?.loginLock == nil)
    }

    @Test func screenTimeGrantsAddUpAndAGuardianEndsOneEarly() throws {
        let agent = try authorized()
        let start = Date()
        let first = try agent.send(ScreenTimeGrantRequest(user: "kid", length: .minutes(15)))
        #expect(abs(try #require(first.until).timeIntervalSince(start) - 900) < 5)
        // Another 15 while the first runs: on top of it, half an hour from now.
        let second = try agent.send(ScreenTimeGrantRequest(user: "kid", length: .minutes(15)))
        #expect(abs(try #require(second.until).timeIntervalSince(start) - 1_800) < 5)
        // The rest of the day ends at midnight, or with the grant running if that is later.
        let rest = try agent.send(ScreenTimeGrantRequest(user: "kid", length: .restOfDay))
        let midnight = GrantLength.nextMidnight(after: Date(), calendar: ActivityScheduler.systemCalendar())
        #expect(try #require(rest.until) == max(midnight, try #require(second.until)))

        // Ended: no longer in force, said so in the list; a second end and a child's are refused.
        #expect(agent.code(EndGrantRequest(id: second.id), as: Self.kid) == .notAllowed)
        let ended = try agent.send(EndGrantRequest(id: second.id))
        #expect(ended.state == .ended)
        #expect(agent.code(EndGrantRequest(id: second.id)) == .invalidArgument)
        #expect(agent.code(EndGrantRequest(id: 999)) == .invalidArgument)
        let running = try agent.agent.database.grants(uid: Self.kid, at: Date()).compactMap(\.id)
        #expect(Set(running) == [first.id, rest.id])
        // Until a time of day: at most 12 hours ahead (a time just passed is not tomorrow's).
        let calendar = ActivityScheduler.systemCalendar()
        func clock(_ date: Date) -> GrantLength {
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            return .until(hour: parts.hour ?? 0, minute: parts.minute ?? 0)
        }
        let far = agent.code(ScreenTimeGrantRequest(user: "kid", length: clock(Date().addingTimeInterval(13 * 3_600))))
        #expect(far == .invalidArgument)
        #expect(
            agent.code(ScreenTimeGrantRequest(user: "kid", length: clock(Date().addingTimeInterval(-120))))
                == .invalidArgument)
        #expect(
            agent.code(ScreenTimeGrantRequest(user: "kid", length: clock(Date().addingTimeInterval(2 * 3_600)))) == nil)
        // Old-style minutes still work, and are checked.
        #expect(agent.code(ScreenTimeGrantRequest(user: "kid", minutes: 721)) == .invalidArgument)
        #expect(agent.code(ScreenTimeGrantRequest(user: "kid", minutes: 5)) == nil)
    }

    /// A service's limit counts its apps and its sites together: its apps by token, its domains
    /// by registrable domain (as web time is counted), its category (what the shield covers once
    /// the time is used).
    @Test func aServicesLimitCountsItsAppsAndItsSites() throws {
        let agent = try authorized()
        let service = ActivityItems(applications: [], applicationCategories: [], webDomains: [], services: ["blocks"])
        var request = LimitRequest(user: "kid", items: service, dailySeconds: nil)
        request.daily = try DailyAllowance.parse("30m")
        let reply = try agent.send(request)
        let event = try #require(reply.monitors.first { $0.name == "limit: Blocks Online" }?.events.first)
        #expect(event.applications == [agent.agent.app("org.example.Blocks").base64])
        let minter = agent.agent.minter
        #expect(event.webDomains == [minter.token(for: try DomainName("example.com")).base64])
        #expect(event.categories == [minter.token(for: try CategoryName("service.blocks")).base64])
        let status = try agent.send(StatusRequest(user: "kid"))
        #expect(status.limits?.map(\.name) == ["Blocks Online"])
        // The domains its shield takes once the time is used are named (the DNS filter matches
        // a shielded token by its name).
        let shielded = minter.token(for: try DomainName("blocks.example.com")).base64
        #expect(try agent.agent.database.tokenNames([shielded])[shielded]?.identity == "blocks.example.com")
        let unknown = LimitRequest(
            user: "kid",
            items: ActivityItems(applications: [], applicationCategories: [], webDomains: [], services: ["x"]),
            dailySeconds: 60)
        #expect(agent.code(unknown) == .unknownCategory)
    }

    @Test func limitsByDayAndByWeekAreSetListedAndRemovedTogether() throws {
        let agent = try authorized()
        let games = ActivityItems(applications: [], applicationCategories: ["Game"], webDomains: [])
        var request = LimitRequest(user: "kid", items: games, dailySeconds: nil)
        request.daily = try DailyAllowance.parse("mon-fri=1h,sat=3h,sun=0")
        request.weeklySeconds = 8 * 3_600
        let reply = try agent.send(request)
        let names = reply.monitors.map(\.name)
        #expect(names.contains("limit: Game") && names.contains("limit: Game (week)"), "\(names)")
        let daily = try #require(reply.monitors.first { $0.name == "limit: Game" }?.events.first)
        #expect(daily.allowance == "mon,tue,wed,thu,fri=1h,sat=3h,sun=0")
        let weekly = try #require(reply.monitors.first { $0.name == "limit: Game (week)" })
        #expect(weekly.events.first?.thresholdSeconds == 28_800)
        #expect(weekly.schedule.intervalStart.weekday == 2)

        // Status says where each stands: the day's by day of the week, and the week's.
        let standing = try #require(try agent.send(StatusRequest(user: "kid")).limits)
        #expect(standing.map(\.name) == ["Game", "Game"] && standing.map(\.period) == ["day", "week"])
        #expect(standing[0].allowance == "mon,tue,wed,thu,fri=1h,sat=3h,sun=0")
        #expect(standing[1].limitSeconds == 28_800 && standing[1].reached == false)

        // The week's alone replaced: the day's stays.
        var week = LimitRequest(user: "kid", items: games, dailySeconds: nil)
        week.weeklySeconds = 10 * 3_600
        let replaced = try agent.send(week)
        #expect(replaced.monitors.count == 2)
        #expect(replaced.monitors.first { $0.name.hasSuffix("(week)") }?.events.first?.thresholdSeconds == 36_000)

        // What is refused changes nothing.
        for bad in [
            DailyAllowance(seconds: [8: 3_600]), DailyAllowance(seconds: [2: 30]), DailyAllowance(seconds: [2: 86_400]),
            DailyAllowance(seconds: [:]),
        ] {
            var wrong = LimitRequest(user: "kid", items: games, dailySeconds: nil)
            wrong.daily = bad
            #expect(agent.code(wrong) == .invalidArgument, "\(bad)")
        }
        var tooLong = LimitRequest(user: "kid", items: games, dailySeconds: nil)
        tooLong.weeklySeconds = 7 * 86_400
        #expect(agent.code(tooLong) == .invalidArgument)
        #expect(agent.code(LimitRequest(user: "kid", items: games, dailySeconds: nil)) == .invalidArgument)
        #expect(try agent.send(MonitorListRequest(user: "kid")).monitors.count == 2)

        // The month's beside them: three, the month's from the 1st.
        var month = LimitRequest(user: "kid", items: games, dailySeconds: nil)
        month.monthlySeconds = 40 * 3_600
        let three = try agent.send(month)
        let monthly = try #require(three.monitors.first { $0.name == "limit: Game (month)" })
        #expect(monthly.schedule.monthly && monthly.events.first?.thresholdSeconds == 144_000)
        #expect(try agent.send(StatusRequest(user: "kid")).limits?.map(\.period) == ["day", "week", "month"])

        // Removed: all go.
        let removed = try agent.send(LimitRequest(user: "kid", items: games, dailySeconds: nil, remove: true))
        #expect(removed.monitors.isEmpty)
    }

    /// A client's event with a threshold by weekday (`DeviceActivityEvent.allowance`, which
    /// `DeviceActivityCenter` sends) is kept and listed; one that is not a week's days and
    /// durations is refused, naming what is wrong, and changes nothing.
    @Test func aClientsEventWithAThresholdByWeekdayIsKeptAndABadOneRefused() throws {
        let agent = try authorized()
        let schedule = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 0, minute: 0), intervalEnd: DateComponents(hour: 23, minute: 59),
            repeats: true)
        let games = ActivityItems(applications: [], applicationCategories: ["Game"], webDomains: [])
        func start(_ allowance: DailyAllowance) -> MonitorStartRequest {
            MonitorStartRequest(
                user: "kid", name: "games", schedule: schedule,
                events: [
                    MonitorEventRequest(name: "enough", items: games, thresholdSeconds: 7_200, allowance: allowance)
                ])
        }
        let reply = try agent.send(start(try DailyAllowance.parse("mon-fri=30m,sat,sun=2h")))
        #expect(reply.monitor.events.first?.allowance == "mon,tue,wed,thu,fri=30m,sat,sun=2h")
        let kept = try agent.send(MonitorListRequest(user: "kid")).monitors.first { $0.name == "games" }
        #expect(kept?.events.first?.allowance == "mon,tue,wed,thu,fri=30m,sat,sun=2h")
        for bad in [
            DailyAllowance(seconds: [0: 600]), DailyAllowance(seconds: [2: -1]),
            DailyAllowance(seconds: [2: 8 * 86_400]), DailyAllowance(seconds: [:]),
        ] {
            do {
                _ = try agent.send(start(bad))
                Issue.record("\(bad) was taken")
            } catch let error as ScreenTimeIPCError {
                #expect(error.code.rawValue == "invalidThreshold" && error.message.contains("allowance"), "\(error)")
            }
        }
        let after = try agent.send(MonitorListRequest(user: "kid")).monitors.first { $0.name == "games" }
        #expect(after?.events.first?.allowance == "mon,tue,wed,thu,fri=30m,sat,sun=2h", "a refusal changed it")
    }

    @Test func screenTimeByDayAndByWeekAreSetAndTheWeeksRemovedAlone() throws {
        let agent = try authorized()
        let none = ActivityItems(applications: [], applicationCategories: [], webDomains: [])
        var request = LimitRequest(user: "kid", items: none, dailySeconds: nil, screenTime: true, noLogin: true)
        request.daily = try DailyAllowance.parse("weekdays=2h,weekend=4h")
        request.weeklySeconds = 12 * 3_600
        let reply = try agent.send(request)
        #expect(Set(reply.monitors.map(\.name)) == ["screen time", "screen time (week)"])
        #expect(reply.monitors.allSatisfy { $0.builtIn == "screen time, no login" })
        var month = LimitRequest(user: "kid", items: none, dailySeconds: nil, screenTime: true)
        month.monthlySeconds = 40 * 3_600
        #expect(try agent.send(month).monitors.count == 3)
        var monthOff = LimitRequest(user: "kid", items: none, dailySeconds: nil, remove: true, screenTime: true)
        monthOff.monthlySeconds = 0
        #expect(Set(try agent.send(monthOff).monitors.map(\.name)) == ["screen time", "screen time (week)"])
        var weekOff = LimitRequest(user: "kid", items: none, dailySeconds: nil, remove: true, screenTime: true)
        weekOff.weeklySeconds = 0
        #expect(try agent.send(weekOff).monitors.map(\.name) == ["screen time"])
        #expect(agent.code(weekOff) == .invalidArgument)
        let off = try agent.send(
            LimitRequest(user: "kid", items: none, dailySeconds: nil, remove: true, screenTime: true))
        #expect(off.monitors.isEmpty)
    }

    @Test func aGuardianKeepsAListOfWhatIsAlwaysAllowedAndTheChildReadsIt() throws {
        let agent = try authorized()
        let calculator = AlwaysAllowedRequest(
            user: "kid", applications: ["snap:calculator"], webDomains: ["school.org"])
        // Only a guardian changes it; the child reads its own, no one else's.
        #expect(agent.code(calculator, as: Self.kid) == .notAllowed)
        let set = try agent.send(calculator)
        #expect(set.applications.map(\.name) == ["calculator"] && set.webDomains.map(\.name) == ["school.org"])
        let own = try agent.send(AlwaysAllowedRequest(user: nil), as: Self.kid)
        #expect(own == set)
        #expect(try agent.send(StatusRequest(user: "kid")).alwaysAllowed == ["calculator", "school.org"])
        #expect(agent.code(AlwaysAllowedRequest(user: "mum"), as: Self.kid) == .notAllowed)
        #expect(agent.code(AlwaysAllowedRequest(user: "kid", remove: true)) == .invalidArgument)
        #expect(agent.code(AlwaysAllowedRequest(user: "kid", webDomains: ["not a domain"])) != nil)
        #expect(try agent.send(AlwaysAllowedRequest(user: "kid")) == set, "a refused change changed nothing")

        // In force: downtime's store shields everything but the calculator.
        try agent.agent.database.saveStore(
            uid: Self.kid, key: .downtime,
            settings: {
                var settings = StoreSettings(); settings.shield.applicationCategories = .all(except: []);
                return settings
            }(),
            names: [:], at: Date())
        agent.agent.publisher.publish()
        let token = agent.agent.minter.token(for: try ApplicationIdentity.snap(name: "calculator"))
        let policy = try #require(agent.kidInForce?.policy)
        #expect(policy.applicationShield(for: token, categories: []).isEmpty)
        #expect(policy.applicationShield(for: agent.agent.app("org.example.Game"), categories: []) == [.downtime])

        // Taken off: downtime holds it too.
        _ = try agent.send(AlwaysAllowedRequest(user: "kid", applications: ["snap:calculator"], remove: true))
        #expect(agent.kidInForce?.policy.applicationShield(for: token, categories: []) == [.downtime])
    }

    /// The picker's categories include the services for a guardian (their tokens are the
    /// shields'), never for the child.
    @Test func servicesAreInAGuardiansPickerOnly() throws {
        let agent = try authorized()
        let mine = try agent.send(CategoriesRequest(user: "kid")).categories.filter { $0.kind == "service" }
        let token = agent.agent.minter.token(for: try CategoryName("service.blocks")).base64
        #expect(mine.map(\.name) == ["Blocks Online"] && mine.map(\.token) == [token])
        let hers = try agent.send(CategoriesRequest(user: nil), as: Self.kid).categories
        #expect(!hers.contains { $0.kind == "service" || $0.token == token })
    }

    /// A service always allowed: each of its apps and domains on the list, taken off together.
    @Test func aServiceIsAlwaysAllowedAsItsAppsAndItsSites() throws {
        let agent = try authorized()
        let set = try agent.send(AlwaysAllowedRequest(user: "kid", services: ["Blocks Online"]))
        #expect(set.applications.map(\.token) == [agent.agent.app("org.example.Blocks").base64])
        #expect(set.applications.map(\.name) == ["Blocks Online (desktop:org.example.Blocks)"])
        #expect(set.webDomains.map(\.name) == ["blocks.example.com"])
        #expect(agent.code(AlwaysAllowedRequest(user: "kid", services: ["nope"])) == .unknownCategory)
        let off = try agent.send(AlwaysAllowedRequest(user: "kid", remove: true, services: ["blocks"]))
        #expect(off.applications.isEmpty && off.webDomains.isEmpty)
    }

    @Test func theChildIsWarnedOnTheTimekprScheduleOrTheOneAGuardianChose() throws {
        let agent = try authorized()
        let games = ActivityItems(applications: [], applicationCategories: ["Game"], webDomains: [])
        _ = try agent.send(LimitRequest(user: "kid", items: games, dailySeconds: 3_600))
        func warnings() -> [[TimeInterval]?] {
            agent.agent.scheduler.entries(uid: Self.kid).map(\.monitor.activity.warnings)
        }
        #expect(warnings() == [[1_800, 600, 300, 60]])
        #expect(try agent.send(LockoutRequest(user: "kid")).warnings == [1_800, 600, 300, 60])
        // Chosen: the limits already set warn on it from now on, and new ones too.
        #expect(agent.code(LockoutRequest(user: "kid", warnings: [900]), as: Self.kid) == .notAllowed)
        #expect(agent.code(LockoutRequest(user: "kid", warnings: [30])) == .invalidArgument)
        #expect(agent.code(LockoutRequest(user: "kid", warnings: Array(repeating: 600, count: 9))) == .invalidArgument)
        let chosen = try agent.send(LockoutRequest(user: "kid", action: .logout, warnings: [300, 900]))
        #expect(chosen.warnings == [900, 300] && chosen.action == .logout)
        #expect(warnings() == [[900, 300]])
        _ = try agent.send(DowntimeRequest(user: "kid", from: DateComponents(hour: 21), to: DateComponents(hour: 7)))
        #expect(Set(warnings().map { $0 ?? [] }) == [[900, 300]])
        // The action alone changed: the warnings stay.
        #expect(try agent.send(LockoutRequest(user: "kid", action: .hold)).warnings == [900, 300])
        // None at all.
        #expect(try agent.send(LockoutRequest(user: "kid", warnings: [])).warnings.isEmpty)
    }

    @Test func freePeriodsAreLeftOutOfWhatTheLimitsCount() throws {
        let agent = try authorized()
        let games = ActivityItems(applications: [], applicationCategories: ["Game"], webDomains: [])
        _ = try agent.send(LimitRequest(user: "kid", items: games, dailySeconds: 3_600))
        #expect(agent.code(FreeTimeRequest(user: "kid", from: nil, to: nil)) == .invalidArgument)
        #expect(
            agent.code(
                FreeTimeRequest(user: "kid", from: DateComponents(hour: 16), to: DateComponents(hour: 18)), as: Self.kid
            )
                == .notAllowed)
        let set = try agent.send(
            FreeTimeRequest(
                user: "kid", from: DateComponents(hour: 16), to: DateComponents(hour: 18), weekdays: [2, 3, 4, 5, 6],
                shieldCategories: ["Game"]))
        #expect(set.monitors.contains { $0.builtIn == "free time (shielded: Game)" }, "\(set.monitors.map(\.builtIn))")
        let limit = try #require(
            agent.agent.scheduler.entries(uid: Self.kid).first { $0.monitor.activity.name.rawValue == "limit: Game" })
        let counted = agent.agent.scheduler.counted(limit.monitor)
        #expect(counted.freePeriods?.first?.weekdays == [2, 3, 4, 5, 6])
        // A second, by name; both are left out; one removed.
        _ = try agent.send(
            FreeTimeRequest(
                user: "kid", name: "saturday", from: DateComponents(hour: 9), to: DateComponents(hour: 11),
                weekdays: [7]))
        #expect(agent.agent.scheduler.counted(limit.monitor).freePeriods?.count == 2)
        _ = try agent.send(FreeTimeRequest(user: "kid", from: nil, to: nil, off: true))
        #expect(agent.agent.scheduler.counted(limit.monitor).freePeriods?.count == 1)
        #expect(agent.code(FreeTimeRequest(user: "kid", from: nil, to: nil, off: true)) == .invalidArgument)
    }

    @Test func aChildHasSeveralDowntimesEachWithItsOwnHoursAndStore() throws {
        let agent = try authorized()
        var nights = DowntimeRequest(
            user: "kid", from: DateComponents(hour: 21), to: DateComponents(hour: 7), weekdays: [1, 2, 3, 4, 5])
        nights.name = "school-nights"
        var weekend = DowntimeRequest(
            user: "kid", from: DateComponents(hour: 23), to: DateComponents(hour: 8), weekdays: [6, 7])
        weekend.name = "weekend"
        _ = try agent.send(nights)
        let both = try agent.send(weekend)
        #expect(Set(both.monitors.map(\.name)) == ["downtime: school-nights", "downtime: weekend"])
        var bad = weekend
        bad.name = "no spaces allowed"
        #expect(agent.code(bad) == .invalidArgument)
        var off = DowntimeRequest(user: "kid", from: nil, to: nil, off: true)
        off.name = "weekend"
        #expect(try agent.send(off).monitors.map(\.name) == ["downtime: school-nights"])
        #expect(agent.code(off) == .invalidArgument)
    }
}
