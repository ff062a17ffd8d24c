import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

extension ProcessShield {
    // MARK: judging one process

    /// What the kernel says of a process now.
    func kernelEvidence(_ pid: Int32) -> KernelEvidence {
        var evidence = KernelEvidence()
        evidence.cgroup = inspector.cgroup(pid: pid)
        if let path = inspector.executable(pid: pid) {
            evidence.executableDeleted = path.hasSuffix(" (deleted)")
            evidence.executablePath = evidence.executableDeleted ? String(path.dropLast(10)) : path
        }
        evidence.executable = inspector.executableStatus(pid: pid)
        if let root = inspector.rootStatus(pid: pid), let ours = FileStatus.of(path: "/") {
            evidence.rootIsHost = root.key.device == ours.key.device && root.key.inode == ours.key.inode
        }
        return evidence
    }

    /// Tracks and judges a process that just ran a new program (or turned into an authorized
    /// user's, or was found by a scan). Table locked: only the kernel's answers are read here.
    func judgeExec(
        _ pid: Int32, _ table: inout Table, policy: AppPolicy, inherited given: [ApplicationIdentity]? = nil,
        batch: UInt64 = 0, counting: Bool = true
    ) {
        guard let status = inspector.status(pid: pid) else {
            // Gone already (its exit event follows): nothing to judge, nothing to let go.
            return
        }
        guard let owner = policy.owner(ofKernelUID: status.uid), let apps = policy.users[owner] else {
            // No longer (or never) an authorized user's: forgotten, let go if it was held.
            if table.processes[pid]?.hold != nil { release(pid, &table, reason: "changed user") }
            table.processes[pid] = nil
            return
        }
        if counting { table.execsJudged += 1 }
        let startTime = inspector.startTime(pid: pid) ?? 0
        let previous = table.processes[pid].flatMap { $0.startTime == startTime ? $0 : nil }
        var tracked = previous ?? Tracked(uid: status.uid, owner: owner, startTime: startTime)
        tracked.uid = status.uid
        tracked.owner = owner
        tracked.execSerial += 1
        var inherited = given ?? previous?.identities ?? []
        if inherited.isEmpty, let parent = status.parent, let known = table.processes[parent] {
            inherited = known.identities
        }
        tracked.inherited = inherited
        if tracked.parent == nil, let parent = status.parent, table.processes[parent] != nil { tracked.parent = parent }
        tracked.kernel = kernelEvidence(pid)
        tracked.judged = false
        tracked.installRefusal = nil
        let executing = tracked.kernel.executable.map { FileIdentity($0.key) }
        if let gateHold = gateState.withLock({ state -> GateHold? in
            guard let held = state.held[pid], held.file == executing else { return nil }
            return state.held.removeValue(forKey: pid)
        }) {
            // Held by the gate inside this exec (and perhaps for judging before it, by either
            // order): one hold, a shield's, with the origin whichever of them saw.
            var merged =
                tracked.hold ?? Hold(reason: .judging, origin: nil, since: gateHold.since, handle: gateHold.handle)
            merged.reason = .shield(gateHold.token)
            merged.origin = merged.origin ?? gateHold.origin
            if holder.withLock({ $0.freezer == nil }) {
                table.stoppedBySignal.insert(pid)
                restopContinuation.yield()
            } else if gateHold.moveLater, let handle = merged.handle {
                // Stopped inside the exec; now out of it, into the frozen group.
                let moved = holder.withLock { $0 }.hold(handle, stopFirst: false, waiting: true)
                merged.origin = merged.origin ?? moved?.origin
                if (moved?.frozen ?? false) == false {
                    table.stoppedBySignal.insert(pid)
                    restopContinuation.yield()
                }
            }
            tracked.hold = merged
            journal.frozen(
                StateDatabase.FrozenProcess(
                    pid: pid, startTime: startTime, uid: status.uid, token: gateHold.token.base64,
                    origin: merged.origin ?? "/", frozenAt: merged.since))
        }
        let kernel = tracked.kernel
        let key = kernel.executable?.key
        let cached = key.flatMap(hashes.cached)
        tracked.evidence = ProcessEvidence(
            cgroup: kernel.cgroup, executablePath: kernel.executablePath, executableHash: cached)
        tracked.identities = apps.filter.index.identities(of: tracked.evidence, inherited: inherited)
        table.processes[pid] = tracked
        // What the judges must read, and whether the process waits for it. Everything is read even
        // while the user's rules name no app: a shield added later is judged from what was read.
        // The process waits only when what is missing could make its rules act on it.
        let isLoader =
            loaders.withLock { $0.isLoader(file: key, hash: cached) }
            || Interpreter.isLoaderName(kernel.executablePath ?? "")
        var needs: JudgeJob.Needs = [.environment, .installed]
        if isLoader || Interpreter.isInterpreter(kernel.executablePath ?? "") { needs.insert(.script) }
        if cached == nil, kernel.executable?.isRegular ?? false { needs.insert(.executableHash) }
        if !kernel.rootIsHost { needs.insert(.sandbox) }
        var waitsFor: JudgeJob.Needs = apps.filter.isEmpty ? [] : [.script, .executableHash, .sandbox]
        if apps.denyInstalls { waitsFor.insert(.installed) }
        let holding = !needs.isDisjoint(with: waitsFor)
        logger.debug(
            "exec",
            metadata: [
                "pid": "\(pid)", "uid": "\(status.uid)", "exe": "\(kernel.executablePath ?? "-")",
                "identities": "\(tracked.identities)", "needs": "\(needs.rawValue)", "held": "\(tracked.hold != nil)",
            ])
        // The quick verdict, from what is known now: a known shielded or blocked program is held
        // or killed at once; the judges can only add to it.
        if apps.filter.verdict(for: tracked.identities) != nil {
            enforce(pid, &table, policy: policy)
        } else if holding {
            // Stopped first where that is unseen (moving into the frozen group can take
            // milliseconds): not for a terminal's foreground job, whose shell would take the
            // terminal back on the stop.
            hold(
                pid, &table, reason: .judging, stopFirst: !inspector.isTerminalForeground(pid: pid), waiting: false)
        }
        judges.submit(
            JudgeJob(
                pid: pid, owner: owner, startTime: startTime, execSerial: tracked.execSerial, needs: needs,
                kernel: kernel, isLoader: isLoader, holding: holding, batch: batch))
    }

