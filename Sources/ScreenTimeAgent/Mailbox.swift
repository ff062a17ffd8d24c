import Dispatch
import FoundationEssentials
import Synchronization

/// What many threads put in without waiting and one thread takes out, all that is there at once:
/// the agent's hand-offs from a thread that must not wait (the process watcher's, a request's) to
/// one that works through them at its pace (the shield presenter's, the session finder's).
///
/// What a batch holds and how a put adds to it is the caller's (a list, or a dictionary in which
/// a thing told twice before it is taken is one). Once finished, puts are dropped and `take`
/// returns nil.
final class Mailbox<Batch: Collection & Sendable>: Sendable {
    private struct State {
        var batch: Batch
        var finished = false
    }

    private let empty: Batch
    private let state: Mutex<State>
    private let ready = DispatchSemaphore(value: 0)

    /// A mailbox whose batches start as `empty`.
    init(empty: Batch) {
        self.empty = empty
        state = Mutex(State(batch: empty))
    }

    /// Adds to the batch waiting with `add`, which says whether it did (it may refuse, a batch
    /// that is full); whether it was added. Never waits for the taker.
    @discardableResult
    func put(_ add: (inout Batch) -> Bool) -> Bool {
        let added = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            return add(&state.batch)
        }
        if added { ready.signal() }
        return added
    }

    /// The batch put since the last take, waiting until it holds something; nil once finished.
    func take() -> Batch? {
        while true {
            ready.wait()
            let taken = state.withLock { state -> Batch? in
                if state.finished { return nil }
                defer { state.batch = empty }
                return state.batch
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
        }
    }

    /// Ends the mailbox: `take` returns nil, and later puts are dropped.
    func finish() {
        state.withLock { $0.finished = true }
        ready.signal()
    }
}
