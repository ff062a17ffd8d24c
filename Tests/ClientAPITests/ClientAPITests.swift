import DeviceActivity
import FamilyControls
import Foundation
import Glibc
import LinuxSupport
import Logging
import ManagedSettings
import ManagedSettingsUI
import ScreenTimeClient
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

/// The real agent's policy service, scheduler and control server in this process (the test
/// kit's), serving a socket in a temporary directory; the user running the tests is "mum", a
/// guardian — no root needed. "kid" is authorized as a child.
extension InProcessAgent {
    static func serving() async throws -> InProcessAgent {
        let agent = try InProcessAgent(accounts: FamilyAccounts(mumUID: getuid()))
        try await agent.serve()
        _ = try ScreenTimeClient(socket: agent.socket).send(AuthorizeRequest(user: "kid", member: .child))
        return agent
    }

    var kid: UInt32 { accounts.uid("kid") }
}

@Suite(.threadsOfTheirOwn, .serialized) struct ClientAPITests {
    let agent: InProcessAgent

    init() async throws { agent = try await InProcessAgent.serving() }

    @Test func aStoreWritesAreInForceAndReadBackAsThisClientSetThem() throws {
        let store = ManagedSettingsStore(named: .school, user: "kid", socket: agent.socket)
        let chess = agent.app("org.gnome.Chess")
        store.shield.applications = [chess]
        #expect(store.lastError == nil, "\(String(describing: store.lastError))")
        #expect(store.shield.applications == [chess])
        store.shield.applicationCategories = .all(except: [chess])
        #expect(store.shield.applicationCategories == .all(except: [chess]))
        store.webContent.blockedByFilter = .specific([WebDomain(domain: "example.com")])
        #expect(store.webContent.blockedByFilter == .specific([WebDomain(domain: "example.com")]))
        // nil clears a setting.
        store.shield.applications = nil
        #expect(store.shield.applications == nil)
        // Apple's limit: 50 tokens a setting; more is refused and changes nothing.
        let many = Set((0..<51).map { agent.app("org.example.App\($0)") })
        store.shield.applications = many
        #expect(store.lastError != nil)
        #expect(store.shield.applications == nil)
        // In force: the agent's merged policy for kid holds it.
        let status = try ScreenTimeClient(socket: agent.socket).send(StatusRequest(user: "kid"))
        #expect(status.effective.applicationCategoryShields.contains { $0.policy == "all" })
        store.clearAllSettings()
        #expect(try store.read().isEmpty)
    }

