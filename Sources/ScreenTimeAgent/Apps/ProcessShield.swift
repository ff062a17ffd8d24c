import Foundation
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// The process shield: every process an authorized user starts is known to the agent the moment
/// it starts (the kernel's proc connector), taken for the applications it can be (its systemd unit,
/// Flatpak sandbox, launching desktop file, executable or script by path and by content, its
/// parent's), and, when the user's policy shields one of them, held in a root-owned frozen cgroup
/// the user cannot thaw; a blocked application, or (with `denyAppInstallation`) a program no
/// guardian installed, is refused at exec or killed.
///
/// Three threads act, none waiting on another's slow work:
/// - the *watcher* (real-time) reads process events and decides from what the kernel answers at
///   once (`KernelEvidence`, cached hashes). What needs more — a script, a file not hashed yet, a
///   sandbox's files, whether a program is installed — goes to the *judges* (`ProcessJudges`),
///   and the process is held until they are done when the answer could shield it.
/// - the *judges* make the reads a child can shape (its memory, its files), off every lock,
///   with deadlines: a judgement late or stuck holds its process, never anyone else's.
/// - the *gate* (`ExecGate`) answers the kernel before known shielded and blocked programs run:
///   blocked ones are refused, shielded ones are held in the frozen group inside `execve`,
///   before their first instruction, and the child's other opens of them are refused.
///
/// Every signal, freeze and kill goes through a pidfd (`ProcessHandle`) opened after checking the
/// process's start time and that its uid is an authorized user's; a process of anyone else is
/// never touched, whatever the table says.
public final class ProcessShield: Service, PolicyConsumer, Sendable {
    private let configuration: AgentConfiguration
    let database: StateDatabase
    private let minter: TokenMinter
    let logger: Logger
    let inspector: ProcessInspector
    let hashes = ExecutableHashes()
    private let systemDataDirectories: [String]
    let journal: ShieldJournal

    /// The rules in force (swapped whole on each policy snapshot).
    let policy = Mutex(AppPolicy.empty)
    let table = Mutex(Table())
    /// Held through a whole policy change, so that two never interleave.
    private let applying = Mutex(())
    let holder = Mutex(ProcessHolder(freezer: nil))
    let loaders = Mutex(Loaders())
    let connector: Mutex<ProcConnector?> = Mutex(nil)
    let gate: Mutex<ExecGate?> = Mutex(nil)
    let gateState = Mutex(GateState())
    /// Executables killed or frozen as themselves (known by content), marked for the gate too.
    let learned = Mutex<[String: String]>([:])
    /// The last index read for each user: a catalogue that could not be read in time keeps it.
    private let indexes = Mutex<[UInt32: ApplicationIndex]>([:])
    let status = Mutex(StatusState())
    let restopSignal: AsyncStream<Void>
    let restopContinuation: AsyncStream<Void>.Continuation
    private let judgesBox = Mutex<ProcessJudges?>(nil)
    /// Signalled when the gate's thread ends.
    let gateThreadDone = Mutex<DispatchSemaphore?>(nil)

    struct Table {
        var processes: [Int32: Tracked] = [:]
        /// Processes held by SIGSTOP alone, checked again while any exist.
        var stoppedBySignal: Set<Int32> = []
        var execsJudged = 0
    }

    struct StatusState {
        var watching = false
        var problems: [String] = []
        var gateRunning = false
        var refusingUninstalled = false
    }

    struct GateState {
        /// Processes the gate held inside `execve`: the watcher takes them over at the exec event.
        var held: [Int32: GateHold] = [:]
        /// The exec each thread was just let through: the open of the same file that follows.
        var execOpens: [Int32: FileIdentity] = [:]
    }

    struct GateHold {
        var token: ApplicationToken
        /// Nil when the process was in the frozen group already (held for judging).
        var origin: String?
        /// Only stopped inside the exec (the v1 freezer): moved into the frozen group once the
        /// exec is done.
        var moveLater = false
        /// The file being executed: only the exec event of that program takes the hold over (an
        /// event of the program before it, read late, does not).
        var file: FileIdentity
        var handle: ProcessHandle
        var since: Date
    }

