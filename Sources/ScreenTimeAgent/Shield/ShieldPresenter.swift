import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

/// Shows the child what a shield did, in the child's own sessions: the shield window over an app
/// it started (or brought to the front) that is frozen or refused, a small notice for a shielded
/// web domain it looked up, and what a guardian decided on an ask for more time; and shows
/// guardians logged in on the same PC each new ask.
///
/// Each window is `screentime-shield`, started through the launcher as the session's user (the
/// child, or a guardian), in that session (its display and cookie, or its Wayland socket). What it
/// shows is resolved here: the defaults, over which the configuration extension of the client
/// whose store shields the thing may put its own look (run as an extension: 2 s, no network;
/// anything wrong means the default, logged and shown in `status`). What the window says back (a
/// button pressed) is the child's word: an action extension answers it, or, by default, the
/// secondary button asks a guardian for more time (limited per child, as any ask).
///
/// One window per session at a time, and a session gets at most `launchesPerMinute` windows; a
/// notice for the same domain at most once a minute. Killing a window changes nothing: the app
/// stays frozen, and the next start or focus shows the shield again.
final class ShieldPresenter: Service, Sendable {
    static let extensionSeconds = 2
    static let launchesPerMinute = 20
    static let noticeSpacing: TimeInterval = 60
    static let noticeSeconds = 8

    struct OpenWindow: Sendable {
        var program: SessionProgram
        var token: String
        var kind: String
        var owner: UInt32
        var pid: Int32 { program.pid }
    }

    struct State: Sendable {
        var windows: [String: OpenWindow] = [:]
        var launches: [String: [Date]] = [:]
        var notices: [String: Date] = [:]
        /// Every window started and not ended yet: its user.
        var alive: [Int32: UInt32] = [:]
        /// The guardians' windows open for an ask, by its id.
        var askWindows: [Int64: [OpenWindow]] = [:]
    }

    private let events: ShieldEvents
    private let problems: ShieldProblems
    let database: StateDatabase
    private let launcher: ProgramLauncher?
    let program: ShieldProgram
    let usage: UsageTracker
    let policy: PolicyService
    let processes: ProcessShield?
    let logger: Logger
    let state = Mutex(State())
    let inspector = ProcessInspector()

    /// - Parameters:
    ///   - events: what it shows, as it happens (it alone takes from them).
    ///   - problems: where what went wrong with a user's shield extensions is written.
    ///   - usage: the user's graphical sessions, where windows open.
    ///   - policy: who is a guardian, and the asks and decisions the windows' buttons make.
    ///   - processes: what ends an app when its shield's action says so (none in tests).
    init(
        events: ShieldEvents, problems: ShieldProblems, database: StateDatabase, launcher: ProgramLauncher?,
        program: ShieldProgram, usage: UsageTracker, policy: PolicyService, processes: ProcessShield?, logger: Logger
    ) {
        self.events = events
        self.problems = problems
        self.database = database
        self.launcher = launcher
        self.program = program
        self.usage = usage
        self.policy = policy
        self.processes = processes
        self.logger = logger
    }

    /// Shows events on a thread of its own until the agent stops; then what it showed is told to
    /// close (the windows' input ends).
    func run() async throws {
        if program.exists {
            logger.info("shield windows from \(program.path)")
        } else {
            logger.error("no shield window: \(program.path) is missing; shielded apps are frozen without one")
        }
        Threads.start("screentime.show") { [self] in
            while let taken = events.take() {
                for event in taken { show(event) }
            }
        }
        // The window's program is hashed now, not at its first start: a child's program the
        // process shield has not hashed waits at exec until it is, and so would the first window.
        if let hashes = processes?.hashes {
            Threads.start("screentime.warm") { [path = program.path] in
                _ = try? hashes.sha256(of: path)
            }
        }
        try? await gracefulShutdown()
        events.finish()
        for window in state.withLock({ Array($0.windows.values) }) { window.program.endInput() }
    }

    func show(_ event: ShieldEvents.Event) {
        switch event {
        case .met(let thing), .inFront(let thing): show(thing)
        case .asked(let request): tellGuardians(request)
        case .decided(let request): tellChild(request)
        case .notice(let uid, let title, let subtitle, let icon):
            notify(uid, title: title, subtitle: subtitle, icon: icon)
        }
    }

    // MARK: the child's shield