    @Test func applesCodeNamesCatchesAndComparesTheErrorsItKnows() throws {
        let center = DeviceActivityCenter(user: "kid", socket: agent.socket)
        let short = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 8, minute: 0), intervalEnd: DateComponents(hour: 8, minute: 10),
            repeats: true)
        #expect(startMonitoringAsApple(center, schedule: short) == "too short")
        #expect(center.lastErrorMessage?.contains("15 minutes") == true, "\(center.lastErrorMessage ?? "nil")")
        let day = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 8, minute: 0), intervalEnd: DateComponents(hour: 20, minute: 0),
            repeats: true)
        #expect(startMonitoringAsApple(center, schedule: day) == "started")
        #expect(center.lastErrorMessage == nil)
        for index in 1..<20 {
            try center.startMonitoring(DeviceActivityName("a\(index)"), during: day)
        }
        // The 21st: Apple's error, caught by its case.
        center.stopMonitoring([.daily])
        try center.startMonitoring(DeviceActivityName("a20"), during: day)
        #expect(startMonitoringAsApple(center, schedule: day) == "too many")
        center.stopMonitoring()
        // Another refusal is not one of Apple's five: the agent's own error, its words kept.
        let nobody = DeviceActivityCenter(user: "nobody-by-that-name", socket: agent.socket)
        #expect(throws: ScreenTimeIPCError.self) { try nobody.startMonitoring(.daily, during: day) }
        #expect(nobody.lastErrorMessage?.contains("nobody-by-that-name") == true, "\(nobody.lastErrorMessage ?? "nil")")
    }

    /// A limit by weekday from a client: Apple's way (a monitor on Saturdays, the weekday in the
    /// schedule's components) and, in one event, `DeviceActivityEvent.allowance`, which the
    /// center sends and the agent keeps; a week's budget is a schedule from Monday to Monday.
    @Test func aClientSetsLimitsByWeekdayAndByWeek() throws {
        let center = DeviceActivityCenter(user: "kid", socket: agent.socket)
        defer { center.stopMonitoring() }
        let chess = agent.app("org.gnome.Chess")
        let saturdays = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 0, minute: 0, weekday: 7),
            intervalEnd: DateComponents(hour: 23, minute: 59, weekday: 7), repeats: true)
        try center.startMonitoring(
            DeviceActivityName("saturday"), during: saturdays,
            events: [.init("chess"): DeviceActivityEvent(applications: [chess], threshold: DateComponents(hour: 3))])
        var byDay = DeviceActivityEvent(applications: [chess], threshold: DateComponents(hour: 3))
        byDay.allowance = try DailyAllowance.parse("mon-fri=1h,sat,sun=3h")
        let everyDay = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 0, minute: 0), intervalEnd: DateComponents(hour: 23, minute: 59),
            repeats: true)
        try center.startMonitoring(DeviceActivityName("days"), during: everyDay, events: [.init("chess"): byDay])
        let week = DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 0, minute: 0, weekday: 2),
            intervalEnd: DateComponents(hour: 0, minute: 0, weekday: 2), repeats: true)
        try center.startMonitoring(
            DeviceActivityName("week"), during: week,
            events: [.init("chess"): DeviceActivityEvent(applications: [chess], threshold: DateComponents(hour: 10))])
        let listed = try ScreenTimeClient(socket: agent.socket).send(MonitorListRequest(user: "kid")).monitors
        let days = try #require(listed.first { $0.name == "days" })
        #expect(days.events.first?.allowance == "mon,tue,wed,thu,fri=1h,sat,sun=3h")
        #expect(listed.first { $0.name == "saturday" }?.schedule.intervalStart.weekday == 7)
        #expect(listed.first { $0.name == "week" }?.events.first?.thresholdSeconds == 36_000)
        // An allowance that is not a week's days is refused, in the center's words too.
        var wrong = byDay
        wrong.allowance = DailyAllowance(seconds: [9: 60])
        #expect(throws: (any Error).self) {
            try center.startMonitoring(DeviceActivityName("days"), during: everyDay, events: [.init("chess"): wrong])
        }
        #expect(center.lastErrorMessage?.contains("allowance") == true, "\(center.lastErrorMessage ?? "nil")")
    }

    @Test func aStoresGroupsAreValuesAndASetWritesOnlyWhatChanged() throws {
        let store = ManagedSettingsStore(named: .school, user: "kid", socket: agent.socket)
        let chess = agent.app("org.gnome.Chess")
        store.shield.applications = [chess]
        store.shield.webDomains = [agent.minter.token(for: try DomainName("youtube.com"))]
        // A copy of the group changes nothing until it is set back.
        var shield = store.shield
        shield.applications = nil
        #expect(store.shield.applications == [chess])
        store.shield = shield
        #expect(store.shield.applications == nil)
        #expect(store.shield.webDomains?.count == 1)
        // A store whose read fails (no agent there) writes nothing over what the agent holds.
        let elsewhere = ManagedSettingsStore(named: .school, user: "kid", socket: agent.directory.path + "/none.sock")
        elsewhere.shield.applications = [chess]
        #expect(elsewhere.lastError != nil)
        #expect(store.shield.webDomains?.count == 1)
        // An application named by its bundle identifier gets its token from the agent when written
        // (xterm's entry, which the test packages install); one the agent does not know is refused
        // and changes nothing.
        store.application.blockedApplications = [Application(bundleIdentifier: "org.gnome.Chess")]
        #expect("\(String(describing: store.lastError))".contains("unknownApplication"))
        #expect(try store.read().application.blockedApplications == nil)
        let xterm = agent.app("debian-xterm")
        store.application.blockedApplications = [Application(bundleIdentifier: "debian-xterm")]
        #expect(store.lastError == nil, "\(String(describing: store.lastError))")
        #expect(try store.read().application.blockedApplications == [xterm])
        #expect(store.application.blockedApplications?.compactMap(\.token) == [xterm])
        #expect(store.shield.webDomains?.count == 1)
        // A filter names domains; a WebDomain with only a token is refused and changes nothing.
        store.webContent.blockedByFilter = .specific([
            WebDomain(token: agent.minter.token(for: try DomainName("a.com")))
        ])
        #expect(store.lastError != nil)
        #expect(try store.read().webContent.blockedByFilter == nil)
        store.clearAllSettings()
    }

    /// During a grant, what a reply and `status` call effective is what the shields enforce (the
    /// publisher's snapshot): both come from `StoreCollection.policyInForce`.
    @Test func repliesStatusAndEnforcementAgreeDuringAGrant() throws {
        let store = ManagedSettingsStore(named: .school, user: "kid", socket: agent.socket)
        let chess = agent.app("org.gnome.Chess")
        let mines = agent.app("org.gnome.Mines")
        store.shield.applications = [chess, mines]
        // The child's ask (as the agent records it), granted by a guardian through the socket.
        let ask = try agent.database.addTimeRequest(
            StateDatabase.TimeRequest(
                uid: agent.kid, kind: .application, token: chess.base64, name: "org.gnome.Chess", minutes: 10,
                state: .pending, createdAt: Date()))
        let client = ScreenTimeClient(socket: agent.socket)
        let granted = try client.send(DecideRequest(id: try #require(ask.id), grant: true))
        #expect(granted.state == .granted)
        let enforced = try #require(agent.publisher.publish().users[agent.kid]?.policy)
        #expect(enforced.applicationsShieldedByToken[chess] == nil)
        #expect(enforced.applicationsShieldedByToken[mines] != nil)
        let status = try client.send(StatusRequest(user: "kid")).effective
        let read = try client.send(StoreReadRequest(StoreTarget(user: "kid", client: nil, store: "school"))).effective
        #expect(status == PolicyService.report(enforced))
        #expect(read == status)
        #expect(status.shieldedApplications.map(\.token) == [mines.base64])
        store.clearAllSettings()
    }

    @Test func oneClientsStoresAreApartFromAnothers() throws {
        let store = ManagedSettingsStore(named: .school, user: "kid", socket: agent.socket)
        store.shield.webDomains = [agent.minter.token(for: try DomainName("youtube.com"))]
        let client = ScreenTimeClient(socket: agent.socket)
        // This program's own, read as its client; another client's store of the same name is empty.
        let other = try client.send(
            StoreReadRequest(StoreTarget(user: "kid", client: "org.example.Other", store: "school")))
        #expect(other.store.settings.isEmpty)
        let status = try client.send(StatusRequest(user: "kid"))
        let mine = try #require(status.stores.first { $0.name == "school" })
        #expect(mine.client != "screentime" && mine.client != "org.example.Other")
        // Clearing the other's leaves this one.
        _ = try client.send(ClearRequest(StoreTarget(user: "kid", client: "org.example.Other", store: "school")))
        #expect(store.shield.webDomains?.count == 1)
    }

    @Test func deviceActivityCenterStartsListsAndStopsMonitoringWithApplesErrors() throws {
        let center = DeviceActivityCenter(user: "kid", socket: agent.socket)
        let schedule = DeviceActivity.DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 16, minute: 0), intervalEnd: DateComponents(hour: 18, minute: 0),
            repeats: true, warningTime: DateComponents(minute: 5))
        let chess = agent.app("org.gnome.Chess")
        let event = DeviceActivity.DeviceActivityEvent(applications: [chess], threshold: DateComponents(minute: 30))
        try center.startMonitoring(.daily, during: schedule, events: [.encouraged: event])
        #expect(center.activities == [.daily])
        #expect(center.schedule(for: .daily) == schedule)
        let events = center.events(for: .daily)
        #expect(events[.encouraged]?.applications == [chess])
        #expect(events[.encouraged]?.threshold == DateComponents(minute: 30))
        // Apple's errors.
        let short = DeviceActivity.DeviceActivitySchedule(
            intervalStart: DateComponents(hour: 8, minute: 0), intervalEnd: DateComponents(hour: 8, minute: 10),
            repeats: true)
        #expect {
            try center.startMonitoring(DeviceActivity.DeviceActivityName("short"), during: short)
        } throws: { error in
            error as? DeviceActivityCenter.MonitoringError == .intervalTooShort
        }
        for index in 1..<20 {
            try center.startMonitoring(DeviceActivity.DeviceActivityName("a\(index)"), during: schedule)
        }
        #expect {
            try center.startMonitoring(DeviceActivity.DeviceActivityName("one too many"), during: schedule)
        } throws: { error in
            error as? DeviceActivityCenter.MonitoringError == .excessiveActivities
        }
        center.stopMonitoring()
        #expect(center.activities.isEmpty)
    }

    @Test func authorizationIsNotDeterminedUntilARequestSucceeds() async throws {
        let center = AuthorizationCenter(socket: agent.socket)
        #expect(center.authorizationStatus == .notDetermined)
        // A request that fails leaves it undetermined, with Apple's error type.
        await #expect(throws: FamilyControlsError.invalidArgument) {
            try await center.requestAuthorization(for: .child, user: "nobody-by-that-name")
        }
        #expect(center.lastErrorMessage?.contains("nobody-by-that-name") == true, "\(center.lastErrorMessage ?? "nil")")
        #expect(center.authorizationStatus == .notDetermined)
        // A guardian authorizes a child by name.
        try await center.requestAuthorization(for: .child, user: "kid")
        #expect(center.authorizationStatus == .approved)
    }

    @Test func thePickerMintsTheSameTokensAsTheCommandLine() throws {
        let picker = FamilyActivityPicker(user: "kid", socket: agent.socket)
        let selection = try picker.selection(domains: ["www.YouTube.com"])
        #expect(selection.webDomainTokens == [agent.minter.token(for: try DomainName("youtube.com"))])
        #expect(throws: ScreenTimeIPCError.self) { try picker.selection(categories: ["NotACategory"]) }
    }
}