    init(
        configuration: AgentConfiguration, database: StateDatabase, minter: TokenMinter, logger: Logger,
        proc: String = "/proc"
    ) {
        self.configuration = configuration
        self.database = database
        self.minter = minter
        self.logger = logger
        self.inspector = ProcessInspector(root: proc)
        self.systemDataDirectories = ApplicationCatalogue.systemDataDirectories(
            environment: ProcessInfo.processInfo.environment["XDG_DATA_DIRS"])
        self.journal = ShieldJournal(database: database, logger: logger)
        (restopSignal, restopContinuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var judges: ProcessJudges {
        judgesBox.withLock { box in
            if let judges = box { return judges }
            let made = ProcessJudges(
                read: { [unowned self] job in readEvidence(job) },
                done: { [unowned self] job, reads in judged(job, reads) },
                overdue: { [unowned self] job, stuck in overdue(job, stuck: stuck) })
            box = made
            return made
        }
    }

    func currentPolicy() -> AppPolicy { policy.withLock { $0 } }

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
    private func startGate(_ gate: ExecGate, markingFilesystems: Bool, keeping kept: Set<Capabilities.Name>) {
        let ready = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        gateThreadDone.withLock { $0 = done }
        let thread = Thread { [self] in
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
        thread.name = "screentime.gate"
        thread.start()
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
    private func markFilesystems(_ gate: ExecGate, _ problems: inout [String]) {
        let mounts = MountTable.read().executableFilesystems
        let (marked, failed) = gate.markFilesystems(mounts)
        for (path, error) in failed {
            logger.warning("cannot ask about execs on a file system", metadata: ["mount": "\(path)", "error": "\(error)"])
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
    private func makeFreezer(_ problems: inout [String]) -> FreezerCgroup? {
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

    /// Processes an earlier run froze with another kind of freezer (the configuration changed)
    /// are moved out and continued; the reconciliation that follows holds again what is still
    /// shielded, so they may run for a moment, once.
    private func releaseLeftovers(keeping freezer: FreezerCgroup?) {
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
                if let handle = ProcessHandle(pid: pid, startTime: inspector.startTime(pid: pid) ?? 0, inspector: inspector)
                {
                    handle.resume()
                }
                logger.notice(
                    "released a process frozen by an earlier run's \(version.rawValue) freezer",
                    metadata: ["pid": "\(pid)"])
            }
        }
    }

    // MARK: policy

    /// Puts a snapshot in force: rebuilds each user's rules, re-judges every process of theirs —
    /// freezes what is newly shielded, thaws what no longer is, kills what is blocked — and
    /// returns once that is done (processes whose judgement is still out are held by then).
    func apply(_ snapshot: PolicySnapshot) { apply(snapshot, reconciling: false) }

    private func apply(_ snapshot: PolicySnapshot, reconciling: Bool) {
        applying.withLock { _ in
            let previous = currentPolicy()
            let next = makePolicy(snapshot, previous: previous)
            let batch = judges.makeBatch()
            let records = reconciling ? (try? database.frozenProcesses()) ?? [] : []
            table.withLock { table in
                // Swapped under the table's lock: an event handled with the table sees the old
                // policy and is caught by the scan below, or the new one.
                policy.withLock { $0 = next }
                refreshGate(next)
                // Users no longer authorized: everything of theirs is let go.
                for (pid, tracked) in table.processes where next.users[tracked.owner] == nil {
                    release(pid, &table, reason: "authorization revoked")
                    table.processes[pid] = nil
                }
                let added = Set(next.users.keys).subtracting(previous.users.keys)
                if reconciling || !added.isEmpty {
                    scan(owners: reconciling ? Set(next.users.keys) : added, &table, policy: next, batch: batch)
                }
                if reconciling { adopt(records, &table, policy: next) }
                for pid in table.processes.keys.sorted() {
                    guard var tracked = table.processes[pid], let apps = next.users[tracked.owner] else { continue }
                    tracked.identities = apps.filter.index.identities(of: tracked.evidence, inherited: tracked.inherited)
                    table.processes[pid] = tracked
                    enforce(pid, &table, policy: next)
                }
                takeOverGateHolds(&table, policy: next, olderThan: 1)
            }
            if !judges.wait(for: batch, until: .now + .seconds(1)) {
                logger.notice("some processes are held until their judgement is done")
            }
            flush()
        }
    }

    /// Each user's rules from a snapshot: their catalogue read (with a deadline: a home that does
    /// not answer keeps the last index), the filter, whether only installed programs run, and
    /// the programs the gate marks.
    private func makePolicy(_ snapshot: PolicySnapshot, previous: AppPolicy) -> AppPolicy {
        var users: [UInt32: UserApps] = [:]
        var marked: [FileIdentity: [UInt32: ApplicationFilter.Verdict]] = [:]
        var paths: Set<String> = []
        let learnedNow = learned.withLock { $0 }
        for (uid, user) in snapshot.users {
            let index = readIndex(user)
            let filter = ApplicationFilter(policy: user.policy, index: index, minter: minter)
            var groups = user.subordinateGIDs
            for gid in user.groups { groups.insert(gid...gid) }
            let person = InstalledProgram.Person(uids: user.uids, groups: groups)
            let apps = UserApps(
                uid: uid, name: user.name, filter: filter, denyInstalls: !user.policy.appInstallationDenied.isEmpty,
                installed: InstalledProgram(person: person))
            users[uid] = apps
            var verdicts = filter.programVerdicts
            for (path, hash) in learnedNow where verdicts[path] == nil {
                let identities = filter.index.identities(
                    of: ProcessEvidence(executablePath: path, executableHash: hash))
                if let verdict = filter.verdict(for: identities) { verdicts[path] = verdict }
            }
            for (path, verdict) in verdicts {
                guard let status = FileStatus.of(path: path), status.isRegular else { continue }
                marked[FileIdentity(status.key), default: [:]][uid] = verdict
                paths.insert(path)
            }
        }
        return AppPolicy(
            generation: snapshot.generation, snapshot: snapshot, users: users, marked: marked,
            markedPaths: paths.sorted())
    }

    /// A user's application index: the catalogue read on a thread of its own, given two seconds;
    /// late, the last index read stays (and the late read is dropped).
    private func readIndex(_ user: PolicySnapshot.User) -> ApplicationIndex {
        let box = Mutex<ApplicationIndex?>(nil)
        let done = DispatchSemaphore(value: 0)
        let home = user.home
        let directories = systemDataDirectories
        let hashes = hashes
        let logger = logger
        let thread = Thread {
            let catalogue = ApplicationCatalogue(home: home, systemDataDirectories: directories)
            for problem in catalogue.problems.prefix(5) {
                logger.notice("a desktop entry was not read", metadata: ["user": "\(user.name)", "why": "\(problem)"])
            }
            box.withLock { $0 = catalogue.index(hashes: hashes) }
            done.signal()
        }
        thread.name = "screentime.catalogue"
        thread.start()
        if done.wait(timeout: .now() + 2) == .success, let index = box.withLock({ $0 }) {
            indexes.withLock { $0[user.uid] = index }
            return index
        }
        logger.error(
            "the applications of a user could not be read in time; the last ones read stay in force",
            metadata: ["user": "\(user.name)"])
        return indexes.withLock { $0[user.uid] } ?? ApplicationIndex()
    }

    /// Puts the gate's marks in step with the policy: marks added for new programs, removed for
    /// old ones; file system marks dropped when no child needs them any more.
    private func refreshGate(_ next: AppPolicy) {
        guard let gate = gate.withLock({ $0 }) else { return }
        do {
            try gate.clear()
        } catch {
            logger.error("cannot clear the exec gate's marks", metadata: ["error": "\(error.message)"])
        }
        for path in next.markedPaths {
            do {
                try gate.mark(path)
            } catch {
                logger.debug("cannot mark a program", metadata: ["path": "\(path)", "error": "\(error.message)"])
            }
        }
        if !next.markedPaths.isEmpty {
            logger.info("shielded and blocked programs asked about at exec", metadata: ["count": "\(next.markedPaths.count)"])
        }
        if gate.marksFilesystems, !next.deniesInstalls {
            gate.dropFilesystemMarks()
            status.withLock { $0.refusingUninstalled = false }
        }
    }

    /// Reads `/proc` for the processes of some users: each is tracked, parents before children so
    /// that each inherits its parent's applications, and judged as at an exec.
    private func scan(
        owners: Set<UInt32>, _ table: inout Table, policy: AppPolicy, batch: UInt64, onlyUntracked: Bool = false
    ) {
        var parents: [Int32: Int32] = [:]
        var found: [Int32] = []
        for pid in inspector.pids() {
            if onlyUntracked, table.processes[pid] != nil { continue }
            guard let status = inspector.status(pid: pid), let owner = policy.owner(ofKernelUID: status.uid),
                owners.contains(owner)
            else { continue }
            parents[pid] = status.parent
            found.append(pid)
        }
        let known = Set(found)
        var depths: [Int32: Int] = [:]
        for pid in found {
            var depth = 0
            var current = pid
            while let parent = parents[current], known.contains(parent), depth < 4096 {
                depth += 1
                current = parent
            }
            depths[pid] = depth
        }
        for pid in found.sorted(by: { (depths[$0] ?? 0, $0) < (depths[$1] ?? 0, $1) }) {
            let inherited = parents[pid].flatMap { table.processes[$0]?.identities } ?? []
            judgeExec(pid, &table, policy: policy, inherited: inherited, batch: batch, counting: false)
        }
    }

    /// After a restart: the frozen group's members and the records of what an earlier run froze.
    /// A member still shielded stays held (the records say where it came from); the rest is let
    /// go by `enforce` as for any lifted shield; a member not of an authorized user goes back.
    private func adopt(_ records: [StateDatabase.FrozenProcess], _ table: inout Table, policy: AppPolicy) {
        var byPid: [Int32: StateDatabase.FrozenProcess] = [:]
        for record in records { byPid[record.pid] = record }
        let holder = holder.withLock { $0 }
        let members = Set(holder.members())
        for pid in members {
            let startTime = inspector.startTime(pid: pid) ?? 0
            let record = byPid[pid].flatMap { $0.startTime == startTime ? $0 : nil }
            let origin = record?.origin ?? "/"
            let token = record.flatMap { try? ApplicationToken(base64: $0.token) }
            guard let handle = ProcessHandle(pid: pid, startTime: startTime, inspector: inspector) else { continue }
            if table.processes[pid] != nil {
                table.processes[pid]?.hold = Hold(
                    reason: .shield(token), origin: origin, since: record?.frozenAt ?? Date(), handle: handle)
            } else {
                // Not an authorized user's (any more): it goes back.
                try? holder.release(handle, origin: origin)
                journal.thawed(pid: pid, startTime: startTime)
                logger.info("thawed", metadata: ["pid": "\(pid)", "reason": "not an authorized user's"])
            }
        }
        // Records of processes that are gone, or were thawed by hand: forgotten.
        for record in records where !members.contains(record.pid) {
            journal.thawed(pid: record.pid, startTime: record.startTime)
        }
        if !members.isEmpty {
            logger.notice("found processes frozen by an earlier run", metadata: ["count": "\(members.count)"])
        }
    }

    // MARK: judging one process

    /// What the kernel says of a process now.
    private func kernelEvidence(_ pid: Int32) -> KernelEvidence {
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
            var merged = tracked.hold ?? Hold(reason: .judging, origin: nil, since: gateHold.since, handle: gateHold.handle)
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
            reads.executableHash = try? hashes.sha256(of: "\(inspector.root)/\(pid)/exe")
        }
        let isLoader =
            job.isLoader || loaders.withLock { $0.isLoader(file: job.kernel.executable?.key, hash: reads.executableHash) }
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
        if job.needs.contains(.environment) { reads.launchedDesktopFile = inspector.launchedDesktopFile(pid: pid) }
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
    private static func resolve(_ seen: String, prefix: String) -> String? {
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

    private static func rule(_ status: FileStatus) -> InstalledProgram.Status {
        InstalledProgram.Status(owner: status.owner, group: status.group, permissions: status.mode & 0o7777)
    }

    /// The judges are done with a job: their reads join what is known, and the verdict is put
    /// in force (or the process goes on waiting, if it turned out to need more reads).
    private func judged(_ job: JudgeJob, _ reads: JudgeReads) {
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
    private func passOn(from root: Int32, _ table: inout Table, policy: AppPolicy) {
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
    private func overdue(_ job: JudgeJob, stuck: Bool) {
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

    // MARK: holding, letting go, killing

    /// Puts the verdict on one tracked process in force: hold, kill, or let it (go) run.
    func enforce(_ pid: Int32, _ table: inout Table, policy: AppPolicy) {
        guard let tracked = table.processes[pid], let apps = policy.users[tracked.owner] else { return }
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
                if table.processes[pid]?.hold != nil { note(.frozen, pid: pid, uid: tracked.uid, verdict: verdict, apps: apps) }
            }
        case nil:
            if tracked.judged, tracked.hold != nil { release(pid, &table, reason: "not shielded") }
        }
    }

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
        guard var (origin, frozen) = holder.hold(handle, stopFirst: stopFirst, waiting: waiting) else { return }
        // Already in the frozen group: the gate held it inside an exec, and knows where from.
        if origin == nil { origin = gateState.withLock { $0.held[pid]?.origin } }
        if !frozen {
            table.stoppedBySignal.insert(pid)
            restopContinuation.yield()
        }
        let since = Date()
        table.processes[pid]?.hold = Hold(reason: reason, origin: origin, since: since, handle: handle)
        if let token = reason.token { recordFrozen(pid, tracked, token: token, origin: origin, since: since) }
        logger.debug("held", metadata: ["pid": "\(pid)", "why": "\(reason.label)"])
    }

    private func recordFrozen(_ pid: Int32, _ tracked: Tracked, token: ApplicationToken, origin: String?, since: Date) {
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
        // The gate held it again inside an exec the watcher has not read yet: that hold stays.
        if gateState.withLock({ $0.held[pid] != nil }) { return }
        let holder = holder.withLock { $0 }
        if let handle = hold.handle {
            do {
                try holder.release(handle, origin: hold.origin ?? "/")
            } catch {
                logger.error(
                    "cannot move a process out of the frozen group",
                    metadata: ["pid": "\(pid)", "error": "\(error.message)"])
            }
        }
        if let token = hold.reason.token {
            journal.thawed(pid: pid, startTime: tracked.startTime)
            journal.event(
                StateDatabase.ApplicationEvent(time: Date(), uid: tracked.uid, token: token.base64, pid: pid, action: .thawed),
                name: nil)
            logger.info("thawed", metadata: ["pid": "\(pid)", "reason": "\(reason)"])
        }
    }

    /// Kills a blocked process (a frozen one too: a v1-frozen task dies only once moved out).
    private func kill(_ pid: Int32, _ table: inout Table, verdict: ApplicationFilter.Verdict, apps: UserApps) {
        guard let tracked = table.processes[pid] else { return }
        if signalKill(pid, tracked, &table) { note(.killed, pid: pid, uid: tracked.uid, verdict: verdict, apps: apps) }
    }

    /// Kills a program no guardian installed (`denyAppInstallation`).
    private func kill(_ pid: Int32, _ table: inout Table, refusal: String) {
        guard let tracked = table.processes[pid] else { return }
        if signalKill(pid, tracked, &table) {
            logger.info("killed a program no guardian installed", metadata: ["pid": "\(pid)", "why": "\(refusal)"])
            noteUninstalled(pid: pid, uid: tracked.uid, path: tracked.kernel.executablePath)
        }
    }

    private func signalKill(_ pid: Int32, _ tracked: Tracked, _ table: inout Table) -> Bool {
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
    private func learn(_ pid: Int32, _ tracked: Tracked, filter: ApplicationFilter, verdict: ApplicationFilter.Verdict) {
        guard let gate = gate.withLock({ $0 }), let path = tracked.kernel.executablePath,
            let hash = tracked.evidence.executableHash,
            filter.verdict(for: filter.index.identities(of: ProcessEvidence(executablePath: path, executableHash: hash)))
                != nil,
            learned.withLock({ $0[path] }) != hash
        else { return }
        // Through /proc/PID/exe: the very file it runs, even if renamed since.
        if (try? gate.mark("\(inspector.root)/\(pid)/exe")) != nil {
            learned.withLock { $0[path] = hash }
            if let status = tracked.kernel.executable {
                policy.withLock { policy in
                    policy.marked[FileIdentity(status.key), default: [:]][tracked.owner] = verdict
                }
            }
        }
    }

    /// Processes the gate held inside `execve` whose exec event never came (the exec failed
    /// after the gate let it go on): judged again as the program they still run.
    func takeOverGateHolds(_ table: inout Table, policy: AppPolicy, olderThan seconds: TimeInterval) {
        let now = Date()
        let late = gateState.withLock { state in
            let late = state.held.filter { now.timeIntervalSince($0.value.since) >= seconds }
            for pid in late.keys { state.held[pid] = nil }
            return late
        }
        for (pid, gateHold) in late {
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

    // MARK: events

    func note(
        _ action: StateDatabase.ApplicationEvent.Action, pid: Int32, uid: UInt32, verdict: ApplicationFilter.Verdict,
        apps: UserApps
    ) {
        let name = apps.filter.index.application(verdict.application)?.name ?? Self.displayName(verdict.application)
        journal.event(
            StateDatabase.ApplicationEvent(time: Date(), uid: uid, token: verdict.token.base64, pid: pid, action: action),
            name: (
                verdict.token.base64,
                TokenName(kind: .app, identity: verdict.application.canonical, displayName: name)
            ))
        if action != .frozen { logger.info("\(action.rawValue)", metadata: ["pid": "\(pid)", "app": "\(name)"]) }
    }

    /// A program no guardian installed, refused or killed: its event names the program by content
    /// where it could be hashed, else by its path's last part.
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

    private func handle(_ event: ProcConnector.Event) {
        switch event {
        case .fork(let parent, let child):
            table.withLock { table in
                let policy = currentPolicy()
                guard let known = table.processes[parent] else { return }
                var tracked = Tracked(
                    uid: known.uid, owner: known.owner, startTime: inspector.startTime(pid: child) ?? 0)
                tracked.kernel = known.kernel
                tracked.evidence = known.evidence
                tracked.inherited = known.identities
                tracked.identities = known.identities
                tracked.judged = known.judged
                tracked.installRefusal = known.installRefusal
                tracked.parent = parent
                table.processes[child] = tracked
                if let parentHold = known.hold {
                    // Forked as it was held: the child is in the frozen group with it.
                    let handle = ProcessHandle(pid: child, startTime: tracked.startTime, inspector: inspector)
                    table.processes[child]?.hold = Hold(
                        reason: parentHold.reason, origin: parentHold.origin, since: parentHold.since, handle: handle)
                    if !(holder.withLock { $0 }.isInFrozenGroup(child)) {
                        table.processes[child]?.hold = nil
                        hold(child, &table, reason: parentHold.reason, stopFirst: true, waiting: false)
                    }
                }
                if !known.judged {
                    // Its parent is still being judged: so is it, with the parent's reads.
                    judgeExec(child, &table, policy: policy, inherited: known.inherited, counting: false)
                } else if known.action != nil || known.hold != nil {
                    enforce(child, &table, policy: policy)
                }
            }
        case .exec(let pid):
            table.withLock { judgeExec(pid, &$0, policy: currentPolicy()) }
        case .uid(let pid, let real, _):
            table.withLock { table in
                let policy = currentPolicy()
                if policy.owner(ofKernelUID: real) != nil || table.processes[pid] != nil {
                    judgeExec(pid, &table, policy: policy)
                }
            }
        case .exit(let pid, _):
            table.withLock { table in
                guard let tracked = table.processes.removeValue(forKey: pid) else { return }
                table.stoppedBySignal.remove(pid)
                // Its pid may come back as another process: its children forget it.
                for (child, entry) in table.processes where entry.parent == pid { table.processes[child]?.parent = nil }
                if tracked.hold?.reason.token != nil { journal.thawed(pid: pid, startTime: tracked.startTime) }
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

    /// After lost events: what the table says is checked against `/proc`. Entries whose process
    /// is gone or whose pid now names another process are dropped; processes of authorized
    /// users not in the table are judged; members of the frozen group nobody accounts for go back.
    private func reconcile(_ table: inout Table, policy: AppPolicy) {
        for (pid, tracked) in table.processes {
            let status = inspector.status(pid: pid)
            let current = inspector.startTime(pid: pid)
            guard current == tracked.startTime, let status, policy.owner(ofKernelUID: status.uid) != nil else {
                table.processes[pid] = nil
                table.stoppedBySignal.remove(pid)
                continue
            }
        }
        scan(owners: Set(policy.users.keys), &table, policy: policy, batch: 0, onlyUntracked: true)
        let holder = holder.withLock { $0 }
        for pid in holder.members() where table.processes[pid]?.hold == nil {
            if gateState.withLock({ $0.held[pid] != nil }) { continue }
            let startTime = inspector.startTime(pid: pid) ?? 0
            guard let handle = ProcessHandle(pid: pid, startTime: startTime, inspector: inspector) else { continue }
            try? holder.release(handle, origin: "/")
            logger.notice("let go of a frozen process nobody accounts for", metadata: ["pid": "\(pid)"])
        }
        for (pid, tracked) in table.processes where tracked.judged {
            enforce(pid, &table, policy: policy)
        }
    }

    // MARK: running

    public func run() async throws {
        guard let connector = connector.withLock({ $0 }) else {
            // Without process events the gate still answers, and changes are still put in force.
            async let gating: Void = gateLoop()
            async let writing: Void = journal.run { [self] in currentPolicy().users[$0] != nil }
            try? await gracefulShutdown()
            gate.withLock { $0 }?.stop()
            journal.finish()
            _ = await (gating, writing)
            return
        }
        status.withLock { $0.watching = true }
        async let writing: Void = journal.run { [self] in currentPolicy().users[$0] != nil }
        async let restopping: Void = restopLoop()
        async let gating: Void = gateLoop()
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    do {
                        // Stopping a program before its main() needs this thread to run the
                        // moment the exec event arrives.
                        try ProcConnector.raiseCallingThreadToRealtime()
                    } catch {
                        logger.warning(
                            "the process watcher runs at normal priority; programs may run a little before they are stopped",
                            metadata: ["error": "\(error)"])
                    }
                    do {
                        try connector.run { [self] event in handle(event) }
                    } catch {
                        status.withLock {
                            $0.problems.append("watching processes failed: \(error)")
                            $0.watching = false
                        }
                        logger.error("watching processes failed", metadata: ["error": "\(error)"])
                    }
                    done.resume()
                }
                thread.name = "screentime.proc"
                thread.start()
            }
        } onGracefulShutdown: {
            connector.stop()
        }
        status.withLock { $0.watching = false }
        journal.finish()
        restopContinuation.finish()
        gate.withLock { $0 }?.stop()
        judges.stop()
        _ = await (writing, restopping, gating)
        flush()
        logger.info(
            "stopped watching processes; what is frozen stays frozen until the agent is back",
            metadata: ["execsJudged": "\(table.withLock { $0.execsJudged })"])
    }

    /// Where no freezer holds them, stopped processes are stopped again if someone continued
    /// them: checked every 20 ms while there are such processes, not at all otherwise.
    private func restopLoop() async {
        for await _ in restopSignal {
            while true {
                let handles = table.withLock { table in
                    table.stoppedBySignal.compactMap { table.processes[$0]?.hold?.handle }
                }
                if handles.isEmpty { break }
                for handle in handles where inspector.state(pid: handle.pid).map({ $0 != "T" && $0 != "t" }) ?? false {
                    handle.stop()
                }
                try? await Task.sleep(for: .milliseconds(20))
                if Task.isCancelled { return }
            }
        }
    }
}