    func show(_ thing: ShieldEncounter) {
        let now = Date()
        let sessions = usage.displays(of: thing.owner).filter { session in
            state.withLock { state in
                // A window killed a moment ago, whose end its reader has not seen yet, shows
                // nothing: a start of the app now gets a window of its own (run 66 saw the third
                // start after a kill show none, on a loaded machine).
                if let open = state.windows[session.key], !open.program.hasEnded {
                    // Showing it already; a notice never covers an app's shield; an app's shield
                    // replaces a notice or another app's.
                    if open.token == thing.token || thing.kind == .webDomain { return false }
                }
                if thing.kind == .webDomain,
                    let last = state.notices[session.key + " " + thing.token],
                    now.timeIntervalSince(last) < Self.noticeSpacing
                {
                    return false
                }
                let recent = (state.launches[session.key] ?? []).filter { now.timeIntervalSince($0) < 60 }
                state.launches[session.key] = recent
                return recent.count < Self.launchesPerMinute
            }
        }
        guard !sessions.isEmpty else { return }
        let (content, client) = resolve(thing)
        for session in sessions {
            if let open = state.withLock({ $0.windows[session.key] }) { retire(open) }
            guard mayOpen(for: thing.owner) else { return }
            launch(content, for: thing, in: session, client: client)
        }
    }

    /// The window's content: the defaults, with the look a configuration extension gave.
    func resolve(_ thing: ShieldEncounter) -> (ShieldWindowContent, ClientID?) {
        let member = try? policy.member(of: thing.owner)
        var look = ShieldConfigurationData(
            icon: Self.systemIcon(thing.icon), title: .init(text: "\(thing.name) is shielded"),
            subtitle: .init(
                text: Self.subtitle(thing, alwaysAllowed: (try? database.alwaysAllowedItems(uid: thing.owner)) ?? [])),
            primaryButtonLabel: .init(text: "OK"),
            secondaryButtonLabel: member == .child
                ? .init(text: thing.kind == .webDomain ? "Ask to allow" : "Ask for more time") : nil)
        let extensions = (try? database.shieldExtensions(uid: thing.owner)) ?? [:]
        let client = thing.stores.map(\.client).first { extensions[$0] != nil }
        if let client, let path = extensions[client]?.configuration {
            var input: [String: Any] = [
                thing.kind == .application ? "application" : "webDomain": [
                    "token": thing.token, "name": thing.name, "categories": thing.categories,
                    "id": thing.identity ?? "",
                ],
                "client": client.rawValue, "stores": thing.stores.map(\.name.rawValue),
            ]
            if thing.kind == .webDomain { input["webDomain"] = ["token": thing.token, "domain": thing.name] }
            switch runExtension(path, input: input, owner: thing.owner, what: "configuration") {
            case .success(let output):
                if let answer = try? JSONDecoder().decode(ShieldConfigurationData.self, from: Data(output)) {
                    let (clean, problems) = answer.sanitized()
                    for problem in problems { note(thing.owner, "\(client)'s configuration extension: \(problem)") }
                    look = Self.merged(look, clean)
                } else {
                    note(
                        thing.owner,
                        "\(client)'s configuration extension answered something that is not a ShieldConfiguration: \(ExtensionHost.printable(output))"
                    )
                }
            case .failure(let problem):
                note(thing.owner, "\(client)'s configuration extension: \(problem); the default shield shows")
            }
        }
        let hasAction = client.flatMap { extensions[$0]?.action } != nil
        var content = ShieldWindowContent(
            kind: thing.kind.rawValue, name: thing.name, configuration: look,
            closesAfter: thing.kind == .webDomain ? Self.noticeSeconds : nil)
        content.primaryCloses = !hasAction
        return (content, client)
    }

    /// Why, in a line: downtime, a limit or screen time used up (by day or week), or a guardian's
    /// choice; under downtime and screen time, what stays allowed.
    static func subtitle(_ thing: ShieldEncounter, alwaysAllowed: [StateDatabase.AllowedItem] = []) -> String {
        let stores = Set(thing.stores.map(\.description))
        let agent = { (name: String) in stores.contains("\(ClientID.agent)/\(name)") }
        let why: String
        if thing.stores.contains(where: \.isDowntime) {
            why = "It's downtime."
        } else if agent(StoreName.monthlyScreenTime.rawValue) {
            why = "This month's screen time is used up."
        } else if agent(StoreName.weeklyScreenTime.rawValue) {
            why = "This week's screen time is used up."
        } else if agent(StoreName.screenTime.rawValue) {
            why = "Today's screen time is used up."
        } else if agent(PolicyService.limitStore) {
            return "Today's time for it is used up."
        } else if agent(StoreName.weeklyLimits.rawValue) {
            return "This week's time for it is used up."
        } else if agent(PolicyService.limitStore + LimitPeriod.month.storeSuffix) {
            return "This month's time for it is used up."
        } else if thing.kind == .application {
            return "Your guardian chose to shield it for now."
        } else {
            switch thing.webReason {
            case .filter: return "The web filter your guardian chose blocks this site."
            case .safeSearch: return "Safe search is on, and this version of the search engine has none."
            default: return "Your guardian chose to shield this site."
            }
        }
        guard !alwaysAllowed.isEmpty else { return why }
        let names = alwaysAllowed.prefix(8).map(\.name).joined(separator: ", ")
        return why + " Always allowed: \(names)\(alwaysAllowed.count > 8 ? ", …" : "")."
    }

