import CLinuxShim
import CXCB
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Whether a request of a watch has waited too long for the server: one watchdog at a time
/// (its timer is set again for a request that began after it was set, and replaced only by a
/// nearer one), so that a flood of events costs no timer each.
final class StallWatch: Sendable {
    private struct State {
        var waitingSince: ContinuousClock.Instant?
        /// What the scheduler told when the wait began (read at `sampledAt`).
        var before: [RunQueueWait.Thread] = []
        var sampledAt: ContinuousClock.Instant?
        /// What the looks at the server during this wait saw.
        var probe = RunQueueWait.Probe()
        /// Whether this wait is looked at from `probeAfter` into it (else from `limit`).
        var closely = false
        /// When the watchdog's timer fires (nil: none is set). A timer that finds another
        /// deadline here was replaced by a nearer one, and does nothing.
        var deadline: ContinuousClock.Instant?
        /// The watchdog fired since the last report.
        var stalled = false
    }
    private let state = Mutex(State())
    private let limit: Duration
    private let probeAfter: Duration
    private let scheduler: RunQueueWait
    private let told: @Sendable (_ answered: @escaping @Sendable () -> Bool) -> Void

    /// `probe`: a wait watched closely that lasts this long is looked at, and again as often while
    /// it lasts: the server's settings (a child slowing her server only while she grabs it, and
    /// setting it back before letting go, is seen in the middle), and the processors' idle time.
    /// Any other wait is looked at once it lasts `limit`.
    init(
        after limit: Duration, probe: Duration, scheduler: RunQueueWait,
        tell: @escaping @Sendable (_ answered: @escaping @Sendable () -> Bool) -> Void
    ) {
        self.limit = limit
        probeAfter = probe
        self.scheduler = scheduler
        told = tell
    }

    /// A request is made (`closely`: watched from `probeAfter` into it): what the scheduler tells
    /// of the threads now is returned.
    /// A reading younger than `reuse` stands for the next request's start (a look asks a dozen
    /// things in a row: three files read for each would double what a switch costs); it can
    /// explain at most that much more of a wait than was spent in it, per thread.
    func begin(closely: Bool, reuse: Duration = .milliseconds(5)) -> [RunQueueWait.Thread] {
        let now = ContinuousClock.now
        let recent = state.withLock { state in state.sampledAt.map { now - $0 < reuse } == true ? state.before : nil }
        let before = recent ?? scheduler.sample(states: false)
        let wanted = now + (closely ? probeAfter : limit)
        let arm = state.withLock { state -> Bool in
            state.waitingSince = .now
            if recent == nil { state.sampledAt = now }
            state.before = before
            state.probe = RunQueueWait.Probe()
            state.closely = closely
            if let set = state.deadline, set <= wanted { return false }
            state.deadline = wanted
            return true
        }
        if arm { set(at: wanted) }
        return before
    }

    /// The request is answered: what was seen of its wait.
    func end() -> RunQueueWait.Probe {
        state.withLock { state in
            state.waitingSince = nil
            return state.probe
        }
    }

    private func set(at deadline: ContinuousClock.Instant) {
        let delay = max(deadline - ContinuousClock.now, .milliseconds(1))
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(delay.milliseconds))) {
            [self] in
            enum Next { case idle, again(ContinuousClock.Instant), stall }
            guard state.withLock({ $0.deadline == deadline }) else { return }
            let now = scheduler.sample(settings: true)
            let idle = scheduler.idleTime()
            let next = state.withLock { state -> Next in
                guard state.deadline == deadline else { return .idle }
                guard let since = state.waitingSince else {
                    state.deadline = nil
                    return .idle
                }
                let at = ContinuousClock.now
                let elapsed = at - since
                if elapsed >= probeAfter {
                    if now.contains(where: \.slowed) { state.probe.slowed = true }
                    if state.probe.idleFrom == nil, let idle { state.probe.idleFrom = (at, idle) }
                }
                // What the threads spent ready to run and kept from a processor does not count;
                // nor does a wait while one of them is kept from it still (the kernel counts that
                // wait once it runs): the machine is busy, the server grabbed by no one. Unless
                // the server was slowed on purpose, or a processor sat idle meanwhile.
                let excused = state.probe.excuses(idleNow: idle, at: at)
                let waited = elapsed - (excused ? RunQueueWait.waited(from: state.before, to: now) : .zero)
                // Looked at again while it lasts: when watched closely, at `probeAfter` into it,
                // then every `probeAfter`; else once it has waited `limit`.
                if waited < limit {
                    let probeIn = !state.closely ? limit : elapsed < probeAfter ? probeAfter - elapsed : probeAfter
                    let next = at + max(min(limit - waited, probeIn), .milliseconds(20))
                    state.deadline = next
                    return .again(next)
                }
                if excused, RunQueueWait.starving(from: state.before, to: now, over: elapsed) {
                    let next = at + .milliseconds(100)
                    state.deadline = next
                    return .again(next)
                }
                // Told once per request that waits; the next request's wait is watched anew.
                state.deadline = nil
                state.waitingSince = nil
                state.stalled = true
                return .stall
            }
            switch next {
            case .idle: break
            case .again(let next): set(at: next)
            case .stall: told { [self] in !hasStall }
            }
        }
    }

    var hasStall: Bool { state.withLock { $0.stalled } }

    func takeStall() -> Bool {
        state.withLock { state in
            defer { state.stalled = false }
            return state.stalled
        }
    }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
