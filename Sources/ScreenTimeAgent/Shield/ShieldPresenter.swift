import Foundation
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
    private let database: StateDatabase
    private let launcher: ProgramLauncher?
    private let program: ShieldProgram
    private let usage: UsageTracker
    private let policy: PolicyService
    private let processes: ProcessShield?
    private let logger: Logger
    private let state = Mutex(State())
    private let inspector = ProcessInspector()

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
        let thread = Thread { [self] in
            nameCurrentThread("screentime.show")
            while let taken = events.take() {
                for event in taken { show(event) }
            }
        }
        thread.start()
        // The window's program is hashed now, not at its first start: a child's program the
        // process shield has not hashed waits at exec until it is, and so would the first window.
        if let hashes = processes?.hashes {
            let warm = Thread { [path = program.path] in
                nameCurrentThread("screentime.warm")
                _ = try? hashes.sha256(of: path)
            }
            warm.start()
        }
        try? await gracefulShutdown()
        events.finish()
        for window in state.withLock({ Array($0.windows.values) }) { window.program.endInput() }
    }

    private func show(_ event: ShieldEvents.Event) {
        switch event {
        case .met(let thing), .inFront(let thing): show(thing)
        case .asked(let request): tellGuardians(request)
        case .decided(let request): tellChild(request)
        case .notice(let uid, let title, let subtitle, let icon):
            notify(uid, title: title, subtitle: subtitle, icon: icon)
        }
    }

    // MARK: the child's shield

    private func show(_ thing: ShieldedThing) {
        let now = Date()
        let sessions = usage.displays(of: thing.owner).filter { session in
            state.withLock { state in
                if let open = state.windows[session.key] {
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
    private func resolve(_ thing: ShieldedThing) -> (ShieldWindowContent, ClientID?) {
        let member = try? policy.member(of: thing.owner)
        var look = ShieldConfigurationData(
            icon: Self.systemIcon(thing.icon), title: .init(text: "\(thing.name) is shielded"),
            subtitle: .init(text: Self.subtitle(thing)), primaryButtonLabel: .init(text: "OK"),
            secondaryButtonLabel: member == .child ? .init(text: "Ask for more time") : nil)
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

    private static func subtitle(_ thing: ShieldedThing) -> String {
        let stores = Set(thing.stores.map(\.description))
        if stores.contains(StoreKey.downtime.description) { return "It's downtime." }
        if stores.contains("\(ClientID.agent)/\(PolicyService.limitStore)") { return "Today's time for it is used up." }
        return thing.kind == .application
            ? "Your guardian chose to shield it for now." : "Your guardian chose to shield this site."
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

    private static func merged(
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

    private func note(_ uid: UInt32, _ problem: String) {
        logger.warning("a shield extension did not answer well", metadata: ["uid": "\(uid)", "problem": "\(problem)"])
        problems.note(uid, problem)
    }

    /// Runs a shield extension (2 s, no network, as the extension account); its output, or why not.
    private func runExtension(
        _ path: String, input: [String: Any], owner: UInt32, what: String
    ) -> Result<[UInt8], Failure> {
        if let problem = ExtensionProgram.problem(with: path) { return .failure(Failure(problem)) }
        guard let launcher, let client = launcher.client, let account = launcher.extensionAccount else {
            return .failure(Failure("the agent cannot start extensions (no launcher or extension account)"))
        }
        guard let bytes = try? JSONSerialization.data(withJSONObject: input, options: [.sortedKeys]) else {
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

    // MARK: windows

    /// Starts the window in a session as the session's user; a thread reads what it says.
    private func launch(
        _ content: ShieldWindowContent, for thing: ShieldedThing,
        in session: (key: String, kind: SessionKind, environment: [String: String]),
        client: ClientID?
    ) {
        guard let started = start(content, as: thing.owner, environment: session.environment, key: session.key) else {
            return
        }
        state.withLock { state in
            state.launches[session.key, default: []].append(Date())
            if thing.kind == .webDomain { state.notices[session.key + " " + thing.token] = Date() }
        }
        logger.info(
            "shield shown",
            metadata: [
                "session": "\(session.key)", "what": "\(thing.kind.rawValue) \(thing.name)", "pid": "\(started.pid)",
            ])
        let window = OpenWindow(program: started, token: thing.token, kind: thing.kind.rawValue, owner: thing.owner)
        state.withLock { $0.windows[session.key] = window }
        let thread = Thread { [self] in
            nameCurrentThread("screentime.win")
            listen(window, thing: thing, client: client, closesItself: content.primaryCloses)
        }
        thread.start()
    }

    /// Launches `screentime-shield` as `uid` with `content` on its first line.
    private func start(
        _ content: ShieldWindowContent, as uid: UInt32, environment session: [String: String], key: String
    ) -> SessionProgram? {
        guard let started = program.start(as: uid, session: session, key: key) else { return nil }
        // What it shows is a line the pipe holds whole (names and texts are bounded), written
        // without waiting: a window that does not read cannot hold the agent.
        let line = Array((try? JSONEncoder().encode(content)) ?? Data())
        if line.count >= Self.lineLimit || !started.tell(line) {
            logger.error(
                "the shield window could not be given what to show",
                metadata: ["session": "\(key)", "bytes": "\(line.count)"])
            program.stop(started)
        }
        state.withLock { $0.alive[started.pid] = uid }
        return started
    }

    /// The longest first line a window is given (a pipe holds 64 KiB).
    static let lineLimit = 32 << 10

    /// How many windows of one user may be open at once (shields, notices, asks).
    static let windowsPerUser = 8

    /// Whether another window may be opened for the user now.
    private func mayOpen(for uid: UInt32) -> Bool {
        let open = state.withLock { $0.alive.values.filter { $0 == uid }.count }
        if open >= Self.windowsPerUser {
            logger.warning("too many shield windows open for a user; not opening another", metadata: ["uid": "\(uid)"])
            return false
        }
        return true
    }

    /// A window's thread ended: it is no longer counted.
    private func ended(_ window: OpenWindow) {
        state.withLock { _ = $0.alive.removeValue(forKey: window.pid) }
    }

    /// Asks a window to close; one that has not ended 3 s later (stopped by the child, say) is
    /// killed by the launcher, which started it (its pid is not anyone else's until it is reaped).
    private func retire(_ window: OpenWindow) {
        send(ShieldWindowUpdate(close: true), to: window)
        DispatchQueue.global().asyncAfter(deadline: .now() + 3) { [self] in
            if state.withLock({ $0.alive[window.pid] != nil }) { program.stop(window.program) }
        }
    }

    private func send(_ update: ShieldWindowUpdate, to window: OpenWindow) {
        if update.close == true { closing(window) }
        // A window that stopped reading (the child stopped it) cannot hold the agent: the pipe's
        // buffer takes many such lines, and a full one drops this.
        window.program.tell(Array((try? JSONEncoder().encode(update)) ?? Data()))
    }

    /// A window closing (its OK pressed, or told to close) or ended shows its app's shield no
    /// more: the app started again shows a new window, not nothing while the closed one's program
    /// ends (a moment, longer on a loaded machine). It is still counted among the user's open
    /// windows until it has ended.
    private func closing(_ window: OpenWindow) {
        state.withLock { state in
            for (key, open) in state.windows where open.pid == window.pid { state.windows[key] = nil }
        }
    }

    /// Reads a window's lines until it ends; each button pressed is acted on. `closesItself`: its
    /// primary button closes it.
    private func listen(_ window: OpenWindow, thing: ShieldedThing, client: ClientID?, closesItself: Bool) {
        defer {
            window.program.close()
            closing(window)
            ended(window)
        }
        var presses = 0
        // Lines only: past 64 KiB without one, the window is not listened to any more.
        while case .line(let line) = window.program.readLine(limit: 65_536) {
            guard let event = try? JSONDecoder().decode(ShieldWindowEvent.self, from: Data(line)),
                ["primary", "secondary"].contains(event.pressed)
            else { continue }
            // The child's word: a few presses a window are heard, no more.
            presses += 1
            if presses > 20 { continue }
            if closesItself, event.pressed == "primary" { closing(window) }
            pressed(event.pressed, window: window, thing: thing, client: client)
        }
    }

    private func pressed(_ button: String, window: OpenWindow, thing: ShieldedThing, client: ClientID?) {
        if thing.kind == .application, let client,
            let path = (try? database.shieldExtensions(uid: thing.owner))?[client]?.action
        {
            let input: [String: Any] = [
                "action": button == "primary" ? "primaryButtonPressed" : "secondaryButtonPressed",
                "application": ["token": thing.token, "name": thing.name, "id": thing.identity ?? ""],
                "client": client.rawValue,
            ]
            var response = "none"
            switch runExtension(path, input: input, owner: thing.owner, what: "action") {
            case .success(let output):
                let text = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let word =
                    (try? JSONDecoder().decode(String.self, from: Data(text.utf8)))
                    ?? (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8)))?["response"] ?? text
                if ["close", "defer", "none"].contains(word) {
                    response = word
                } else {
                    note(
                        thing.owner,
                        "\(client)'s action extension answered '\(ExtensionHost.printable(output))', not close, defer or none"
                    )
                }
            case .failure(let problem):
                note(thing.owner, "\(client)'s action extension: \(problem); nothing is done")
            }
            logger.info(
                "shield action", metadata: ["what": "\(thing.name)", "button": "\(button)", "response": "\(response)"])
            switch response {
            case "close":
                let killed = processes?.endApplication(owner: thing.owner, token: thing.token) ?? 0
                logger.notice(
                    "shielded app closed by its shield's action",
                    metadata: ["what": "\(thing.name)", "processes": "\(killed)"])
                send(ShieldWindowUpdate(close: true), to: window)
            case "defer":
                send(ShieldWindowUpdate(message: "Not now."), to: window)
            default:
                if button == "primary" { send(ShieldWindowUpdate(close: true), to: window) }
            }
            return
        }
        guard button == "secondary" else { return }
        // The default secondary button: ask a guardian for 15 more minutes, as the child.
        let context = RequestContext(peer: PeerCredentials(pid: 0, uid: thing.owner, gid: 0))
        do {
            let asked = try policy.ask(AskRequest(token: thing.token, minutes: 15), context)
            send(ShieldWindowUpdate(message: "Asked a guardian for \(asked.minutes) more minutes."), to: window)
        } catch let error as ScreenTimeIPCError {
            send(ShieldWindowUpdate(message: error.message), to: window)
        } catch {
            send(ShieldWindowUpdate(message: "The ask could not be made."), to: window)
        }
    }

    // MARK: asks and decisions

    /// A decision reaches the child: the open shield says it (and closes when the shield is
    /// lifted), or a notice does.
    private func tellChild(_ request: TimeRequestReport) {
        guard request.state != .pending else { return }
        // Decided: the guardians' windows for it go (a decision is not made twice by windows).
        for window in state.withLock({ $0.askWindows.removeValue(forKey: request.id) ?? [] }) { retire(window) }
        let what = request.application ?? request.webDomain ?? "it"
        let text =
            request.state == .granted
            ? "A guardian granted \(request.minutes) more minutes of \(what)."
            : "A guardian said no to more time on \(what)."
        var told = false
        for session in usage.displays(of: request.uid) {
            if let open = state.withLock({ $0.windows[session.key] }), open.token == request.token {
                send(ShieldWindowUpdate(message: text), to: open)
                told = true
            }
        }
        if !told {
            notify(
                request.uid, title: request.state == .granted ? "More time: \(what)" : "No more time: \(what)",
                subtitle: text, icon: request.state == .granted ? "emblem-ok-symbolic" : "dialog-information")
        }
    }

    /// A notice in each of the user's sessions, closing by itself.
    private func notify(_ uid: UInt32, title: String, subtitle: String, icon: String) {
        let content = ShieldWindowContent(
            kind: "notice", name: title,
            configuration: ShieldConfigurationData(
                icon: icon, title: .init(text: title), subtitle: .init(text: subtitle),
                primaryButtonLabel: .init(text: "OK")),
            closesAfter: Self.noticeSeconds)
        for session in usage.displays(of: uid) {
            guard mayOpen(for: uid),
                let started = start(content, as: uid, environment: session.environment, key: session.key)
            else { continue }
            let window = OpenWindow(program: started, token: "notice", kind: "notice", owner: uid)
            let thread = Thread { [self] in
                nameCurrentThread("screentime.win")
                started.drain()
                started.close()
                ended(window)
            }
            thread.start()
        }
    }

    /// Each guardian logged in on this PC (a person's account in the guardian group, with a
    /// program in a graphical session) gets the ask in a window of their own: grant or deny.
    private func tellGuardians(_ request: TimeRequestReport) {
        var sessions: [String: (uid: UInt32, environment: [String: String])] = [:]
        var looked: Set<String> = []
        var guardians: [UInt32: [Int32]] = [:]
        let pids = inspector.pids()
        for pid in pids {
            guard let uid = inspector.status(pid: pid)?.uid, uid >= LaunchRequest.firstPersonUID, uid < 60_000,
                policy.isGuardian(PeerCredentials(pid: pid, uid: uid, gid: 0))
            else { continue }
            guardians[uid, default: []].append(pid)
        }
        for (uid, mine) in guardians.sorted(by: { $0.key < $1.key }) {
            for pid in mine where sessions.count < 4 {
                let environment = inspector.sessionEnvironment(pid: pid)
                var found: [String: String] = [:]
                if let display = environment["DISPLAY"], X11Display(display) != nil {
                    found["DISPLAY"] = display
                    if let cookie = environment["XAUTHORITY"] { found["XAUTHORITY"] = cookie }
                } else if let wayland = environment["WAYLAND_DISPLAY"], let runtime = environment["XDG_RUNTIME_DIR"] {
                    found = ["WAYLAND_DISPLAY": wayland, "XDG_RUNTIME_DIR": runtime]
                } else {
                    continue
                }
                let key = "\(uid) \(found["DISPLAY"] ?? found["WAYLAND_DISPLAY"] ?? "")"
                // Each display looked at once; it must be the guardian's own, not one a child runs
                // (a guardian's `su` in a child's terminal, a display name left over): there a child
                // would press the guardian's buttons.
                guard sessions[key] == nil, looked.insert(key).inserted else { continue }
                if Self.isServed(by: uid, found, programs: mine) {
                    sessions[key] = (uid, found)
                } else {
                    logger.notice(
                        "a guardian's display is not served by them: no window there",
                        metadata: ["uid": "\(uid)", "display": "\(key)"])
                }
            }
        }
        let what = request.application ?? request.webDomain ?? "something"
        let content = ShieldWindowContent(
            kind: "request", name: what,
            configuration: ShieldConfigurationData(
                icon: "dialog-question", title: .init(text: "\(request.user) asks for \(request.minutes) more minutes"),
                subtitle: .init(text: "of \(what)" + (request.note.map { ": “\($0)”" } ?? "")),
                primaryButtonLabel: .init(text: "Grant \(request.minutes) minutes"),
                secondaryButtonLabel: .init(text: "Deny")))
        for (key, session) in sessions {
            guard mayOpen(for: session.uid),
                let started = start(content, as: session.uid, environment: session.environment, key: key)
            else { continue }
            let window = OpenWindow(program: started, token: request.token, kind: "request", owner: session.uid)
            state.withLock { $0.askWindows[request.id, default: []].append(window) }
            let thread = Thread { [self] in
                nameCurrentThread("screentime.win")
                decide(window, request: request)
            }
            thread.start()
        }
    }

    /// Whether a display is served by `uid`: their own X server or compositor, or root's X server
    /// (a display manager's) with one of their `programs` as its client.
    static func isServed(by uid: UInt32, _ environment: [String: String], programs: [Int32]) -> Bool {
        if let name = environment["DISPLAY"], let display = X11Display(name) {
            guard let server = try? X11FocusWatch.server(of: display, timeout: .seconds(1)) else { return false }
            if server.uid == uid { return true }
            guard server.uid == 0 else { return false }
            return (try? UnixPeers.clients(of: server.pid, among: programs, listening: display.unixAddresses))?
                .isEmpty == false
        }
        if let name = environment["WAYLAND_DISPLAY"], let runtime = environment["XDG_RUNTIME_DIR"] {
            let path = name.hasPrefix("/") ? name : runtime + "/" + name
            return (try? UnixPeers.server(of: path, timeout: .seconds(1)))?.uid == uid
        }
        return false
    }

    /// A guardian's window: the first button pressed decides, as that guardian.
    private func decide(_ window: OpenWindow, request: TimeRequestReport) {
        defer {
            window.program.close()
            state.withLock { state in
                state.askWindows[request.id]?.removeAll { $0.pid == window.pid }
                if state.askWindows[request.id]?.isEmpty == true { state.askWindows[request.id] = nil }
            }
            ended(window)
        }
        while case .line(let line) = window.program.readLine(limit: 4096) {
            guard let event = try? JSONDecoder().decode(ShieldWindowEvent.self, from: Data(line)) else { continue }
            let grant = event.pressed == "primary"
            let context = RequestContext(peer: PeerCredentials(pid: 0, uid: window.owner, gid: 0))
            _ = try? policy.decide(
                DecideRequest(id: request.id, grant: grant), context, onlyPending: true)
            send(ShieldWindowUpdate(close: true), to: window)
            return
        }
    }
}
