/// Entries kept per owner (a filtered user) in the order they came, each with the moment it is
/// due: the questions a user asked, the flows she let go. Each owner's oldest entry is first, so
/// what is due is taken from the front, and a user's bound makes room from her own entries,
/// never another user's.
///
/// An entry can stop standing before it is due (its question answered, its flow gone or let go
/// again): whoever keeps the queues knows, and passes such entries over. Cheap where it is
/// called, per packet: an owner's queue is changed in place, its front is an index that moves on
/// (the array is compacted once half of it or more is behind it), and asking for what is due
/// when nothing is yet (`nextDue`) touches no queue at all.
struct OwnerQueues<Key> {
    struct Entry {
        var key: Key
        var due: Double
    }

    private struct Queue {
        var entries: [Entry] = []
        var head = 0
        var isEmpty: Bool { head >= entries.count }
        var first: Entry? { isEmpty ? nil : entries[head] }

        mutating func compact() {
            guard head >= 64, head * 2 >= entries.count else { return }
            entries.removeFirst(head)
            head = 0
        }
    }

    private var queues: [UInt32: Queue] = [:]
    /// No entry is due before this moment.
    private var nextDue = Double.infinity

    mutating func append(_ key: Key, owner: UInt32, due: Double) {
        queues[owner, default: Queue()].entries.append(Entry(key: key, due: due))
        nextDue = min(nextDue, due)
    }

    /// Takes every entry due at `now` (`due <= now`) from the front of each owner's queue.
    mutating func takeDue(now: Double) -> [(entry: Entry, owner: UInt32)] {
        guard now >= nextDue else { return [] }
        nextDue = .infinity
        var taken: [(entry: Entry, owner: UInt32)] = []
        var emptied: [UInt32] = []
        for index in queues.indices {
            let owner = queues.keys[index]
            while let entry = queues.values[index].first, entry.due <= now {
                queues.values[index].head += 1
                taken.append((entry, owner))
            }
            queues.values[index].compact()
            if let first = queues.values[index].first {
                nextDue = min(nextDue, first.due)
            } else {
                emptied.append(owner)
            }
        }
        for owner in emptied { queues[owner] = nil }
        return taken
    }

    /// The owners with entries.
    var owners: [UInt32] { Array(queues.keys) }

    /// `owner`'s oldest entry not taken.
    func first(of owner: UInt32) -> Entry? { queues[owner]?.first }

    /// Takes `owner`'s oldest entry.
    mutating func removeFirst(of owner: UInt32) {
        guard queues[owner] != nil else { return }
        queues[owner]!.head += 1
        queues[owner]!.compact()
        if queues[owner]!.isEmpty { queues[owner] = nil }
    }

    /// How many entries of `owner` are not taken, standing or not.
    func count(of owner: UInt32) -> Int { queues[owner].map { $0.entries.count - $0.head } ?? 0 }

    /// `owner`'s entries not taken, oldest first.
    func entries(of owner: UInt32) -> ArraySlice<Entry> { queues[owner].map { $0.entries[$0.head...] } ?? [] }

    /// Puts `entries` (oldest first, due no earlier than those they replace) in place of
    /// `owner`'s.
    mutating func replace(_ owner: UInt32, with entries: [Entry]) {
        queues[owner] = entries.isEmpty ? nil : Queue(entries: entries)
    }
}
