import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

extension ProcessShield {
    // MARK: events

    func note(
        _ action: StateDatabase.ApplicationEvent.Action, pid: Int32, uid: UInt32, verdict: ApplicationFilter.Verdict,
        apps: UserApps
    ) {
        let name = apps.filter.index.application(verdict.application)?.name ?? Self.displayName(verdict.application)
        journal.event(
            StateDatabase.ApplicationEvent(
                time: Date(), uid: uid, token: verdict.token.base64, pid: pid, action: action),
            name: (
                verdict.token.base64,
                TokenName(kind: .app, identity: verdict.application.canonical, displayName: name)
            ))
        if action != .frozen { logger.info("\(action.rawValue)", metadata: ["pid": "\(pid)", "app": "\(name)"]) }
        if action == .frozen || action == .refused || action == .killed {
            let application = apps.filter.index.application(verdict.application)
            var identity: String?
            if case .desktopEntry(let id) = verdict.application { identity = id }
            shieldEvents.tell(
                .met(
                    ShieldEncounter(
                        kind: .application, owner: apps.uid, token: verdict.token.base64, name: name,
                        identity: identity, categories: application?.categories.map(\.name).sorted() ?? [],
                        icon: application?.icon, stores: verdict.stores, pid: action == .frozen ? pid : nil)))
        }
    }

    /// The application a held process of `owner`'s is held for, if it is held for a shield.
    func shieldedApplication(pid: Int32, owner: UInt32) -> ShieldEncounter? {
        let identities = table.withLock { table -> [ApplicationIdentity]? in
            guard let tracked = table.processes[pid], tracked.owner == owner, tracked.hold?.reason.token != nil
            else { return nil }
            return tracked.identities
        }
        guard let identities, let apps = currentPolicy().users[owner],
            let verdict = apps.filter.verdict(for: identities), verdict.action == .shield
        else { return nil }
        let application = apps.filter.index.application(verdict.application)
        var identity: String?
        if case .desktopEntry(let id) = verdict.application { identity = id }
        return ShieldEncounter(
            kind: .application, owner: owner, token: verdict.token.base64,
            name: application?.name ?? Self.displayName(verdict.application), identity: identity,
            categories: application?.categories.map(\.name).sorted() ?? [], icon: application?.icon,
            stores: verdict.stores, pid: pid)
    }

    /// Whether a refusal of a program no guardian installed is written down (hashed, logged, an
    /// event), within the user's budget (see `RefusalBudget`): a storm of them costs the agent and
    /// the state database a bounded amount, and is refused all the same.
    func admitRefusalNote(uid: UInt32) -> Bool {
        let elapsed = epoch.duration(to: .now).components
        let now = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
        let (write, unwritten) = refusalBudget.withLock { $0.admit(uid, now: now) }
        if write, unwritten > 0 {
            logger.notice(
                "refused more programs no guardian installed than are written down",
                metadata: ["uid": "\(uid)", "notWritten": "\(unwritten)"])
        }
        return write
    }

    /// A program no guardian installed, refused or killed: its event names the program by content
    /// where it could be hashed, else by its path's last part. Called only within the budget.
    func noteUninstalled(pid: Int32, uid: UInt32, path: String?) {
        let name = path.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "a program"
        let hash = path.flatMap { try? hashes.sha256(of: $0) }
        guard let identity = hash.flatMap({ try? ApplicationIdentity.executable(sha256: $0) }) else { return }
        let token = minter.token(for: identity)
        journal.event(
            StateDatabase.ApplicationEvent(time: Date(), uid: uid, token: token.base64, pid: pid, action: .uninstalled),
            name: (token.base64, TokenName(kind: .app, identity: identity.canonical, displayName: name)))
    }

    static func displayName(_ identity: ApplicationIdentity) -> String {
        switch identity {
        case .desktopEntry(let id): id
        case .snap(let name): name
        case .executable(let hash): "program " + hash.prefix(12)
        }
    }

    /// Writes what was frozen, thawed and done to the state database (off the watcher's thread).
    func flush() {
        let authorized = Set(currentPolicy().users.keys)
        journal.flush { authorized.contains($0) }
    }

