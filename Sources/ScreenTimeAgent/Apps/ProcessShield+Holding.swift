import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

extension ProcessShield {
    // MARK: holding, letting go, killing

    /// Puts the verdict on one tracked process in force: hold, kill, or let it (go) run.
    func enforce(_ pid: Int32, _ table: inout Table, policy: AppPolicy) {
        guard let tracked = table.processes[pid], let apps = policy.users[tracked.owner] else { return }
        // Locked: everything is held but what shows the lock (display servers, shield windows).
        if apps.locked, !runsWhileLocked(pid, tracked) {
            if tracked.hold == nil {
                hold(pid, &table, reason: .locked, stopFirst: true, waiting: false)
            } else if tracked.judged, tracked.hold?.reason.token == nil {
                table.processes[pid]?.hold?.reason = .locked
            }
            return
        }
        var verdict = apps.filter.verdict(for: tracked.identities)
        if tracked.judged, apps.denyInstalls, let refusal = tracked.installRefusal, verdict?.action != .block {
            verdict = nil
            kill(pid, &table, refusal: refusal)
            return
        }
        table.processes[pid]?.action = verdict?.action
        table.processes[pid]?.verdict = verdict
        switch verdict?.action {
        case .block?:
            guard let verdict else { return }
            learn(pid, tracked, filter: apps.filter, verdict: verdict)
            kill(pid, &table, verdict: verdict, apps: apps)
        case .shield?:
            guard let verdict else { return }
            if tracked.judged { learn(pid, tracked, filter: apps.filter, verdict: verdict) }
            if let hold = tracked.hold {
                if hold.reason.token == nil {
                    table.processes[pid]?.hold?.reason = .shield(verdict.token)
                    recordFrozen(pid, tracked, token: verdict.token, origin: hold.origin, since: hold.since)
                    note(.frozen, pid: pid, uid: tracked.uid, verdict: verdict, apps: apps)
                }
            } else {
                hold(pid, &table, reason: .shield(verdict.token), stopFirst: true, waiting: true)
                if table.processes[pid]?.hold != nil {
                    note(.frozen, pid: pid, uid: tracked.uid, verdict: verdict, apps: apps)
                }
            }
        case nil:
            if tracked.judged, tracked.hold != nil { release(pid, &table, reason: "not shielded") }
        }
    }

    /// Programs a locked user's processes may still run: what draws the screen the lock is shown
    /// on (display servers and compositors), sshd's session process (which carries the message
    /// to an ssh client), and the shield window.
    static let passLock: Set<String> = [
        "Xorg", "Xvfb", "Xwayland", "Xephyr", "Xvnc", "Xnest", "sway", "weston", "gnome-shell", "kwin_wayland",
        "kwin_x11", "mutter", "labwc", "wayfire", "Hyprland", "sshd", "sshd-session", "screentime-shield",
    ]
    static let systemDirectories = [
        "/usr/bin/", "/usr/sbin/", "/usr/libexec/", "/usr/lib/", "/bin/", "/sbin/", "/usr/local/bin/",
        "/usr/local/sbin/", "/usr/local/libexec/",
    ]

    /// Whether a locked user's process runs on: one of `passLock` as the system installed it, and
    /// nothing of the child's in it. Checked, once judged: the program is a root-owned file no
    /// one else may change, in a system directory, and the very file the agent finds at that path
    /// in its own mount namespace (a copy, or a bind mount in a namespace of the child's, is not);
    /// the process is in the agent's mount namespace, its environment loaded no code of its own
    /// (`LD_PRELOAD`, module paths: see `ProcessInspector.loadsOwnCode`), no code from outside the
    /// system's directories is mapped into it (read when the lock is put in force: a library
    /// loaded into it before, by a debugger or a module path), and nothing traces it. The shield
    /// window passes only as the agent started it (its launcher's child): one the child started
    /// herself is hers. Anything else is held.
    func runsWhileLocked(_ pid: Int32, _ tracked: Tracked) -> Bool {
        let kernel = tracked.kernel
        guard tracked.judged, tracked.loadsOwnCode == false, tracked.runsForeignCode == false,
            let namespace = tracked.mountNamespace,
            namespace == Self.ownMountNamespace,
            let path = kernel.executablePath, !kernel.executableDeleted, let status = kernel.executable,
            status.owner == 0, status.mode & 0o022 == 0, kernel.rootIsHost, !path.contains("/../"),
            Self.systemDirectories.contains(where: path.hasPrefix),
            let name = path.split(separator: "/").last, Self.passLock.contains(String(name)),
            let here = FileStatus.of(path: path), here.key.device == status.key.device,
            here.key.inode == status.key.inode, inspector.tracer(pid: pid) == 0
        else { return false }
        if name == "screentime-shield" {
            guard let launcher, inspector.status(pid: pid)?.parent == launcher.pid else {
                return false
            }
        }
        return true
    }

