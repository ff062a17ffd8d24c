import Foundation
import Synchronization

/// Programs of authorized users just started, whose environments may name their sessions' displays:
/// told by the process shield at each exec it judged (on its watcher's thread, so telling never
/// waits) and by logind's sessions; taken by the usage tracker's session finder, which reads those
/// environments off that thread. A pid told again before it is taken is one entry.
final class SessionHints: Sendable {
    private struct State {
        var pids: [Int32: UInt32] = [:]
        var finished = false
    }

    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    /// A program `pid` of `owner` started.
    func add(pid: Int32, owner: UInt32) {
        let added = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.pids[pid] = owner
            return true
        }
        if added { ready.signal() }
    }

    /// What was told since the last take (pid: owner), waiting until something is; nil once finished.
    func take() -> [Int32: UInt32]? {
        while true {
            ready.wait()
            let taken = state.withLock { state -> [Int32: UInt32]? in
                if state.finished { return nil }
                defer { state.pids = [:] }
                return state.pids
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
        }
    }

    /// Ends the taking: `take` returns nil.
    func finish() {
        state.withLock { $0.finished = true }
        ready.signal()
    }
}