    /// The judges' reads for a job: off every lock, each read bounded (`UntrustedFile`).
    func readEvidence(_ job: JudgeJob) -> JudgeReads {
        var reads = JudgeReads()
        let pid = job.pid
        if job.needs.contains(.executableHash) {
            reads.executableHash = try? hashes.sha256(of: inspector.file("exe", of: pid))
        }
        let isLoader =
            job.isLoader
            || loaders.withLock { $0.isLoader(file: job.kernel.executable?.key, hash: reads.executableHash) }
        if job.needs.contains(.script) || isLoader {
            let checkInstalled = job.needs.contains(.installed)
            let commandLine = inspector.commandLine(pid: pid)
            reads.commandLine = commandLine
            if let script = Interpreter.script(
                in: commandLine, executable: job.kernel.executablePath, isLoader: isLoader)
            {
                let seen = inspector.pathSeen(by: pid, script)
                reads.scriptHash = try? hashes.sha256(of: seen)
                reads.scriptPath = Self.resolve(seen, prefix: "\(inspector.root)/\(pid)/root")
                if isLoader, checkInstalled {
                    // The loader's program must be installed too (an interpreter's script need not).
                    let status = FileStatus.of(path: seen)
                    reads.installRefusal = installRefusal(
                        path: reads.scriptPath, status: status, owner: job.owner, kernelPath: false)
                }
            }
        }
        if job.needs.contains(.environment) {
            reads.launchedDesktopFile = inspector.launchedDesktopFile(pid: pid)
            reads.loadsOwnCode = inspector.loadsOwnCode(pid: pid)
            reads.mountNamespace = inspector.mountNamespace(pid: pid)
            if Self.mayPassLock(job.kernel.executablePath) {
                reads.runsForeignCode = inspector.runsForeignCode(
                    pid: pid, directories: Self.systemCodeDirectories)
            }
        }
        if job.needs.contains(.sandbox) { reads.flatpakID = inspector.flatpakID(pid: pid) }
        if job.needs.contains(.installed), reads.installRefusal == nil {
            reads.installRefusal =
                job.kernel.executableDeleted
                ? "the program was deleted"
                : installRefusal(
                    path: job.kernel.executablePath, status: job.kernel.executable, owner: job.owner, kernelPath: true)
        }
        return reads
    }

    /// A path's real location, without the `/proc/PID/root` it was reached through.
    static func resolve(_ seen: String, prefix: String) -> String? {
        guard var path = Files.realPath(seen) else { return nil }
        if path.hasPrefix(prefix + "/") { path.removeFirst(prefix.count) }
        return path
    }

