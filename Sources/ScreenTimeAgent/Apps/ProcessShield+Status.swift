import FoundationEssentials
import LinuxSupport
import ScreenTimeIPC

extension ProcessShield {
    /// What `status` shows of a user's processes: how they are watched and held, which are held
    /// now (its subordinate uids' too) and why, what was done lately.
    func report(uid: UInt32) throws -> ProcessShieldReport? {
        let policy = currentPolicy()
        guard let apps = policy.users[uid] else { return nil }
        let held = table.withLock { table in
            var held = table.processes.compactMap { pid, tracked in
                tracked.owner == uid ? tracked.hold.map { (pid: pid, hold: $0) } : nil
            }
            let listed = Set(held.map(\.pid))
            // Held by the gate inside an exec the watcher has not read yet.
            for (pid, gateHold) in gateState.withLock({ $0.held }) where !listed.contains(pid) {
                guard let status = inspector.status(pid: pid), policy.owner(ofKernelUID: status.uid) == uid else {
                    continue
                }
                held.append(
                    (pid, Hold(reason: .shield(gateHold.token), origin: gateHold.origin, since: gateHold.since)))
            }
            return held.sorted { $0.pid < $1.pid }
        }
        let state = status.withLock { $0 }
        var problems = state.problems
        let stuck = judges.stuckThreads
        if stuck > 0 {
            problems.append("\(stuck) judgements are stuck in reads that do not come back; their processes wait")
        }
        if gate.withLock({ $0 })?.hasStalled == true {
            problems.append("the exec gate was late to answer at least once; its watchdog answered meanwhile")
        }
        if apps.denyInstalls, !state.refusingUninstalled {
            problems.append(
                "programs no guardian installed are killed at exec; they are refused before they run from the agent's next start"
            )
        }
        flush()
        let reports = held.prefix(ProcessShieldReport.frozenListed).map { item in
            let command = (try? Files.read("\(inspector.root)/\(item.pid)/comm", limit: 64)).map {
                String(decoding: $0, as: UTF8.self).trimmingWhitespace()
            }
            var report = FrozenProcessReport(
                pid: item.pid, token: item.hold.reason.token?.base64 ?? "", since: item.hold.since,
                command: command ?? "?")
            report.reason = item.hold.reason.label
            return report
        }
        let recent = try database.applicationEvents(uid: uid, limit: 20).map {
            ApplicationEventReport(time: $0.time, token: $0.token, pid: $0.pid, action: $0.action.rawValue)
        }
        var report = ProcessShieldReport(
            watching: state.watching, method: holder.withLock { $0 }.method, problems: problems, frozen: reports,
            recent: recent, refusesBlockedExecs: state.gateRunning)
        report.frozenCount = held.count
        report.onlyInstalledPrograms = apps.denyInstalls
        report.gateAnswers = gate.withLock({ $0 })?.answerTimes.map {
            TimingReport(count: $0.count, p50: $0.p50, p99: $0.p99, slowest: $0.slowest)
        }
        return report
    }
}
