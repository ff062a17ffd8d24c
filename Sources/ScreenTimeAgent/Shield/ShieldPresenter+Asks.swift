import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Asks and decisions.
extension ShieldPresenter {
    /// A decision reaches the child: the open shield says it (and closes when the shield is
    /// lifted), or a notice does.
    func tellChild(_ request: TimeRequestReport) {
        guard request.state != .pending else { return }
        // Decided: the guardians' windows for it go (a decision is not made twice by windows).
        for window in state.withLock({ $0.askWindows.removeValue(forKey: request.id) ?? [] }) { retire(window) }
        let what = request.application ?? request.webDomain ?? "it"
        let text =
            request.isAlways
            ? "A guardian allowed \(what), always."
            : request.state == .granted
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
    func notify(_ uid: UInt32, title: String, subtitle: String, icon: String) {
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
            Threads.start("screentime.win") { [self] in
                started.drain()
                started.close()
                ended(window)
            }
        }
    }

    /// Each guardian logged in on this PC (a person's account in the guardian group, with a
    /// program in a graphical session) gets the ask in a window of their own: grant or deny.
    func tellGuardians(_ request: TimeRequestReport) {
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
                icon: "dialog-question",
                title: .init(
                    text: request.isSiteAsk
                        ? "\(request.user) asks to open \(what)"
                        : "\(request.user) asks for \(request.minutes) more minutes"),
                subtitle: .init(
                    text: (request.isSiteAsk
                        ? "for \(request.minutes) minutes" : "of \(what)") + (request.note.map { ": “\($0)”" } ?? "")),
                primaryButtonLabel: .init(text: "Grant \(request.minutes) minutes"),
                secondaryButtonLabel: .init(text: "Deny")))
        for (key, session) in sessions {
            guard mayOpen(for: session.uid),
                let started = start(content, as: session.uid, environment: session.environment, key: key)
            else { continue }
            let window = OpenWindow(program: started, token: request.token, kind: "request", owner: session.uid)
            state.withLock { $0.askWindows[request.id, default: []].append(window) }
            Threads.start("screentime.win") { [self] in
                decide(window, request: request)
            }
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
    func decide(_ window: OpenWindow, request: TimeRequestReport) {
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
