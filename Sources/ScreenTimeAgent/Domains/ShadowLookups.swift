import Dispatch
import LinuxSupport
import ScreenTimeCore
import Synchronization

/// When a child asks for a shielded name, the agent answers NXDOMAIN at once and asks the same
/// name itself, in the background, to learn the addresses behind it: for their TTL, that child's
/// connections to them are refused whatever name they claim (`curl --resolve`, an address
/// written into a program). The child's own answer is never delayed by this.
///
/// It asks the system's resolvers (`/etc/resolv.conf`), whose answers it trusts, and the resolver
/// the child asked when that is another one: what a resolver of the child's choosing says is
/// kept apart (see `ConnectionJudge.learn`), so that it can never push out what the system's said.
///
/// Fair between children, and bounded: each child has at most `waitingPerChild` lookups waiting
/// and asks each name at most once a minute (the names asked lately are kept per child, at most
/// `recentPerChild`); one lookup runs at a time, each server given a second, the children's in
/// turn. So one child's flood of invented shielded names delays another's lookup by at most one
/// of each other child's, and never keeps it out (a helper's attack: a flood of hers once took
/// every place, and her sister's shielded site, reached by its address, was never learned).
final class ShadowLookups: Sendable {
    private struct Lookup {
        var name: DNSName
        var resolver: [UInt8]
        var port: UInt16
    }

    private struct State {
        /// Each child's lookups waiting, oldest first.
        var waiting: [UInt32: [Lookup]] = [:]
        /// The children with lookups waiting, in the order their turns come.
        var turns: [UInt32] = []
        var running = false
        /// When each child last asked each name (the agent's clock).
        var recent: [UInt32: [DNSName: Double]] = [:]
    }

    static let waitingPerChild = 8
    static let recentPerChild = 4096
    static let repeatAfter: Double = 60
    static let timeout: Duration = .seconds(1)

    typealias Asking = @Sendable (DNSName, _ server: [UInt8], _ port: UInt16) -> [DNSMessage.AddressRecord]

    private let judge: ConnectionJudge
    private let resolvers: SystemResolvers
    private let ask: Asking
    private let queue = DispatchQueue(label: "screentime.dns.shadow")
    private let state = Mutex(State())

    /// - Parameter ask: how a server is asked (the tests' stand-in; the real one by default).
    init(judge: ConnectionJudge, resolvers: SystemResolvers, ask: Asking? = nil) {
        self.judge = judge
        self.resolvers = resolvers
        self.ask =
            ask ?? { name, server, port in
                AddressQuery.records(of: name, server: server, port: port, timeout: Self.timeout)
            }
    }

    /// Asks `resolver` (the address and port the child's query went to) for the A and AAAA
    /// records of `name`, and notes them as shielded for `owner`, in turn; whether it was taken
    /// (not: asked lately, or too many of the child's wait).
    @discardableResult
    func lookUp(_ name: DNSName, owner: UInt32, resolver: [UInt8], port: UInt16) -> Bool {
        let lower = name.lowercased
        let now = judge.now
        let (admitted, start) = state.withLock { state -> (Bool, Bool) in
            // In place: a copy of her table (up to 4,096 names) per shielded lookup would be the
            // queue's reader's work for each name a flood invents.
            if let last = state.recent[owner]?[lower], now - last < Self.repeatAfter { return (false, false) }
            guard (state.waiting[owner]?.count ?? 0) < Self.waitingPerChild else { return (false, false) }
            if (state.recent[owner]?.count ?? 0) >= Self.recentPerChild {
                state.recent[owner, default: [:]] = state.recent[owner, default: [:]].filter {
                    now - $0.value < Self.repeatAfter
                }
                if state.recent[owner, default: [:]].count >= Self.recentPerChild { return (false, false) }
            }
            state.recent[owner, default: [:]][lower] = now
            if state.waiting[owner] == nil { state.turns.append(owner) }
            state.waiting[owner, default: []].append(Lookup(name: name, resolver: resolver, port: port))
            let start = !state.running
            state.running = true
            return (true, start)
        }
        if start { queue.async { [self] in run() } }
        return admitted
    }

    /// Runs the lookups waiting, one child's after another's, until none waits.
    private func run() {
        while let (owner, lookup) = next() {
            var asked = resolvers.addresses.prefix(1).map { (address: $0, port: UInt16(53), trusted: true) }
            if !(lookup.port == 53 && resolvers.contains(lookup.resolver)) {
                asked.append((lookup.resolver, lookup.port, false))
            }
            for server in asked {
                let records = ask(lookup.name, server.address, server.port)
                judge.learn(records, owner: owner, shielded: true, trusted: server.trusted)
            }
        }
    }

    /// The next lookup: the oldest of the child whose turn it is (who goes last again if more of
    /// hers wait); nil, and the runner stops, when none waits.
    private func next() -> (UInt32, Lookup)? {
        state.withLock { state in
            while !state.turns.isEmpty {
                let owner = state.turns.removeFirst()
                guard var waiting = state.waiting[owner], !waiting.isEmpty else {
                    state.waiting[owner] = nil
                    continue
                }
                let lookup = waiting.removeFirst()
                if waiting.isEmpty {
                    state.waiting[owner] = nil
                } else {
                    state.waiting[owner] = waiting
                    state.turns.append(owner)
                }
                return (owner, lookup)
            }
            state.running = false
            return nil
        }
    }

    /// Forgets the children no longer filtered.
    func keep(owners: Set<UInt32>) {
        state.withLock { state in
            state.recent = state.recent.filter { owners.contains($0.key) }
        }
    }
}
