import FoundationEssentials
import Synchronization

/// The questions filtered users asked and the filter let through, so that the replies coming
/// back (queued by their connection mark) are judged with the asker's filter: the reply's
/// addresses and ports are the question's swapped, and it carries the question's ID.
///
/// A question is remembered until its UDP reply is judged, or for `lifetime` seconds when none
/// comes (or it was asked over TCP). Bounded: at most `perOwner` unanswered questions of one user
/// and `total` in all. A user past her bound has her own oldest question forgotten for the new one
/// (its reply, if it still comes, is dropped: fail closed): the questions whose replies are on
/// their way are the newest. (Refusing the new one instead made her every lookup fail for as long
/// as the old ones lived: questions judged here whose replies the DNS fast path passes in the
/// kernel are never answered here, and 4,096 of them came in the seconds after a name's entry ran
/// out, under dnsperf.) A user with none to give up is refused when all are taken.
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
        /// Each user's questions in the order they were asked (due: when they expire).
        var orders = OwnerQueues<Key>()
        var perOwner: [UInt32: Int] = [:]

        /// Whether an entry of an order is still its question's (not answered, nor asked again).
        func stands(_ entry: OwnerQueues<Key>.Entry, of owner: UInt32) -> Bool {
            guard let found = entries[entry.key] else { return false }
            return found.owner == owner && found.expires.timeIntervalSinceReferenceDate == entry.due
        }

        mutating func forget(_ key: Key) {
            guard let entry = entries.removeValue(forKey: key) else { return }
            perOwner[entry.owner, default: 1] -= 1
            if perOwner[entry.owner] == 0 { perOwner[entry.owner] = nil }
        }

        /// Forgets `owner`'s oldest question still remembered; false when she has none.
        mutating func forgetOldest(of owner: UInt32) -> Bool {
            while let entry = orders.first(of: owner) {
                orders.removeFirst(of: owner)
                if stands(entry, of: owner) {
                    forget(entry.key)
                    return true
                }
            }
            return false
        }
    }

    static let lifetime: TimeInterval = 15
    let perOwner: Int
    let total: Int
    private let state = Mutex(State())

    init(perOwner: Int = 4096, total: Int = 65_536) {
        self.perOwner = perOwner
        self.total = total
    }

    /// Remembers a question; false when it could not be (every place taken, none of its asker's).
    @discardableResult
    func remember(_ key: Key, owner: UInt32, now: Date = Date()) -> Bool {
        state.withLock { state in
            expire(&state, now: now)
            if state.entries[key] != nil { return true }
            while state.perOwner[owner, default: 0] >= perOwner || state.entries.count >= total {
                guard state.forgetOldest(of: owner) else { return false }
            }
            let expires = now.addingTimeInterval(Self.lifetime)
            state.entries[key] = Entry(owner: owner, expires: expires)
            // Answered questions leave their place behind: kept to twice the bound.
            if state.orders.count(of: owner) >= 2 * perOwner {
                state.orders.replace(
                    owner, with: state.orders.entries(of: owner).filter { state.stands($0, of: owner) })
            }
            state.orders.append(key, owner: owner, due: expires.timeIntervalSinceReferenceDate)
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
            guard let entry = state.entries[key] else { return nil }
            state.forget(key)
            // Its place in its asker's order goes when it would have expired, or at the next
            // compaction.
            return entry.expires > now ? entry.owner : nil
        }
    }

    var count: Int { state.withLock { $0.entries.count } }

    private func expire(_ state: inout State, now: Date) {
        for (entry, owner) in state.orders.takeDue(now: now.timeIntervalSinceReferenceDate)
        where state.stands(entry, of: owner) {
            state.forget(entry.key)
        }
    }
}