    /// The directories whose code an exempt program may run: the system's.
    static let systemCodeDirectories = ["/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/"]

    /// Whether a process's program is one of `passLock` by its path's last part: its maps are read.
    static func mayPassLock(_ path: String?) -> Bool {
        guard let name = path?.split(separator: "/").last else { return false }
        return passLock.contains(String(name))
    }

    /// The agent's own mount namespace.
    static let ownMountNamespace = ProcessInspector().mountNamespace(pid: PeerCredentials.ofThisProcess.pid)

    /// Holds a tracked process (see `ProcessHolder`).
    func hold(_ pid: Int32, _ table: inout Table, reason: HoldReason, stopFirst: Bool, waiting: Bool) {
        guard let tracked = table.processes[pid], tracked.hold == nil else { return }
        let policy = currentPolicy()
        guard
            let handle = ProcessHandle(
                pid: pid, startTime: tracked.startTime, inspector: inspector,
                owner: { policy.owner(ofKernelUID: $0) == tracked.owner })
        else { return }
        let holder = holder.withLock { $0 }
        guard let (found, frozen) = holder.hold(handle, stopFirst: stopFirst, waiting: waiting) else { return }
        // Already in the frozen group: the gate held it inside an exec, and knows where from.
        let origin = found ?? gateState.withLock { $0.held[pid]?.origin }
        if !frozen {
            table.stoppedBySignal.insert(pid)
            restopContinuation.yield()
        }
        let since = Date()
        table.processes[pid]?.hold = Hold(reason: reason, origin: origin, since: since, handle: handle)
        if let token = reason.token { recordFrozen(pid, tracked, token: token, origin: origin, since: since) }
        logger.debug("held", metadata: ["pid": "\(pid)", "why": "\(reason.label)"])
    }

    func recordFrozen(_ pid: Int32, _ tracked: Tracked, token: ApplicationToken, origin: String?, since: Date) {
        journal.frozen(
            StateDatabase.FrozenProcess(
                pid: pid, startTime: tracked.startTime, uid: tracked.uid, token: token.base64, origin: origin ?? "/",
                frozenAt: since))
    }

    /// Lets a held process go, back into the group it came from (or the nearest that exists).
    func release(_ pid: Int32, _ table: inout Table, reason: String) {
        guard let tracked = table.processes[pid], let hold = tracked.hold else { return }
        table.processes[pid]?.hold = nil
        table.stoppedBySignal.remove(pid)
        do {
            // The gate held it again inside an exec the watcher has not read yet: that hold stays.
            guard try releaseUnlessTheGateHolds(pid, handle: hold.handle, origin: hold.origin ?? "/") else { return }
        } catch {
            logger.error(
                "cannot move a process out of the frozen group",
                metadata: ["pid": "\(pid)", "error": "\(error.message)"])
        }
        if let token = hold.reason.token {
            journal.thawed(pid: pid, startTime: tracked.startTime)
            journal.event(
                StateDatabase.ApplicationEvent(
                    time: Date(), uid: tracked.uid, token: token.base64, pid: pid, action: .thawed),
                name: nil)
            logger.info("thawed", metadata: ["pid": "\(pid)", "reason": "\(reason)"])
        }
    }

    /// Lets a process out of the frozen group (and continues it) unless the gate holds it inside
    /// an exec; false then. Looked at and done under the gate's lock, which the gate holds from
    /// its move to its record of it.
    func releaseUnlessTheGateHolds(_ pid: Int32, handle: ProcessHandle?, origin: String) throws(SystemError) -> Bool {
        let holder = holder.withLock { $0 }
        return try gateState.withLock { state throws(SystemError) -> Bool in
            if state.held[pid] != nil { return false }
            if let handle { try holder.release(handle, origin: origin) }
            return true
        }
    }

    /// Kills a blocked process (a frozen one too: a v1-frozen task dies only once moved out).
    func kill(_ pid: Int32, _ table: inout Table, verdict: ApplicationFilter.Verdict, apps: UserApps) {
        guard let tracked = table.processes[pid] else { return }
        if signalKill(pid, tracked, &table) { note(.killed, pid: pid, uid: tracked.uid, verdict: verdict, apps: apps) }
    }

    /// Kills a program no guardian installed (`denyAppInstallation`).
    func kill(_ pid: Int32, _ table: inout Table, refusal: String) {
        guard let tracked = table.processes[pid] else { return }
        if signalKill(pid, tracked, &table), admitRefusalNote(uid: tracked.uid) {
            logger.info("killed a program no guardian installed", metadata: ["pid": "\(pid)", "why": "\(refusal)"])
            noteUninstalled(pid: pid, uid: tracked.uid, path: tracked.kernel.executablePath)
        }
    }