    /// Why a program is not one a guardian installed, for a user; nil when it is. `path` is the
    /// file's place as the agent sees it (the kernel's name of it), whose directories are read.
    func installRefusal(path: String?, status: FileStatus?, owner: UInt32, kernelPath: Bool) -> String? {
        guard let apps = currentPolicy().users[owner] else { return nil }
        guard let path, path.hasPrefix("/") else { return "the program's place is unknown" }
        var parents: [InstalledProgram.Status] = []
        var directory = path
        while let slash = directory.lastIndex(of: "/") {
            directory = String(directory[..<slash])
            guard let parent = FileStatus.of(path: directory.isEmpty ? "/" : directory, followingSymlinks: false)
            else {
                return apps.installed.refusal(file: status.map(Self.rule), parents: nil)
            }
            parents.append(Self.rule(parent))
            if directory.isEmpty || parents.count > 64 { break }
        }
        return apps.installed.refusal(file: status.map(Self.rule), parents: parents)
    }

    static func rule(_ status: FileStatus) -> InstalledProgram.Status {
        InstalledProgram.Status(owner: status.owner, group: status.group, permissions: status.mode & 0o7777)
    }

    /// The judges are done with a job: their reads join what is known, and the verdict is put
    /// in force (or the process goes on waiting, if it turned out to need more reads).
    func judged(_ job: JudgeJob, _ reads: JudgeReads) {
        // The process may have run another program since, its exec event not read yet: then this
        // judgement is of a program it no longer runs, and that exec will be judged.
        let executable = inspector.executableStatus(pid: job.pid)?.key
        guard executable == job.kernel.executable?.key else { return }
        table.withLock { table in
            let policy = currentPolicy()
            guard var tracked = table.processes[job.pid], tracked.execSerial == job.execSerial,
                tracked.startTime == job.startTime, let apps = policy.users[tracked.owner]
            else { return }
            if let hash = reads.executableHash { tracked.evidence.executableHash = hash }
            if let script = reads.scriptPath { tracked.evidence.scriptPath = script }
            if let hash = reads.scriptHash { tracked.evidence.scriptHash = hash }
            if let file = reads.launchedDesktopFile { tracked.evidence.launchedDesktopFile = file }
            if let id = reads.flatpakID { tracked.evidence.flatpakID = id }
            tracked.loadsOwnCode = reads.loadsOwnCode
            tracked.mountNamespace = reads.mountNamespace
            tracked.runsForeignCode = reads.runsForeignCode
            tracked.installRefusal = reads.installRefusal
            let before = Set(tracked.identities)
            tracked.identities = apps.filter.index.identities(of: tracked.evidence, inherited: tracked.inherited)
            tracked.judged = true
            table.processes[job.pid] = tracked
            logger.debug(
                "judged",
                metadata: [
                    "pid": "\(job.pid)", "identities": "\(tracked.identities)",
                    "verdict": "\(apps.filter.verdict(for: tracked.identities)?.action.rawValue ?? "run")",
                ])
            enforce(job.pid, &table, policy: policy)
            // Children forked while it was being judged inherited less than it turned out to be.
            if !Set(tracked.identities).subtracting(before).isEmpty {
                passOn(from: job.pid, &table, policy: policy)
            }
        }
    }

    /// Gives a process's children (and theirs) what it was found to be, and judges them again.
    func passOn(from root: Int32, _ table: inout Table, policy: AppPolicy) {
        var pending = [root]
        var seen: Set<Int32> = [root]
        while let parent = pending.popLast(), let identities = table.processes[parent]?.identities {
            for (pid, child) in table.processes where child.parent == parent && seen.insert(pid).inserted {
                guard let apps = policy.users[child.owner] else { continue }
                var updated = child
                for identity in identities where !updated.inherited.contains(identity) {
                    updated.inherited.append(identity)
                }
                updated.identities = apps.filter.index.identities(of: updated.evidence, inherited: updated.inherited)
                table.processes[pid] = updated
                enforce(pid, &table, policy: policy)
                pending.append(pid)
            }
        }
    }

    /// A judgement ran past its deadline: its process is held until it is done.
    func overdue(_ job: JudgeJob, stuck: Bool) {
        table.withLock { table in
            guard let tracked = table.processes[job.pid], tracked.execSerial == job.execSerial, !tracked.judged
            else { return }
            if stuck {
                logger.warning(
                    "a judgement is stuck in a read; its process waits",
                    metadata: ["pid": "\(job.pid)", "uid": "\(tracked.uid)"])
            }
            if tracked.hold == nil {
                hold(job.pid, &table, reason: stuck ? .unjudged : .judging, stopFirst: false, waiting: false)
            } else if stuck, tracked.hold?.reason == .judging {
                table.processes[job.pid]?.hold?.reason = .unjudged
            }
        }
    }
}
