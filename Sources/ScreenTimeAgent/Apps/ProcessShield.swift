import Foundation
import Glibc
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// The process shield: every process an authorized user starts is known to the agent the moment
/// it starts (the kernel's proc connector), taken for the applications it can be (its systemd unit,
/// Flatpak sandbox, launching desktop file, executable or script by path and by content, its
/// parent's), and, when the user's policy shields one of them, stopped at once and held in a
/// root-owned frozen cgroup the user cannot thaw; a blocked application is killed at exec.
///
/// `prepare()` (before the services start) subscribes to the connector, makes the cgroup and
/// reconciles: processes frozen by an earlier run that are no longer shielded are thawed back
/// into their own groups, running shielded ones are frozen. `run()` reads the events on a
/// real-time thread until the agent stops. A change of policy re-judges every known process
/// before the change's reply is sent. Only the authorized users' processes are ever touched.
public final class ProcessShield: Service, Sendable {
    private let configuration: AgentConfiguration
    private let database: StateDatabase
    private let minter: TokenMinter
    private let logger: Logger
    private let inspector: ProcessInspector
    private let hashes = ExecutableHashes()
    private let users = UserDirectory()
    private let systemDataDirectories: [String]
    private let state = Mutex(State())
    /// Held through a whole policy change, so that two never interleave.
    private let changing = Mutex(())
    private let pending = Mutex(PendingWrites())
    private let writeSignal: AsyncStream<Void>
    private let writeContinuation: AsyncStream<Void>.Continuation
    private let connector: Mutex<ProcConnector?> = Mutex(nil)
    /// Refuses execs of blocked programs before they run; nil where fanotify cannot be had.
    private let gate: Mutex<ExecGate?> = Mutex(nil)
    /// The filters the gate decides with: its own copy, so that answering the kernel never
    /// waits for the process watcher's lock (an exec the agent itself makes may be asked about).
    private let gateFilters = Mutex<[UInt32: ApplicationFilter]>([:])
    /// Executables of processes killed as blocked (path → content hash), marked for the gate too.
    private let learnedPrograms = Mutex<[String: String?]>([:])
    private let gateRunning = Atomic<Bool>(false)
    private let restopSignal: AsyncStream<Void>
    private let restopContinuation: AsyncStream<Void>.Continuation

    struct Frozen {
        /// Nil for a process found frozen after a crash with no record of why.
        var token: ApplicationToken?
        var origin: String
        var since: Date
        var startTime: UInt64
    }

    struct Tracked {
        var uid: UInt32
        var evidence: ProcessEvidence
        /// What the parent was (at fork) and what this process ran before its last exec.
        var inherited: [ApplicationIdentity]
        var identities: [ApplicationIdentity]
        /// What the last judgement said (nil: let it run); a fork of a process judged nil
        /// needs no new judgement, so the common fork costs a dictionary lookup.
        var action: ApplicationFilter.Action? = nil
        var frozen: Frozen?
    }

    private struct State {
        var filters: [UInt32: ApplicationFilter] = [:]
        var processes: [Int32: Tracked] = [:]
        /// Nil where there is no cgroup freezer (or none is wanted): processes are then held by
        /// SIGSTOP alone.
        var freezer: FreezerCgroup?
        var watching = false
        var problems: [String] = []
        /// Processes held by SIGSTOP alone, checked again while any exist.
        var stoppedBySignal: Set<Int32> = []
        var execsJudged = 0
    }