    func handle(_ event: ProcConnector.Event) {
        switch event {
        case .fork(let parent, let child):
            table.withLock { table in forked(child, parent: parent, &table, policy: currentPolicy()) }
        case .exec(let pid):
            let owner = table.withLock { table in
                judgeExec(pid, &table, policy: currentPolicy())
                return table.processes[pid]?.owner
            }
            if let owner { sessionHints.add(pid: pid, owner: owner) }
        case .uid(let pid, let real, _):
            // The launcher's child taking a user's ids before it runs their program: judged at
            // that exec (judging the agent's own executable first would only hold the window up).
            if isLaunchersOwn(pid) { return }
            table.withLock { table in
                let policy = currentPolicy()
                if policy.owner(ofKernelUID: real) != nil || table.processes[pid] != nil {
                    judgeExec(pid, &table, policy: policy)
                }
            }
        case .exit(let pid, _):
            let runsOn = table.withLock { table -> Bool in
                guard table.processes[pid] != nil else { return false }
                // The leader thread ended and other threads go on (`pthread_exit` in main, the
                // game playing on a thread of its own): the process runs on as what it was,
                // held as it was, until its last thread ends.
                if inspector.hasOtherThreads(pid: pid) {
                    table.leaderless.insert(pid)
                    return true
                }
                forget(pid, &table)
                return false
            }
            if runsOn {
                restopContinuation.yield()
                return
            }
            gateState.withLock { state in
                state.held[pid] = nil
                state.execOpens[pid] = nil
            }
        case .overrun:
            logger.warning("process events were lost; reading /proc again")
            table.withLock { reconcile(&$0, policy: currentPolicy()) }
        }
    }

    /// A new process. The kernel names its real parent, which is not always the process that
    /// forked it: under `CLONE_PARENT` it is the forker's own parent (init, for a forker adopted
    /// by init; bash, for a game whose preloaded code forks so and exits). The new process runs
    /// its forker's program, so the forker is the named parent or one of that parent's children
    /// (an orphan, when the parent is not tracked) running the same program; the process
    /// inherits what each of those is. With no such process known it is judged from its own uid
    /// and program, as an exec is: no process of an authorized user goes untracked.
    func forked(_ child: Int32, parent: Int32, _ table: inout Table, policy: AppPolicy) {
        // Held already as this very process: its exec was read first, or the gate's hold was
        // taken over (a storm of execs delays the events by seconds). A fresh entry would drop the
        // hold, and, its forker not held, move it out of the frozen group (the attack on the
        // installed agent, 2026-12-02: 6 of 6,000 starts of a shielded program reached main()).
        if let existing = table.processes[child], existing.hold != nil,
            existing.startTime == inspector.startTime(pid: child)
        {
            return
        }
        let known = table.processes[parent]
        if known == nil {
            // Most forks on the machine are other users': one read tells.
            guard let uid = inspector.status(pid: child)?.uid, policy.owner(ofKernelUID: uid) != nil else { return }
        }
        let image = inspector.executableStatus(pid: child)?.key
        var forkers: [Int32] = []
        if let known, image == nil || known.kernel.executable?.key == image { forkers.append(parent) }
        if let image {
            for (pid, entry) in table.processes
            where pid != parent && pid != child && entry.kernel.executable?.key == image
                && (entry.parent == parent || (known == nil && entry.parent == nil))
            {
                forkers.append(pid)
            }
        }
        guard let first = forkers.first, let forker = table.processes[first] else {
            // Nothing tracked runs its program (it may have run another already): judged afresh.
            judgeExec(child, &table, policy: policy, inherited: known?.identities ?? [], counting: false)
            return
        }
        var tracked = Tracked(uid: forker.uid, owner: forker.owner, startTime: inspector.startTime(pid: child) ?? 0)
        tracked.kernel = forker.kernel
        tracked.evidence = forker.evidence
        tracked.inherited = forker.identities
        tracked.identities = forker.identities
        tracked.judged = forker.judged
        tracked.installRefusal = forker.installRefusal
        tracked.parent = first
        // Which of several it was cannot be told: it is all of them (most restrictive).
        for other in forkers.dropFirst() {
            for identity in table.processes[other]?.identities ?? [] where !tracked.identities.contains(identity) {
                tracked.identities.append(identity)
                tracked.inherited.append(identity)
            }
            tracked.judged = tracked.judged && (table.processes[other]?.judged ?? true)
        }
        table.processes[child] = tracked
        if let parentHold = forker.hold {
            // Forked as it was held: the child is in the frozen group with it.
            let handle = ProcessHandle(pid: child, startTime: tracked.startTime, inspector: inspector)
            table.processes[child]?.hold = Hold(
                reason: parentHold.reason, origin: parentHold.origin, since: parentHold.since, handle: handle)
            if !(holder.withLock { $0 }.isInFrozenGroup(child)) {
                table.processes[child]?.hold = nil
                hold(child, &table, reason: parentHold.reason, stopFirst: true, waiting: false)
            }
        } else if holder.withLock({ $0 }).isInFrozenGroup(child) {
            // Forked while its forker was held, and read after the forker was let go: the child
            // was born in the frozen group, where nothing would ever let it out (a storm of
            // execs left a shell's subshell so). It goes where its forker is now; what the
            // policy says of it is done below.
            let handle = ProcessHandle(pid: child, startTime: tracked.startTime, inspector: inspector)
            let origin = holder.withLock { $0 }.group(of: first) ?? "/"
            do {
                // Unless the gate holds it: it ran a shielded program since (its exec read later).
                if try releaseUnlessTheGateHolds(child, handle: handle, origin: origin) {
                    logger.info(
                        "let go: forked in the frozen group", metadata: ["pid": "\(child)", "forker": "\(first)"])
                }
            } catch {
                logger.error(
                    "cannot move a process out of the frozen group",
                    metadata: ["pid": "\(child)", "error": "\(error.message)"])
            }
        }
        if !forker.judged {
            // Its forker is still being judged: so is it, with the forker's reads.
            judgeExec(child, &table, policy: policy, inherited: tracked.inherited, counting: false)
        } else if forker.action != nil || forker.hold != nil || forkers.count > 1 || first != parent
            || policy.users[forker.owner]?.locked == true
        {
            // Locked, a new process is held whatever its forker is: one whose forker exited
            // before the lock could hold it (a double fork) would run on otherwise.
            enforce(child, &table, policy: policy)
        }
    }