/// The examples' extensions, run as the agent runs them: what is shielded on standard input, the
/// answer on standard output.
@Suite struct ExtensionEntryPointTests {
    static let binaries: String = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path

    private func run(_ program: String, input: String) throws -> (status: Int32, output: String) {
        let outcome = try ChildProcess.run(
            Self.binaries + "/" + program, [], environment: ["PATH=/usr/bin:/bin"], input: Array(input.utf8))
        return (outcome.status, String(decoding: outcome.output, as: UTF8.self))
    }

    @Test func aConfigurationExtensionAnswersAShieldConfiguration() throws {
        let token = try TokenMinter(secret: [UInt8](repeating: 1, count: 32)).token(for: .desktopEntry("a.b")).base64
        let answer = try run(
            "homework-shield",
            input: #"{"application": {"token": "\#(token)", "name": "Chess", "id": "org.gnome.Chess"}}"#)
        #expect(answer.status == 0)
        let configuration = try JSONDecoder().decode(ShieldConfigurationData.self, from: Data(answer.output.utf8))
        #expect(configuration.title?.text == "Homework first")
        #expect(configuration.subtitle?.text == "Chess waits until homework is done.")
        #expect(configuration.backgroundColor == "#204a87")
        #expect(configuration.sanitized().problems.isEmpty)
        // What it cannot read it says so, and fails.
        #expect(try run("homework-shield", input: "not json").status != 0)
    }

    @Test func anActionExtensionAnswersItsResponse() throws {
        let token = try TokenMinter(secret: [UInt8](repeating: 1, count: 32)).token(for: .desktopEntry("a.b")).base64
        let secondary = try run(
            "homework-action", input: #"{"action": "secondaryButtonPressed", "application": {"token": "\#(token)"}}"#)
        #expect(secondary.status == 0 && secondary.output.trimmingCharacters(in: .whitespacesAndNewlines) == "defer")
        let primary = try run(
            "homework-action", input: #"{"action": "primaryButtonPressed", "application": {"token": "\#(token)"}}"#)
        #expect(primary.output.trimmingCharacters(in: .whitespacesAndNewlines) == "none")
    }

    @Test func aReportExtensionRendersTheUsage() throws {
        let report = UsageReport(
            user: UserSummary(name: "alice", uid: 1001), from: Date(timeIntervalSince1970: 1_900_000_000),
            to: Date(timeIntervalSince1970: 1_900_604_800), segmentation: .daily, timeZone: "UTC", totalSeconds: 5_400,
            applications: [
                .init(id: "org.gnome.Chess", name: "Chess", token: "x", seconds: 5_400, categories: ["Game"])
            ],
            categories: [], webDomains: [], segments: [], names: true)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let rendered = try run("worklog-report", input: String(decoding: try encoder.encode(report), as: UTF8.self))
        #expect(rendered.status == 0)
        #expect(
            rendered.output.contains("1 h 30 min in front") && rendered.output.contains("Chess"), "\(rendered.output)")
    }
}
