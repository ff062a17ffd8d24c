import FoundationEssentials
import Synchronization

/// The questions filtered users asked and the filter let through, so that the replies coming
/// back (queued by their connection mark) are judged with the asker's filter: the reply's
/// addresses and ports are the question's swapped, and it carries the question's ID.
///
/// A question is remembered until its UDP reply is judged, or for `lifetime` seconds when none
/// comes (or it was asked over TCP). Bounded: at most `perOwner` unanswered questions of one user and `total` in all.
/// A user with more unanswered only loses its own replies (which are then dropped: fail closed).
/// A second reply to one question finds nothing, and is dropped.
final class OutstandingQueries: Sendable {
    struct Key: Hashable, Sendable {
        var client: [UInt8]
        var clientPort: UInt16
        var server: [UInt8]
        var serverPort: UInt16
        var id: UInt16
    }

    private struct Entry {
        var owner: UInt32
        var expires: Date
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var order: [(key: Key, expires: Date)] = []
        var head = 0
        var perOwner: [UInt32: Int] = [:]
    }

    static let lifetime: TimeInterval = 15
    let perOwner: Int
    let total: Int
    private let state = Mutex(State())

    init(perOwner: Int = 4096, total: Int = 65_536) {
        self.perOwner = perOwner
        self.total = total
    }

    /// Remembers a question; false when its asker has too many outstanding.
    @discardableResult
    func remember(_ key: Key, owner: UInt32, now: Date = Date()) -> Bool {
        state.withLock { state in
            expire(&state, now: now)
            if state.entries[key] != nil { return true }
            guard state.perOwner[owner, default: 0] < perOwner, state.entries.count < total else { return false }
            let expires = now.addingTimeInterval(Self.lifetime)
            state.entries[key] = Entry(owner: owner, expires: expires)
            // Answered questions leave their place behind: kept to twice the bound.
            if state.order.count - state.head >= 2 * total {
                state.order = state.order[state.head...].filter { state.entries[$0.key]?.expires == $0.expires }
                state.head = 0
            }
            state.order.append((key, expires))
            state.perOwner[owner, default: 0] += 1
            return true
        }
    }

    /// Who asked the question a reply answers, if anyone filtered did (and not too long ago).
    /// With `answered`, the question is forgotten: a UDP reply answers it once. (A TCP reply
    /// leaves it for its lifetime: the server sends a lost segment again, and that copy must
    /// find it too.)
    func owner(of key: Key, answered: Bool, now: Date = Date()) -> UInt32? {
        state.withLock { state in
            guard answered else {
                guard let entry = state.entries[key], entry.expires > now else { return nil }
                return entry.owner
            }
            guard let entry = state.entries.removeValue(forKey: key) else { return nil }
            state.perOwner[entry.owner, default: 1] -= 1
            if state.perOwner[entry.owner] == 0 { state.perOwner[entry.owner] = nil }
            // Its place in `order` goes when it would have expired, or at the next compaction.
            return entry.expires > now ? entry.owner : nil
        }
    }

    var count: Int { state.withLock { $0.entries.count } }

    private func expire(_ state: inout State, now: Date) {
        while state.head < state.order.count, state.order[state.head].expires <= now {
            let key = state.order[state.head].key
            if let entry = state.entries[key], entry.expires <= now {
                state.entries[key] = nil
                state.perOwner[entry.owner, default: 1] -= 1
                if state.perOwner[entry.owner] == 0 { state.perOwner[entry.owner] = nil }
            }
            state.head += 1
        }
        if state.head > 1024, state.head * 2 > state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }
}
