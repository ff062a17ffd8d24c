import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

extension ProcessShield {
    // MARK: policy

    /// Puts a snapshot in force: rebuilds each user's rules, re-judges every process of theirs —
    /// freezes what is newly shielded, thaws what no longer is, kills what is blocked — and
    /// returns once that is done (processes whose judgement is still out are held by then).
    package func apply(_ snapshot: PolicySnapshot) { apply(snapshot, reconciling: false) }

    /// `snapshot` nil: the one in force, again (a user's applications read late are in).
    /// `reading`: each user's applications read again (not when a read that came late is what
    /// the rules are made again for: reading again at once, late again on a loaded machine, made
    /// them again every two seconds for as long as the load lasted).
    func apply(_ given: PolicySnapshot?, reconciling: Bool, reading: Bool = true) {
        applying.withLock { _ in
            let previous = currentPolicy()
            let snapshot = given ?? previous.snapshot
            let learnedBefore = learned.withLock { $0 }
            var next = makePolicy(snapshot, previous: previous, learned: learnedBefore, reading: reading)
            let batch = judges.makeBatch()
            let records = reconciling ? (try? database.frozenProcesses()) ?? [] : []
            // What code runs in the programs that may pass a lock, read now (off the table's lock:
            // the maps of a process are the child's to make slow to read).
            let candidates = table.withLock { table in
                table.processes.filter {
                    next.users[$0.value.owner]?.locked == true && Self.mayPassLock($0.value.kernel.executablePath)
                }
                .map { (pid: $0.key, startTime: $0.value.startTime) }
            }
            let foreign = candidates.map { candidate in
                (
                    candidate,
                    inspector.runsForeignCode(
                        pid: candidate.pid, directories: Self.systemCodeDirectories)
                )
            }
            table.withLock { table in
                for (candidate, runsForeign) in foreign
                where table.processes[candidate.pid]?.startTime == candidate.startTime {
                    table.processes[candidate.pid]?.runsForeignCode = runsForeign
                }
            }
            table.withLock { table in
                // A copy learned while the policy was made (under this lock, as here) keeps its
                // marks: without this, the swap and the gate's refresh drop them.
                addLearned(since: learnedBefore, to: &next)
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
                    tracked.identities = apps.filter.index.identities(
                        of: tracked.evidence, inherited: tracked.inherited)
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
    func makePolicy(
        _ snapshot: PolicySnapshot, previous: AppPolicy, learned learnedNow: [String: LearnedProgram],
        reading: Bool = true
    )
        -> AppPolicy
    {
        var users: [UInt32: UserApps] = [:]
        var marked: [FileIdentity: [UInt32: ApplicationFilter.Verdict]] = [:]
        var paths: Set<String> = []
        let services =
            snapshot.users.isEmpty ? [:] : ServiceFiles.load(configuration.servicesDirectory).categoriesByApplication
        for (uid, user) in snapshot.users {
            let kept = reading ? nil : indexes.withLock { $0[uid]?.index }
            let index = kept ?? readIndex(user)
            let filter = ApplicationFilter(policy: user.policy, index: index, minter: minter, services: services)
            var groups = user.subordinateGIDs
            for gid in user.groups { groups.insert(gid...gid) }
            let person = InstalledProgram.Person(uids: user.uids, groups: groups)
            let apps = UserApps(
                uid: uid, name: user.name, filter: filter, denyInstalls: !user.policy.appInstallationDenied.isEmpty,
                installed: InstalledProgram(person: person), locked: user.isLocked)
            users[uid] = apps
            var verdicts = filter.programVerdicts
            for (path, program) in learnedNow where verdicts[path] == nil {
                let identities = filter.index.identities(
                    of: ProcessEvidence(executablePath: path, executableHash: program.hash))
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

    /// The copies learned after `before` was read, judged by the new rules and marked by the file
    /// each was (no file is read here: this runs under the table's lock).
    func addLearned(since before: [String: LearnedProgram], to next: inout AppPolicy) {
        let late = learned.withLock { $0 }.filter { before[$0.key] != $0.value }
        for (path, program) in late {
            guard let file = program.file else { continue }
            var marks = false
            for (uid, apps) in next.users {
                let identities = apps.filter.index.identities(
                    of: ProcessEvidence(executablePath: path, executableHash: program.hash))
                guard let verdict = apps.filter.verdict(for: identities) else { continue }
                next.marked[file, default: [:]][uid] = verdict
                marks = true
            }
            if marks, !next.markedPaths.contains(path) { next.markedPaths.append(path) }
        }
    }

    /// A user's application index: the catalogue read on a thread of its own, given two seconds,
    /// fifteen the first time (the user's own entries one of them: a child's files never make the
    /// system's late). Late (a cold disk hashing the system's programs), the last index read stays
    /// in force until the read is done; then the rules are made again with it.
    func readIndex(_ user: PolicySnapshot.User) -> ApplicationIndex {
        // Whether the read is still waited for (else, when done, it asks for the rules again).
        let box = Mutex<(read: KeptIndex?, waited: Bool)>((nil, true))
        let serial = indexReads.add(1, ordering: .relaxed).newValue
        let done = DispatchSemaphore(value: 0)
        let home = user.home
        let directories = systemDataDirectories
        let hashes = hashes
        let logger = logger
        Threads.start("screentime.catalogue") { [weak self] in
            let started = ContinuousClock.now
            let before = self?.indexes.withLock { $0[user.uid] }
            let catalogue = ApplicationCatalogue(
                home: home, systemDataDirectories: directories, before: before?.entries ?? [])
            for problem in catalogue.problems.prefix(5) {
                logger.notice("a desktop entry was not read", metadata: ["user": "\(user.name)", "why": "\(problem)"])
            }
            let programs = catalogue.locateUserPrograms(before: before?.programs ?? ApplicationCatalogue.UserPrograms())
            if programs.late > 0 {
                logger.notice(
                    "the user's time ran out before some of their entries' programs were found; those found before stay",
                    metadata: ["user": "\(user.name)", "programs": "\(programs.late)"])
            }
            let index = catalogue.index(hashes: hashes, userPrograms: programs)
            logger.debug(
                "applications read",
                metadata: [
                    "user": "\(user.name)", "entries": "\(catalogue.entries.count + catalogue.additions.count)",
                    "took": "\(ContinuousClock.now - started)",
                ])
            let waited = box.withLock { box in
                box.read = KeptIndex(
                    serial: serial, index: index, entries: catalogue.usersEntries(upTo: 256 << 10),
                    programs: programs)
                return box.waited
            }
            done.signal()
            guard !waited, let self, store(box.withLock({ $0.read }), of: user.uid) else { return }
            logger.notice(
                "the applications of a user were read late; the rules are made again",
                metadata: ["user": "\(user.name)"])
            DispatchQueue.global().async { self.apply(nil, reconciling: false, reading: false) }
        }
        // With no index read before (an authorization, the agent's start), nothing of the user's
        // would be known: waited for longer (the user's own entries are read for a second at most;
        // only the system's programs, hashed once, take more).
        let known = indexes.withLock { $0[user.uid] != nil }
        _ = done.wait(timeout: .now() + (known ? 2 : 15))
        let read = box.withLock { box in
            box.waited = false
            return box.read
        }
        if let read {
            store(read, of: user.uid)
            return read.index
        }
        logger.error(
            "the applications of a user could not be read in time; the last ones read stay in force until they are",
            metadata: ["user": "\(user.name)"])
        return indexes.withLock { $0[user.uid]?.index } ?? ApplicationIndex()
    }

    /// Keeps a user's index unless a later read is already kept; returns whether it was kept.
    @discardableResult
    func store(_ read: KeptIndex?, of uid: UInt32) -> Bool {
        guard let read else { return false }
        return indexes.withLock { indexes in
            if let kept = indexes[uid], kept.serial > read.serial { return false }
            indexes[uid] = read
            return true
        }
    }

    /// Puts the gate's marks in step with the policy: marks added for new programs, removed for
    /// old ones; file system marks dropped when no child needs them any more.
    func refreshGate(_ next: AppPolicy) {
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
            logger.info(
                "shielded and blocked programs asked about at exec", metadata: ["count": "\(next.markedPaths.count)"])
        }
        if gate.marksFilesystems, !next.deniesInstalls {
            gate.dropFilesystemMarks()
            status.withLock { $0.refusingUninstalled = false }
        }
    }

    /// Reads `/proc` for the processes of some users: each is tracked, parents before children so
    /// that each inherits its parent's applications, and judged as at an exec.
    func scan(
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
    func adopt(_ records: [StateDatabase.FrozenProcess], _ table: inout Table, policy: AppPolicy) {
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
}