    /// Ends every held process of `owner`'s held for the shield on `token` (a shield's action
    /// extension answered `close`: the app is closed). Returns how many were killed.
    @discardableResult
    func endApplication(owner: UInt32, token: String) -> Int {
        table.withLock { table in
            let held = table.processes.filter {
                $0.value.owner == owner && $0.value.hold?.reason.token?.base64 == token
            }
            var killed = 0
            for (pid, tracked) in held {
                let policy = currentPolicy()
                guard
                    let handle = tracked.hold?.handle
                        ?? ProcessHandle(
                            pid: pid, startTime: tracked.startTime, inspector: inspector,
                            owner: { policy.owner(ofKernelUID: $0) == tracked.owner })
                else { continue }
                if handle.kill() { killed += 1 }
            }
            return killed
        }
    }

    func signalKill(_ pid: Int32, _ tracked: Tracked, _ table: inout Table) -> Bool {
        let policy = currentPolicy()
        guard
            let handle = tracked.hold?.handle
                ?? ProcessHandle(
                    pid: pid, startTime: tracked.startTime, inspector: inspector,
                    owner: { policy.owner(ofKernelUID: $0) == tracked.owner })
        else { return false }
        let killed = handle.kill()
        if tracked.hold != nil { release(pid, &table, reason: "killed") }
        table.processes[pid]?.action = .block
        return killed
    }

    /// A process's executable, known by content to be a shielded or blocked program as itself
    /// (a copy), is marked for the gate: its next exec is held or refused before it runs.
    func learn(_ pid: Int32, _ tracked: Tracked, filter: ApplicationFilter, verdict: ApplicationFilter.Verdict) {
        guard let gate = gate.withLock({ $0 }), let path = tracked.kernel.executablePath,
            let hash = tracked.evidence.executableHash,
            filter.verdict(
                for: filter.index.identities(of: ProcessEvidence(executablePath: path, executableHash: hash)))
                != nil,
            learned.withLock({ $0[path]?.hash }) != hash
        else { return }
        // Through /proc/PID/exe: the very file it runs, even if renamed since.
        if (try? gate.mark(inspector.file("exe", of: pid))) != nil {
            let file = tracked.kernel.executable.map { FileIdentity($0.key) }
            learned.withLock { $0[path] = LearnedProgram(hash: hash, file: file) }
            if let status = tracked.kernel.executable {
                policy.withLock { policy in
                    policy.marked[FileIdentity(status.key), default: [:]][tracked.owner] = verdict
                }
            }
        }
    }

    /// Processes the gate held inside `execve` whose exec event has not come: taken over as
    /// that exec where it did happen; judged again as the program they still run where it failed
    /// (the gate let it go on, and the kernel refused it after); held on while it is still going.
    func takeOverGateHolds(_ table: inout Table, policy: AppPolicy, olderThan seconds: TimeInterval) {
        let now = Date()
        let late = gateState.withLock { state in
            state.held.filter { now.timeIntervalSince($0.value.since) >= seconds }
        }
        for (pid, gateHold) in late {
            let sameProcess = inspector.startTime(pid: pid) == gateHold.handle.startTime
            // The exec did happen, but its event is late (a watcher behind a burst of events) or
            // was lost: judged now as that exec, which takes the hold over as the event would. The
            // table's entry may still be the program before it (setpriv, a shell): judging the
            // hold by that one would let a shielded program go.
            if sameProcess, inspector.executableStatus(pid: pid).map({ FileIdentity($0.key) }) == gateHold.file {
                judgeExec(pid, &table, policy: policy)
                if gateState.withLock({ $0.held[pid] == nil }) { continue }
            }
            // Its old program still, and its exec not over: on a machine this busy an exec can
            // take seconds after the gate's answer (a child's storm of 12,000 did, 2026-12-02,
            // and the game ran). Only a process back on its way to user space had its exec fail.
            if sameProcess, !inspector.isPastItsSystemCall(pid: pid) { continue }
            gateState.withLock { $0.held[pid] = nil }
            if let tracked = table.processes[pid] {
                // Stopped by the gate, never moved: kept stopped until judged.
                if gateHold.moveLater || holder.withLock({ $0.freezer == nil }) {
                    table.stoppedBySignal.insert(pid)
                    restopContinuation.yield()
                }
                if tracked.hold == nil {
                    table.processes[pid]?.hold = Hold(
                        reason: .judging, origin: gateHold.origin, since: gateHold.since, handle: gateHold.handle)
                } else if tracked.hold?.origin == nil {
                    table.processes[pid]?.hold?.origin = gateHold.origin
                }
                enforce(pid, &table, policy: policy)
            } else {
                try? holder.withLock { $0 }.release(gateHold.handle, origin: gateHold.origin ?? "/")
            }
        }
    }
}
