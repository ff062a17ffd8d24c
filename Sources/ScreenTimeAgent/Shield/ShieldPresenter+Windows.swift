import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Windows.
extension ShieldPresenter {
    /// Starts the window in a session as the session's user; a thread reads what it says.
    func launch(
        _ content: ShieldWindowContent, for thing: ShieldEncounter,
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
        Threads.start("screentime.win") { [self] in
            listen(window, thing: thing, client: client, closesItself: content.primaryCloses)
        }
    }

    /// Launches `screentime-shield` as `uid` with `content` on its first line.
    func start(
        _ content: ShieldWindowContent, as uid: UInt32, environment session: [String: String], key: String
    ) -> SessionProgram? {
        // One that closes by itself is a notice: its time in front is what was in front before it.
        guard let started = program.start(as: uid, session: session, key: key, notice: content.closesAfter != nil)
        else { return nil }
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
    func mayOpen(for uid: UInt32) -> Bool {
        let open = state.withLock { $0.alive.values.filter { $0 == uid }.count }
        if open >= Self.windowsPerUser {
            logger.warning("too many shield windows open for a user; not opening another", metadata: ["uid": "\(uid)"])
            return false
        }
        return true
    }

    /// A window's thread ended: it is no longer counted.
    func ended(_ window: OpenWindow) {
        program.ended(window.program)
        state.withLock { _ = $0.alive.removeValue(forKey: window.pid) }
    }

    /// Asks a window to close; one that has not ended 3 s later (stopped by the child, say) is
    /// killed by the launcher, which started it (its pid is not anyone else's until it is reaped).
    func retire(_ window: OpenWindow) {
        send(ShieldWindowUpdate(close: true), to: window)
        DispatchQueue.global().asyncAfter(deadline: .now() + 3) { [self] in
            if state.withLock({ $0.alive[window.pid] != nil }) { program.stop(window.program) }
        }
    }

    func send(_ update: ShieldWindowUpdate, to window: OpenWindow) {
        if update.close == true { closing(window) }
        // A window that stopped reading (the child stopped it) cannot hold the agent: the pipe's
        // buffer takes many such lines, and a full one drops this.
        window.program.tell(Array((try? JSONEncoder().encode(update)) ?? Data()))
    }

    /// A window closing (its OK pressed, or told to close) or ended shows its app's shield no
    /// more: the app started again shows a new window, not nothing while the closed one's program
    /// ends (a moment, longer on a loaded machine). It is still counted among the user's open
    /// windows until it has ended.
    func closing(_ window: OpenWindow) {
        state.withLock { state in
            for (key, open) in state.windows where open.pid == window.pid { state.windows[key] = nil }
        }
    }

    /// Reads a window's lines until it ends; each button pressed is acted on. `closesItself`: its
    /// primary button closes it.
    func listen(_ window: OpenWindow, thing: ShieldEncounter, client: ClientID?, closesItself: Bool) {
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

    func pressed(_ button: String, window: OpenWindow, thing: ShieldEncounter, client: ClientID?) {
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
                let text = String(decoding: output, as: UTF8.self).trimmingWhitespace()
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
            send(
                ShieldWindowUpdate(
                    message: thing.kind == .webDomain
                        ? "Asked a guardian to allow \(thing.name)."
                        : "Asked a guardian for \(asked.minutes) more minutes."),
                to: window)
        } catch let error as ScreenTimeIPCError {
            send(ShieldWindowUpdate(message: error.message), to: window)
        } catch {
            send(ShieldWindowUpdate(message: "The ask could not be made."), to: window)
        }
    }
}