    private struct PendingWrites {
        var frozen: [StateDatabase.FrozenProcess] = []
        var thawed: [(pid: Int32, startTime: UInt64)] = []
        var events: [StateDatabase.ApplicationEvent] = []
        var names: [String: TokenName] = [:]
        var isEmpty: Bool { frozen.isEmpty && thawed.isEmpty && events.isEmpty }
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
        (writeSignal, writeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (restopSignal, restopContinuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: setting up

    /// Subscribes to process events, makes the frozen group, and reconciles with what runs now.
    /// Called once, before the services start (and before capabilities could be dropped).
    func prepare() {
        var problems: [String] = []
        do {
            let opened = try ProcConnector()
            connector.withLock { $0 = opened }
        } catch {
            problems.append("new processes cannot be watched, so shields apply only at changes: \(error.message)")
        }
        let freezer = makeFreezer(&problems)
        releaseLeftovers(keeping: freezer)
        do {
            // Needs CAP_SYS_ADMIN, which the agent drops after setup; marks are added later.
            let opened = try ExecGate()
            gate.withLock { $0 = opened }
        } catch {
            problems.append("blocked apps are killed at exec, not refused before they run: \(error.message)")
        }
        for problem in problems { logger.error("\(problem)") }
        state.withLock {
            $0.freezer = freezer
            $0.problems = problems
        }
        policyChanged(reconciling: true)
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
    /// are moved out and continued; the reconciliation that follows freezes again what is still
    /// shielded, so they may run for a moment, once.
    private func releaseLeftovers(keeping freezer: FreezerCgroup?) {
        for version in [FreezerCgroup.Version.v2, .v1] where version != freezer?.version {
            guard let hierarchy = FreezerCgroup.systemHierarchy(version),
                let old = FreezerCgroup(
                    existing: version, hierarchy: hierarchy, name: configuration.freezerGroup + "/frozen")
            else { continue }
            let members = old.members()
            // Recorded origins are the old hierarchy's groups, read only when there is something to move.
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
                kill(pid, SIGCONT)
                logger.notice(
                    "released a process frozen by an earlier run's \(version.rawValue) freezer",
                    metadata: ["pid": "\(pid)"])
            }
        }
    }

    // MARK: policy

    /// Rebuilds every authorized user's filter and re-judges every process of theirs: freezes
    /// what is newly shielded, thaws what no longer is, kills what is blocked. Returns when done.
    func policyChanged() { policyChanged(reconciling: false) }

    private func policyChanged(reconciling: Bool) {
        changing.withLock { _ in
            var filters: [UInt32: ApplicationFilter] = [:]
            do {
                for record in try database.authorizations() where record.status == .approved {
                    filters[record.uid] = try filter(uid: record.uid)
                }
            } catch {
                logger.error("cannot read the policies for the process shield", metadata: ["error": "\(error)"])
                return
            }
            let records = reconciling ? (try? database.frozenProcesses()) ?? [] : []
            state.withLock { state in
                let old = Set(state.filters.keys)
                state.filters = filters
                // Users no longer authorized: everything of theirs is let go.
                for (pid, tracked) in state.processes where filters[tracked.uid] == nil {
                    release(pid, &state, reason: "authorization revoked")
                    state.processes[pid] = nil
                }
                let added = Set(filters.keys).subtracting(old)
                if !added.isEmpty || reconciling { scan(uids: reconciling ? Set(filters.keys) : added, &state) }
                if reconciling { adopt(records, &state) }
                for pid in state.processes.keys.sorted() {
                    guard var tracked = state.processes[pid], let filter = filters[tracked.uid] else { continue }
                    tracked.identities = filter.index.identities(of: tracked.evidence, inherited: tracked.inherited)
                    state.processes[pid] = tracked
                    apply(filter.verdict(for: tracked.identities), to: pid, &state)
                }
            }
            refreshGate(filters)
            flushWrites()
        }
    }

    /// Marks, for the exec gate, the programs of every user's blocked applications that are
    /// known: their entries' programs, and executables seen killed as blocked.
    private func refreshGate(_ filters: [UInt32: ApplicationFilter]) {
        gateFilters.withLock { $0 = filters }
        guard let gate = gate.withLock({ $0 }) else { return }
        var paths = Set(filters.values.flatMap(\.blockedPrograms))
        for (path, hash) in learnedPrograms.withLock({ $0 })
        where filters.values.contains(where: { $0.blocks(path: path, sha256: hash) }) {
            paths.insert(path)
        }
        do {
            try gate.clear()
        } catch {
            logger.error("cannot clear the exec gate's marks", metadata: ["error": "\(error.message)"])
        }
        for path in paths.sorted() {
            do {
                try gate.mark(path)
            } catch {
                logger.debug(
                    "cannot mark a blocked program", metadata: ["path": "\(path)", "error": "\(error.message)"])
            }
        }
        if !paths.isEmpty { logger.info("blocked programs refused at exec", metadata: ["count": "\(paths.count)"]) }
    }

    /// Learns a blocked process's executable so that its next exec is refused before it runs:
    /// only when the executable is blocked as itself, not for its script or its parent (an
    /// interpreter or launcher is never an indexed program, so it is blocked as itself only when
    /// a guardian blocked that very program).
    private func learnBlockedExecutable(_ pid: Int32, _ tracked: Tracked, filter: ApplicationFilter) {
        guard let gate = gate.withLock({ $0 }), let path = tracked.evidence.executablePath,
            filter.blocks(path: path, sha256: tracked.evidence.executableHash)
        else { return }
        // Through /proc/PID/exe: the very file it runs, even if renamed since.
        if (try? gate.mark("\(inspector.root)/\(pid)/exe")) != nil {
            learnedPrograms.withLock { $0[path] = tracked.evidence.executableHash }
        }
    }

    /// The gate's answer to one exec: refused when the file is blocked, as itself, for the user
    /// who runs it. Everyone else's execs of the same file (root's, a bystander's) run.
    private func decide(_ request: ExecGate.Request) -> Bool {
        guard request.pid != getpid(), let uid = inspector.status(pid: request.pid)?.uid,
            let filter = gateFilters.withLock({ $0[uid] })
        else { return true }
        let file = "/proc/self/fd/\(request.file)"
        let path = Files.readLink(file)
        guard let verdict = filter.block(path: path, sha256: try? hashes.sha256(of: file)) else { return true }
        note(
            .refused, pid: request.pid, uid: uid, token: verdict.token, application: verdict.application,
            name: filter.index.application(verdict.application)?.name)
        logger.info("refused an exec", metadata: ["pid": "\(request.pid)", "path": "\(path ?? "?")"])
        return false
    }

    private func filter(uid: UInt32) throws -> ApplicationFilter {
        let policy = try database.stores(uid: uid).collection.effectivePolicy
        var index = ApplicationIndex()
        if let account = try? users.user(uid: uid) {
            let catalogue = ApplicationCatalogue(home: account.home, systemDataDirectories: systemDataDirectories)
            index = catalogue.index(hashes: hashes)
        }
        return ApplicationFilter(policy: policy, index: index, minter: minter)
    }

    /// Reads `/proc` for the processes of some users: each is tracked with what it is, parents
    /// before children so that each inherits its parent's applications.
    private func scan(uids: Set<UInt32>, _ state: inout State) {
        var parents: [Int32: Int32] = [:]
        var found: [Int32: (uid: UInt32, evidence: ProcessEvidence)] = [:]
        for pid in inspector.pids() {
            guard let status = inspector.status(pid: pid), uids.contains(status.uid),
                let raw = inspector.evidence(pid: pid, status: status)
            else { continue }
            let uid = status.uid
            parents[pid] = raw.parent
            found[pid] = (uid, evidence(of: raw))
        }
        var depths: [Int32: Int] = [:]
        for pid in found.keys {
            var depth = 0
            var current = pid
            while let parent = parents[current], found[parent] != nil, depth < 4096 {
                depth += 1
                current = parent
            }
            depths[pid] = depth
        }
        for pid in found.keys.sorted(by: { (depths[$0] ?? 0, $0) < (depths[$1] ?? 0, $1) }) {
            guard let (uid, evidence) = found[pid], let filter = state.filters[uid] else { continue }
            let inherited = parents[pid].flatMap { state.processes[$0]?.identities } ?? []
            let previous = state.processes[pid]
            state.processes[pid] = Tracked(
                uid: uid, evidence: evidence, inherited: inherited,
                identities: filter.index.identities(of: evidence, inherited: inherited), frozen: previous?.frozen)
        }
    }

    /// After a restart: the frozen group's members and the records of what an earlier run froze.
    /// A member still shielded stays frozen (the records say where it came from); the rest is
    /// thawed back by `apply` as for any lifted shield.
    private func adopt(_ records: [StateDatabase.FrozenProcess], _ state: inout State) {
        var byPid: [Int32: StateDatabase.FrozenProcess] = [:]
        for record in records { byPid[record.pid] = record }
        let members = Set(state.freezer?.members() ?? [])
        for pid in members {
            let record = byPid[pid]
            let startTime = inspector.startTime(pid: pid) ?? 0
            let origin = record.flatMap { $0.startTime == startTime ? $0.origin : nil } ?? "/"
            let token = record.flatMap { try? ApplicationToken(base64: $0.token) }
            let frozen = Frozen(token: token, origin: origin, since: record?.frozenAt ?? Date(), startTime: startTime)
            if state.processes[pid] != nil {
                state.processes[pid]?.frozen = frozen
            } else {
                // Not an authorized user's (any more): it goes back.
                thaw(pid, frozen, uid: inspector.status(pid: pid)?.uid ?? 0, &state, reason: "not an authorized user's")
            }
        }
        // Records of processes that are gone, or were thawed by hand: forgotten.
        let stale = records.filter { !members.contains($0.pid) }
        if !stale.isEmpty {
            pending.withLock { $0.thawed += stale.map { ($0.pid, $0.startTime) } }
        }
        if !members.isEmpty {
            logger.notice("found processes frozen by an earlier run", metadata: ["count": "\(members.count)"])
        }
    }

    // MARK: judging one process

    /// The hash of a process's executable, through /proc/PID/exe, which reaches the file even
    /// after it was deleted or replaced.
    private func executableHash(_ pid: Int32) -> String? {
        try? hashes.sha256(of: "\(inspector.root)/\(pid)/exe")
    }

    /// `executableHash` is given when the caller has it already.
    private func evidence(of raw: ProcessInspector.Evidence, executableHash: String? = nil) -> ProcessEvidence {
        let pid = raw.pid
        var evidence = ProcessEvidence(
            cgroup: raw.cgroup, flatpakID: raw.flatpakID, launchedDesktopFile: raw.launchedDesktopFile,
            executablePath: raw.executable.map { $0.hasSuffix(" (deleted)") ? String($0.dropLast(10)) : $0 },
            executableHash: executableHash ?? self.executableHash(pid))
        if let script = Interpreter.script(in: raw.commandLine, executable: raw.executable) {
            let seen = inspector.pathSeen(by: pid, script)
            evidence.scriptHash = try? hashes.sha256(of: seen)
            if let resolved = realpath(seen, nil) {
                defer { free(resolved) }
                var path = String(cString: resolved)
                // The process's own view of the path: without the /proc/PID/root prefix.
                let prefix = "\(inspector.root)/\(pid)/root"
                if path.hasPrefix(prefix + "/") { path.removeFirst(prefix.count) }
                evidence.scriptPath = path
            }
        }
        return evidence
    }

    /// Tracks and judges a process that just ran a new program (or turned into an authorized
    /// user's). Called with the state locked, on the reader's thread.
    private func judgeExec(_ pid: Int32, _ state: inout State) {
        guard let status = inspector.status(pid: pid) else {
            // Gone already (its exit event follows): nothing to judge, nothing to let go.
            return
        }
        let uid = status.uid
        guard let filter = state.filters[uid] else {
            // No longer (or never) an authorized user's: forgotten, let go if it was held.
            if state.processes[pid]?.frozen != nil { release(pid, &state, reason: "changed user") }
            state.processes[pid] = nil
            return
        }
        state.execsJudged += 1
        let before = state.processes[pid]?.identities ?? []
        // The quick look first: the executable alone (its hash is cached by inode) and what the
        // process already was. A known shielded program is stopped now, before the rest of
        // /proc is read; the full judgement below then holds it or lets it go.
        let executableHash = executableHash(pid)
        if !filter.isEmpty {
            let quick = ProcessEvidence(executableHash: executableHash)
            if filter.verdict(for: filter.index.identities(of: quick, inherited: before)) != nil {
                kill(pid, SIGSTOP)
            }
        }
        guard let raw = inspector.evidence(pid: pid, status: status) else { return }
        let evidence = evidence(of: raw, executableHash: executableHash)
        var inherited = before
        if inherited.isEmpty, let parent = raw.parent, let known = state.processes[parent] {
            inherited = known.identities
        }
        let identities = filter.index.identities(of: evidence, inherited: inherited)
        logger.debug(
            "exec",
            metadata: [
                "pid": "\(pid)", "uid": "\(uid)", "exe": "\(raw.executable ?? "-")", "identities": "\(identities)",
            ])
        let frozen = state.processes[pid]?.frozen
        state.processes[pid] = Tracked(
            uid: uid, evidence: evidence, inherited: inherited, identities: identities, frozen: frozen)
        apply(filter.verdict(for: identities), to: pid, &state)
    }

    /// Puts a verdict in force on one tracked process: freeze, kill, or let it (go) run.
    private func apply(_ verdict: ApplicationFilter.Verdict?, to pid: Int32, _ state: inout State) {
        guard let tracked = state.processes[pid] else { return }
        state.processes[pid]?.action = verdict?.action
        switch verdict?.action {
        case .block?:
            guard let verdict else { return }
            if let filter = state.filters[tracked.uid] { learnBlockedExecutable(pid, tracked, filter: filter) }
            if kill(pid, SIGKILL) == 0 {
                note(
                    .killed, pid: pid, uid: tracked.uid, token: verdict.token, application: verdict.application,
                    name: state.filters[tracked.uid]?.index.application(verdict.application)?.name)
            }
            if tracked.frozen != nil { release(pid, &state, reason: "killed") }
        case .shield?:
            guard let verdict, tracked.frozen == nil else { return }
            freeze(pid, for: verdict, &state)
        case nil:
            if tracked.frozen != nil { release(pid, &state, reason: "no longer shielded") }
        }
    }

    private func freeze(_ pid: Int32, for verdict: ApplicationFilter.Verdict, _ state: inout State) {
        guard let uid = state.processes[pid]?.uid else { return }
        // Stopped first, at once (microseconds); moved into the frozen group next (tens of
        // microseconds to milliseconds), where the user's SIGCONT no longer wakes it. Released,
        // it is moved back and continued.
        guard kill(pid, SIGSTOP) == 0 else {
            logger.debug("cannot stop a process", metadata: ["pid": "\(pid)", "errno": "\(errno)"])
            return
        }
        logger.debug("stopped", metadata: ["pid": "\(pid)"])
        let startTime = inspector.startTime(pid: pid) ?? 0
        let origin = state.freezer?.group(of: pid, proc: inspector.root) ?? "/"
        var held = false
        if let freezer = state.freezer {
            do {
                try freezer.freeze(pid)
                // It stays stopped too: continuing it here could cancel a SIGSTOP not yet taken
                // (the frozen group would still hold it, but whoever waits for the stop would
                // never see it). The user's own SIGCONT wakes nothing inside the frozen group.
                held = true
            } catch {
                logger.error(
                    "cannot move a process into the frozen group; it stays stopped",
                    metadata: ["pid": "\(pid)", "error": "\(error.message)"])
            }
        }
        if !held {
            state.stoppedBySignal.insert(pid)
            restopContinuation.yield()
        }
        let frozen = Frozen(token: verdict.token, origin: origin, since: Date(), startTime: startTime)
        state.processes[pid]?.frozen = frozen
        pending.withLock {
            $0.frozen.append(
                StateDatabase.FrozenProcess(
                    pid: pid, startTime: startTime, uid: uid, token: verdict.token.base64, origin: origin,
                    frozenAt: frozen.since))
        }
        note(
            .frozen, pid: pid, uid: uid, token: verdict.token, application: verdict.application,
            name: state.filters[uid]?.index.application(verdict.application)?.name)
    }

    /// Thaws a process back into the group it came from (or the nearest that still exists).
    private func release(_ pid: Int32, _ state: inout State, reason: String) {
        guard let tracked = state.processes[pid], let frozen = tracked.frozen else { return }
        thaw(pid, frozen, uid: tracked.uid, &state, reason: reason)
        state.processes[pid]?.frozen = nil
    }

    private func thaw(_ pid: Int32, _ frozen: Frozen, uid: UInt32, _ state: inout State, reason: String) {
        if let freezer = state.freezer, freezer.group(of: pid, proc: inspector.root) == "/" + freezer.name {
            do {
                try freezer.release(pid, toNearest: frozen.origin)
            } catch {
                logger.error(
                    "cannot move a process out of the frozen group",
                    metadata: ["pid": "\(pid)", "error": "\(error.message)"])
            }
        }
        kill(pid, SIGCONT)
        state.stoppedBySignal.remove(pid)
        pending.withLock { $0.thawed.append((pid, frozen.startTime)) }
        note(.thawed, pid: pid, uid: uid, token: frozen.token, application: nil)
        logger.info("thawed", metadata: ["pid": "\(pid)", "reason": "\(reason)"])
    }

    private func note(
        _ action: StateDatabase.ApplicationEvent.Action, pid: Int32, uid: UInt32, token: ApplicationToken?,
        application: ApplicationIdentity?, name: String? = nil
    ) {
        guard let token else { return }
        pending.withLock {
            $0.events.append(
                StateDatabase.ApplicationEvent(time: Date(), uid: uid, token: token.base64, pid: pid, action: action))
            if let application {
                $0.names[token.base64] = TokenName(
                    kind: .app, identity: application.canonical,
                    displayName: name ?? Self.displayName(application))
            }
        }
        writeContinuation.yield()
    }

    private static func displayName(_ identity: ApplicationIdentity) -> String {
        switch identity {
        case .desktopEntry(let id): id
        case .snap(let name): name
        case .executable(let hash): "program " + hash.prefix(12)
        }
    }

    /// Writes what was frozen, thawed and done to the state database (off the reader's thread).
    func flushWrites() {
        let writes = pending.withLock { pending in
            defer { pending = PendingWrites() }
            return pending
        }
        guard !writes.isEmpty else { return }
        // Events of users no longer authorized are not written (a revocation deleted theirs).
        let authorized = state.withLock { Set($0.filters.keys) }
        do {
            try database.recordShieldChanges(
                frozen: writes.frozen, thawed: writes.thawed,
                events: writes.events.filter { authorized.contains($0.uid) }, names: writes.names)
        } catch {
            logger.error("cannot record what the process shield did", metadata: ["error": "\(error)"])
        }
    }

    // MARK: events

    private func handle(_ event: ProcConnector.Event) {
        switch event {
        case .fork(let parent, let child):
            state.withLock { state in
                guard let known = state.processes[parent] else { return }
                state.processes[child] = Tracked(
                    uid: known.uid, evidence: known.evidence, inherited: known.identities,
                    identities: known.identities, frozen: nil)
                // Forked by a shielded (or blocked) process before it was frozen (or killed):
                // held too.
                if known.action != nil, let filter = state.filters[known.uid] {
                    apply(filter.verdict(for: known.identities), to: child, &state)
                }
            }
        case .exec(let pid):
            state.withLock { judgeExec(pid, &$0) }
        case .uid(let pid, let real, _):
            state.withLock { state in
                if state.filters[real] != nil || state.processes[pid] != nil { judgeExec(pid, &state) }
            }
        case .exit(let pid, _):
            state.withLock { state in
                guard let tracked = state.processes.removeValue(forKey: pid) else { return }
                state.stoppedBySignal.remove(pid)
                if let frozen = tracked.frozen {
                    pending.withLock { $0.thawed.append((pid, frozen.startTime)) }
                    writeContinuation.yield()
                }
            }
        case .overrun:
            logger.warning("process events were lost; reading /proc again")
            state.withLock { state in
                scan(uids: Set(state.filters.keys), &state)
                for (pid, tracked) in state.processes {
                    apply(state.filters[tracked.uid]?.verdict(for: tracked.identities), to: pid, &state)
                }
            }
        }
    }

    // MARK: status

    func report(uid: UInt32) throws -> ProcessShieldReport? {
        let (known, frozen, method, watching, problems) = state.withLock { state in
            (
                state.filters[uid] != nil,
                state.processes.compactMap { pid, tracked in
                    tracked.uid == uid ? tracked.frozen.map { (pid: pid, frozen: $0) } : nil
                }.sorted { $0.pid < $1.pid },
                state.freezer.map { "cgroup \($0.version.rawValue) freezer" } ?? "SIGSTOP", state.watching,
                state.problems
            )
        }
        guard known else { return nil }
        flushWrites()
        let reports = frozen.map { item in
            let command = (try? Files.read("\(inspector.root)/\(item.pid)/comm", limit: 64)).map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return FrozenProcessReport(
                pid: item.pid, token: item.frozen.token?.base64 ?? "", since: item.frozen.since, command: command ?? "?"
            )
        }
        let recent = try database.applicationEvents(uid: uid, limit: 20).map {
            ApplicationEventReport(time: $0.time, token: $0.token, pid: $0.pid, action: $0.action.rawValue)
        }
        return ProcessShieldReport(
            watching: watching, method: method, problems: problems, frozen: reports, recent: recent,
            refusesBlockedExecs: gateRunning.load(ordering: .relaxed))
    }

    // MARK: running

    public func run() async throws {
        guard let connector = connector.withLock({ $0 }) else {
            try? await gracefulShutdown()
            return
        }
        state.withLock { $0.watching = true }
        async let writing: Void = writeLoop()
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
                        state.withLock {
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
        state.withLock { $0.watching = false }
        writeContinuation.finish()
        restopContinuation.finish()
        gate.withLock { $0 }?.stop()
        _ = await (writing, restopping, gating)
        flushWrites()
        logger.info(
            "stopped watching processes; what is frozen stays frozen until the agent is back",
            metadata: ["execsJudged": "\(state.withLock { $0.execsJudged })"])
    }

    /// Answers the exec gate on a thread of its own until the agent stops.
    private func gateLoop() async {
        guard let gate = gate.withLock({ $0 }) else { return }
        gateRunning.store(true, ordering: .relaxed)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                do {
                    try gate.run { [self] request in decide(request) }
                } catch {
                    logger.error(
                        "the exec gate failed; blocked apps are only killed at exec", metadata: ["error": "\(error)"])
                }
                gateRunning.store(false, ordering: .relaxed)
                done.resume()
            }
            thread.name = "screentime.gate"
            thread.start()
        }
    }

    private func writeLoop() async {
        for await _ in writeSignal { flushWrites() }
    }

    /// Where no freezer holds them, stopped processes are stopped again if someone continued
    /// them: checked every 20 ms while there are such processes, not at all otherwise.
    private func restopLoop() async {
        for await _ in restopSignal {
            while true {
                let pids = state.withLock { $0.stoppedBySignal }
                if pids.isEmpty { break }
                for pid in pids where inspector.state(pid: pid).map({ $0 != "T" && $0 != "t" }) ?? false {
                    kill(pid, SIGSTOP)
                }
                try? await Task.sleep(for: .milliseconds(20))
                if Task.isCancelled { return }
            }
        }
    }
}
