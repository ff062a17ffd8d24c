import Dispatch
import FoundationEssentials
import LinuxSupport
import ScreenTimeCore

extension ProcessShield {
    /// Waits for the gate's thread (started by `open`) to end, once it was told to stop.
    func gateLoop() async {
        guard let done = gateThreadDone.withLock({ $0 }) else { return }
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                done.wait()
                finished.resume()
            }
        }
    }

    /// The gate's answer to one exec or open. Reads the kernel's records and the rules in force,
    /// takes no lock the watcher or the judges hold for long, and never waits on a child's file.
    ///
    /// - A known blocked program: its exec is refused for the user it is blocked for.
    /// - A known shielded program: its process is moved into the frozen group while it is still
    ///   inside `execve`, then let through: it freezes before its first instruction.
    /// - Any other open of those files by such a user (the loader mapping one, a copy being
    ///   made) is refused; the open that is the second half of an exec just let through is not.
    /// - Through a file system mark (`denyAppInstallation`): an exec of a program no guardian
    ///   installed is refused.
    /// Root's and everyone else's execs and opens are let through at once.
    func decide(_ request: ExecGate.Request) -> Bool {
        // The agent's own execs (iptables) are never held.
        guard let status = inspector.task(request.tid), status.threadGroup != ProcessInspector.currentProcess else {
            return true
        }
        let policy = currentPolicy()
        guard let owner = policy.owner(ofKernelUID: status.uid), let apps = policy.users[owner] else { return true }
        let fileStatus = FileStatus.of(descriptor: request.file)
        if request.throughFilesystem {
            guard request.kind == .exec, apps.denyInstalls else { return true }
            let path = Files.readLink("/proc/self/fd/\(request.file)")
            guard let refusal = installRefusal(path: path, status: fileStatus, owner: owner, kernelPath: true) else {
                return true
            }
            if admitRefusalNote(uid: status.uid) {
                logger.info(
                    "refused a program no guardian installed",
                    metadata: ["pid": "\(request.tid)", "path": "\(path ?? "?")", "why": "\(refusal)"])
                noteUninstalled(pid: status.threadGroup, uid: status.uid, path: path)
            }
            return false
        }
        guard let key = fileStatus?.key, let verdict = policy.marked[FileIdentity(key)]?[owner] else { return true }
        let identity = FileIdentity(key)
        logger.debug(
            "gate", metadata: ["tid": "\(request.tid)", "kind": "\(request.kind)", "verdict": "\(verdict.action)"])
        switch request.kind {
        case .exec:
            let process = status.threadGroup
            if verdict.action == .block {
                note(.refused, pid: process, uid: status.uid, verdict: verdict, apps: apps)
                return false
            }
            holdAtExec(process, tid: request.tid, file: identity, owner: owner, verdict: verdict, apps: apps)
            return true
        case .open:
            let wasExec = gateState.withLock { state -> Bool in
                guard state.execOpens[request.tid] == identity else { return false }
                state.execOpens[request.tid] = nil
                return true
            }
            return wasExec
        }
    }

    /// Moves a process that is executing a shielded program into the frozen group, inside
    /// `execve`: it returns from the call frozen. The watcher takes the hold over at the exec
    /// event; if that never comes (the exec failed after this), the hold is judged again.
    private func holdAtExec(
        _ pid: Int32, tid: Int32, file: FileIdentity, owner: UInt32, verdict: ApplicationFilter.Verdict,
        apps: UserApps
    ) {
        let policy = currentPolicy()
        guard
            let handle = ProcessHandle(
                pid: pid, inspector: inspector, owner: { policy.owner(ofKernelUID: $0) == owner })
        else { return }
        let holder = holder.withLock { $0 }
        // The move and its record under one lock, the one a release looks at the record under:
        // a process held for judging its old program (judged "run" now, on another thread)
        // cannot be let go between the two, out of the frozen group, its new program running.
        let held = gateState.withLock { state -> Bool in
            guard let (origin, moveLater) = holder.holdInsideExec(handle) else { return false }
            state.held[pid] = GateHold(
                token: verdict.token, origin: origin, moveLater: moveLater, file: file, handle: handle, since: Date())
            state.execOpens[tid] = file
            return true
        }
        guard held else { return }
        // The exec waits for this answer: the event and the check that the exec did happen are
        // made after it. The exec event comes within microseconds; if it has not come in a
        // second, the hold is looked at (`takeOverGateHolds`).
        DispatchQueue.global().async { [self] in
            note(.frozen, pid: pid, uid: apps.uid, verdict: verdict, apps: apps)
        }
        scheduleTakeover()
    }

    /// Looks at the gate's holds in 1.5 s, unless a look is due already; while holds are left
    /// after it, again a second later.
    func scheduleTakeover() {
        let due = gateState.withLock { state -> Bool in
            defer { state.takeoverDue = true }
            return state.takeoverDue
        }
        if due { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { [self] in
            gateState.withLock { $0.takeoverDue = false }
            table.withLock { takeOverGateHolds(&$0, policy: currentPolicy(), olderThan: 1) }
            if !gateState.withLock({ $0.held.isEmpty }) { scheduleTakeover() }
        }
    }

    /// What the watchdog answers while the gate's decision is late: from the kernel's records
    /// alone, refused for an authorized user's exec or open of a marked file (and, with
    /// `denyAppInstallation`, for any exec through a file system mark), allowed for everyone else.
    func fallback(_ request: ExecGate.Request) -> Bool {
        guard let status = inspector.status(pid: request.tid) else { return true }
        let policy = currentPolicy()
        guard let owner = policy.owner(ofKernelUID: status.uid) else { return true }
        if request.throughFilesystem { return !(policy.users[owner]?.denyInstalls ?? false) }
        return false
    }
}