    /// A process that ended: out of the table.
    func forget(_ pid: Int32, _ table: inout Table) {
        guard let tracked = table.processes.removeValue(forKey: pid) else { return }
        table.stoppedBySignal.remove(pid)
        table.leaderless.remove(pid)
        // Its pid may come back as another process: its children forget it.
        for (child, entry) in table.processes where entry.parent == pid { table.processes[child]?.parent = nil }
        if tracked.hold?.reason.token != nil { journal.thawed(pid: pid, startTime: tracked.startTime) }
    }

    /// The processes whose leader thread ended before the others, looked at again: one whose
    /// last thread ended (or whose pid names another process now) is forgotten; one whose leader
    /// is alive again (a thread of it ran a program, and leads) is an ordinary process.
    func lookAtLeaderless(_ table: inout Table) {
        for pid in table.leaderless {
            guard let tracked = table.processes[pid] else {
                table.leaderless.remove(pid)
                continue
            }
            let state = inspector.state(pid: pid)
            if state == nil || inspector.startTime(pid: pid) != tracked.startTime {
                forget(pid, &table)
            } else if state != "Z" {
                table.leaderless.remove(pid)
            } else if !inspector.hasOtherThreads(pid: pid) {
                forget(pid, &table)
            }
        }
    }

    /// After lost events: what the table says is checked against `/proc`. Entries whose process
    /// is gone or whose pid now names another process are dropped; processes of authorized
    /// users not in the table are judged; members of the frozen group nobody accounts for go back.
    func reconcile(_ table: inout Table, policy: AppPolicy) {
        for (pid, tracked) in table.processes {
            let status = inspector.status(pid: pid)
            let current = inspector.startTime(pid: pid)
            guard current == tracked.startTime, let status, policy.owner(ofKernelUID: status.uid) != nil else {
                table.processes[pid] = nil
                table.stoppedBySignal.remove(pid)
                table.leaderless.remove(pid)
                continue
            }
        }
        scan(owners: Set(policy.users.keys), &table, policy: policy, batch: 0, onlyUntracked: true)
        let holder = holder.withLock { $0 }
        for pid in holder.members() where table.processes[pid]?.hold == nil {
            let startTime = inspector.startTime(pid: pid) ?? 0
            guard let handle = ProcessHandle(pid: pid, startTime: startTime, inspector: inspector) else { continue }
            guard (try? releaseUnlessTheGateHolds(pid, handle: handle, origin: "/")) != false else { continue }
            logger.notice("let go of a frozen process nobody accounts for", metadata: ["pid": "\(pid)"])
        }
        for (pid, tracked) in table.processes where tracked.judged {
            enforce(pid, &table, policy: policy)
        }
    }

    /// Whether `pid` is the agent's launcher's child that has not run its program yet: its parent
    /// is the launcher and it still runs the agent's own executable. A user cannot make either so:
    /// only the launcher forks children of the launcher, and such a child is not the user's to
    /// trace (its ids changed from root's, so it is not dumpable).
    func isLaunchersOwn(_ pid: Int32) -> Bool {
        guard let launcher, let own = launcher.executable,
            inspector.status(pid: pid)?.parent == launcher.pid,
            let running = inspector.executableStatus(pid: pid)
        else { return false }
        return FileIdentity(running.key) == own
    }
}
