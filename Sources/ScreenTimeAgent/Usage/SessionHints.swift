import FoundationEssentials
import Synchronization

/// Programs of authorized users just started, whose environments may name their sessions' displays:
/// told by the process shield at each exec it judged (on its watcher's thread, so telling never
/// waits) and by logind's sessions; taken by the usage tracker's session finder, which reads those
/// environments off that thread. A pid told again before it is taken is one entry.
final class SessionHints: Sendable {
    private let mailbox = Mailbox<[Int32: UInt32]>(empty: [:])

    /// A program `pid` of `owner` started.
    func add(pid: Int32, owner: UInt32) {
        mailbox.put { pids in
            pids[pid] = owner
            return true
        }
    }

    /// What was told since the last take (pid: owner), waiting until something is; nil once finished.
    func take() -> [Int32: UInt32]? { mailbox.take() }

    /// Ends the taking: `take` returns nil.
    func finish() { mailbox.finish() }
}
