import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

extension ProcessShield {
    // MARK: setting up

    /// Subscribes to process events, makes the frozen group and the exec gate (its file system
    /// marks too, when a child is allowed only installed programs). Called once, on the agent's
    /// only thread, before capabilities are dropped: it starts no thread.
    func open(snapshot: PolicySnapshot, keeping kept: Set<Capabilities.Name>) {
        var problems: [String] = []
        do {
            let opened = try ProcConnector()
            connector.withLock { $0 = opened }
        } catch {
            problems.append("new processes cannot be watched, so shields apply only at changes: \(error.message)")
        }
        let freezer = makeFreezer(&problems)
        if freezer != nil { favorCgroupMoves() }
        holder.withLock { $0 = ProcessHolder(freezer: freezer) }
        releaseLeftovers(keeping: freezer)
        do {
            guard configuration.execGate else {
                throw SystemError(.systemCall, "the exec gate is off (execGate: false)")
            }
            // Needs CAP_SYS_ADMIN, which the agent drops after setup; file marks come later.
            let opened = try ExecGate()
            gate.withLock { $0 = opened }
            let deniesInstalls = snapshot.users.values.contains { !$0.policy.appInstallationDenied.isEmpty }
            startGate(opened, markingFilesystems: deniesInstalls, keeping: kept)
        } catch {
            problems.append("blocked apps are killed at exec, not refused before they run: \(error)")
        }
        for problem in problems { logger.error("\(problem)") }
        status.withLock { $0.problems += problems }
    }

    /// Threads started by `open` that drop their own capabilities (the gate's, and its watchdog,
    /// which it starts after its drop).
    var selfDroppingThreads: Int { gateThreadDone.withLock { $0 } == nil ? 0 : 2 }

    /// Starts the gate's thread now, before the agent drops its capabilities: a mark on a file
    /// system makes every exec there wait for an answer, so the thread that answers must run
    /// before the marks are made — and making them needs CAP_SYS_ADMIN. The thread makes them,
    /// drops its own capabilities to the agent's, and answers from then on; the agent's other
    /// threads start after the agent's drop.
    func startGate(_ gate: ExecGate, markingFilesystems: Bool, keeping kept: Set<Capabilities.Name>) {
        let ready = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        gateThreadDone.withLock { $0 = done }
        Threads.start("screentime.gate") { [self] in
            if markingFilesystems {
                var problems: [String] = []
                markFilesystems(gate, &problems)
                status.withLock { $0.problems += problems }
            }
            do {
                try Capabilities.restrict(to: kept, selfDropping: 1)
            } catch {
                logger.critical("the exec gate cannot drop its capabilities: \(error)")
            }
            // Execs wait for this thread: it runs ahead of the programs asking.
            try? ProcConnector.raiseCallingThreadToRealtime(priority: 40)
            status.withLock { $0.gateRunning = true }
            // The agent drops its capabilities once this thread and its watchdog (started from
            // here, after the drop above: it inherits the dropped sets) both run.
            var signalled = false
            defer { if !signalled { ready.signal() } }
            do {
                try gate.run(
                    decide: { [self] request in decide(request) }, fallback: { [self] request in fallback(request) },
                    started: {
                        signalled = true
                        ready.signal()
                    })
            } catch {
                logger.error(
                    "the exec gate failed; shielded and blocked apps are only caught at exec",
                    metadata: ["error": "\(error)"])
            }
            status.withLock { $0.gateRunning = false }
            done.signal()
        }
        ready.wait()
    }

    /// Finds the loaders, starts the judges and judges what runs now (adopting what an earlier
    /// run froze). Called once, after capabilities were dropped (it starts threads).
    func start(snapshot: PolicySnapshot) {
        loaders.withLock { $0 = Loaders.find(hashes: hashes) }
        judges.start()
        apply(snapshot, reconciling: true)
    }

    /// Marks every local file system programs can run from, for `denyAppInstallation`.
    func markFilesystems(_ gate: ExecGate, _ problems: inout [String]) {
        let mounts = MountTable.read().executableFilesystems
        let (marked, failed) = gate.markFilesystems(mounts)
        for (path, error) in failed {
            logger.warning(
                "cannot ask about execs on a file system", metadata: ["mount": "\(path)", "error": "\(error)"])
        }
        if marked.isEmpty {
            problems.append("programs no guardian installed are killed at exec, not refused before they run")
        } else {
            status.withLock { $0.refusingUninstalled = true }
            logger.notice("every exec on these file systems is asked about", metadata: ["mounts": "\(marked)"])
        }
    }

