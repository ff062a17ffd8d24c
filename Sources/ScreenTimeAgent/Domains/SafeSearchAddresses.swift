import Dispatch
import LinuxSupport
import ScreenTimeCore
import Synchronization

/// The addresses of the safe hosts (`forcesafesearch.google.com`, `restrict.youtube.com`…) that a
/// child's lookups of Google, YouTube, Bing and DuckDuckGo are answered with, as aliases.
///
/// Asked of the system's resolver (`/etc/resolv.conf`), whose answers the agent trusts, never of
/// one the child chose: a resolver of hers could give the unsafe service's addresses. Asked in
/// the background when safe search comes into force and again when an answer is over five minutes
/// old; a lookup that finds none yet is dropped (the child's resolver asks again a moment later),
/// so the child never gets the unsafe service while they are being learned.
final class SafeSearchAddresses: Sendable {
    private struct Entry {
        var addresses: [[UInt8]]
        var learned: ContinuousClock.Instant
    }

    private struct State {
        var known: [DNSName: Entry] = [:]
        var asking: Set<DNSName> = []
    }

    static let refreshAfter: Duration = .seconds(300)
    static let timeout: Duration = .seconds(1)
    /// The TTL of the aliases the child gets: short, so that turning safe search off is seen soon.
    static let answerTTL: UInt32 = 60

    private let resolvers: SystemResolvers
    private let queue = DispatchQueue(label: "screentime.dns.safe-search")
    private let state = Mutex(State())

    init(resolvers: SystemResolvers) { self.resolvers = resolvers }

    /// The target's addresses (A and AAAA) as last learned; asks again in the background when
    /// there are none yet or they are old. Never waits.
    func addresses(of target: DNSName) -> [[UInt8]]? {
        let now = ContinuousClock.now
        let (entry, ask) = state.withLock { state -> (Entry?, Bool) in
            let entry = state.known[target]
            let stale = entry.map { now - $0.learned > Self.refreshAfter } ?? true
            guard stale, !state.asking.contains(target) else { return (entry, false) }
            state.asking.insert(target)
            return (entry, true)
        }
        if ask { queue.async { [self] in learn(target) } }
        guard let entry, !entry.addresses.isEmpty else { return nil }
        return entry.addresses
    }

    /// Asks for every target of a level ahead of the first lookup.
    func prefetch(_ level: SafeSearchLevel) {
        for target in SafeSearch.targets(level) { _ = addresses(of: target) }
    }

    /// What is known, for `status`: each target and how many addresses.
    var known: [(target: String, addresses: Int)] {
        state.withLock { state in state.known.map { ("\($0.key)", $0.value.addresses.count) } }.sorted { $0.0 < $1.0 }
    }

    private func learn(_ target: DNSName) {
        let found =
            resolvers.addresses.first.map {
                AddressQuery.records(of: target, server: $0, port: 53, timeout: Self.timeout).map(\.address)
            } ?? []
        let now = ContinuousClock.now
        state.withLock { state in
            state.asking.remove(target)
            // A failed lookup keeps what was known; none known is tried again at the next lookup.
            if !found.isEmpty || state.known[target] == nil {
                state.known[target] = Entry(addresses: found, learned: found.isEmpty ? now - Self.refreshAfter : now)
            }
        }
    }
}