    /// An icon from a desktop entry: a theme's name, or a path in the system's data (not one a
    /// child's own entry could point anywhere). A file name where a name belongs (`Icon=xjump-icon.xpm`,
    /// as many older programs have it; a theme looks names up without extensions) is the file of
    /// that name in the system's `pixmaps` folders, where those programs put it, or else the name
    /// without its extension.
    static func systemIcon(
        _ icon: String?, pixmaps: [String] = ["/usr/share/pixmaps", "/usr/local/share/pixmaps"]
    )
        -> String?
    {
        guard let icon, !icon.isEmpty else { return nil }
        if !icon.hasPrefix("/") {
            if icon.contains("/") { return nil }
            guard let dot = icon.lastIndex(of: "."), dot != icon.startIndex,
                ["png", "xpm", "svg"].contains(icon[icon.index(after: dot)...].lowercased())
            else { return icon }
            for folder in pixmaps {
                if Files.isRegularFile(folder + "/" + icon) { return folder + "/" + icon }
            }
            return String(icon[..<dot])
        }
        let allowed = ["/usr/share/", "/usr/local/share/", "/var/lib/flatpak/", "/var/lib/snapd/"]
        return allowed.contains(where: icon.hasPrefix) && !icon.contains("/../") ? icon : nil
    }

    static func merged(
        _ base: ShieldConfigurationData, _ over: ShieldConfigurationData
    )
        -> ShieldConfigurationData
    {
        ShieldConfigurationData(
            backgroundColor: over.backgroundColor ?? base.backgroundColor, icon: over.icon ?? base.icon,
            title: over.title ?? base.title, subtitle: over.subtitle ?? base.subtitle,
            primaryButtonLabel: over.primaryButtonLabel ?? base.primaryButtonLabel,
            primaryButtonBackgroundColor: over.primaryButtonBackgroundColor ?? base.primaryButtonBackgroundColor,
            secondaryButtonLabel: over.secondaryButtonLabel)
    }

    func note(_ uid: UInt32, _ problem: String) {
        logger.warning("a shield extension did not answer well", metadata: ["uid": "\(uid)", "problem": "\(problem)"])
        problems.note(uid, problem)
    }

    /// Runs a shield extension (2 s, no network, as the extension account); its output, or why not.
    func runExtension(
        _ path: String, input: [String: Any], owner: UInt32, what: String
    ) -> Result<[UInt8], Failure> {
        if let problem = ExtensionProgram.problem(with: path) { return .failure(Failure(problem)) }
        guard let launcher, let client = launcher.client, let account = launcher.extensionAccount else {
            return .failure(Failure("the agent cannot start extensions (no launcher or extension account)"))
        }
        guard let bytes = JSONValue(input)?.serialized() else {
            return .failure(Failure("its input could not be written"))
        }
        let request = LaunchRequest(
            kind: .extension, program: path,
            environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/"],
            uid: account.uid, gid: account.gid, network: .none,
            limits: .init(
                cpuSeconds: Self.extensionSeconds, memoryBytes: ExtensionHost.memoryBytes, processes: 64,
                openFiles: 256, wallSeconds: Self.extensionSeconds))
        let outcome: ExtensionProcess.Outcome
        do {
            outcome = try ExtensionProcess.run(
                request, launcher: client, input: Array(bytes) + [10], outputLimit: 64 << 10, channel: nil)
        } catch {
            return .failure(Failure("it could not start: \(error.message)"))
        }
        // Slow ones at info: what made a window late is then in the log.
        logger.log(
            level: outcome.seconds > 1 ? .info : .debug, "a shield extension ran",
            metadata: [
                "what": "\(what)", "seconds": "\(outcome.seconds)", "launch": "\(outcome.launchSeconds)",
                "status": "\(outcome.status.map(String.init) ?? "none")",
            ])
        if outcome.flooded { return .failure(Failure("it wrote more than 64 KiB and was stopped")) }
        if outcome.timedOut {
            return .failure(Failure("it took longer than \(Self.extensionSeconds) s and was stopped"))
        }
        guard outcome.status == 0 else {
            let status = outcome.status.map {
                $0 > 128 ? "was killed by signal \($0 - 128)" : "exited with status \($0)"
            }
            return .failure(Failure("it \(status ?? "did not end")"))
        }
        return .success(outcome.output)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

}