    /// The frozen group the configuration asks for: with `auto`, v2 where it works, else the v1
    /// freezer, else none (SIGSTOP alone). A freezer asked for by name that cannot be made is a
    /// problem the status shows, and processes are then held by SIGSTOP.
    func makeFreezer(_ problems: inout [String]) -> FreezerCgroup? {
        let versions: [FreezerCgroup.Version] =
            switch configuration.freezer {
            case .auto: [.v2, .v1]
            case .v2: [.v2]
            case .v1: [.v1]
            case .signal: []
            }
        var failures: [String] = []
        for version in versions {
            guard let hierarchy = FreezerCgroup.systemHierarchy(version) else {
                failures.append("there is no cgroup \(version.rawValue) freezer hierarchy")
                continue
            }
            do {
                let freezer = try FreezerCgroup(
                    version, hierarchy: hierarchy, name: configuration.freezerGroup + "/frozen")
                if !failures.isEmpty {
                    logger.notice(
                        "using the cgroup \(version.rawValue) freezer",
                        metadata: ["because": "\(failures.joined(separator: "; "))"])
                }
                return freezer
            } catch {
                failures.append("the cgroup \(version.rawValue) frozen group cannot be made: \(error.message)")
            }
        }
        if !failures.isEmpty {
            problems.append(
                "shielded processes are only stopped (SIGSTOP), not frozen: \(failures.joined(separator: "; "))")
        }
        return nil
    }

    /// With `favorCgroupMoves`, the cgroup v2 file system's `favordynmods` on (see `CgroupMoves`):
    /// a move into the frozen group, the exec gate's or the watcher's, then does not wait for an
    /// RCU grace period. The lock it spares is shared by every hierarchy, so a v1 freezer gains
    /// too. Noted in the state directory when the agent turned it on, for `--remove-firewall`.
    func favorCgroupMoves() {
        guard configuration.favorCgroupMoves else { return }
        guard let hierarchy = FreezerCgroup.systemHierarchy(.v2) else {
            logger.notice("cgroup moves not favored: there is no cgroup v2 hierarchy")
            return
        }
        do {
            guard try CgroupMoves.favor(true, at: hierarchy) else { return }
            logger.notice("cgroup moves favored (favordynmods)", metadata: ["hierarchy": "\(hierarchy)"])
            try Files.writeAtomically(
                Array((hierarchy + "\n").utf8), to: Agent.favoredMovesPath(configuration), mode: 0o644)
        } catch {
            logger.notice(
                "cgroup moves not favored: a shielded program may wait for the kernel to be held",
                metadata: ["error": "\(error.message)"])
        }
    }

    /// Processes an earlier run froze with another kind of freezer (the configuration changed)
    /// are moved out and continued; the reconciliation that follows holds again what is still
    /// shielded, so they may run for a moment, once.
    func releaseLeftovers(keeping freezer: FreezerCgroup?) {
        for version in [FreezerCgroup.Version.v2, .v1] where version != freezer?.version {
            guard let hierarchy = FreezerCgroup.systemHierarchy(version),
                let old = FreezerCgroup(
                    existing: version, hierarchy: hierarchy, name: configuration.freezerGroup + "/frozen")
            else { continue }
            let members = old.members()
            let records = members.isEmpty ? [] : (try? database.frozenProcesses()) ?? []
            for pid in members {
                let origin = records.first { $0.pid == pid }?.origin ?? "/"
                do {
                    try old.release(pid, toNearest: origin)
                } catch {
                    logger.error(
                        "cannot move a process out of an earlier run's frozen group",
                        metadata: ["pid": "\(pid)", "error": "\(error.message)"])
                }
                if let handle = ProcessHandle(
                    pid: pid, startTime: inspector.startTime(pid: pid) ?? 0, inspector: inspector)
                {
                    handle.resume()
                }
                logger.notice(
                    "released a process frozen by an earlier run's \(version.rawValue) freezer",
                    metadata: ["pid": "\(pid)"])
            }
        }
    }
}
