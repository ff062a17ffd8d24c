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
/// Bounded: at most `maximumWaiting` lookups wait, each name is asked at most once a minute per
/// child, one lookup at a time, each given a second.
final class ShadowLookups: Sendable {
    private struct State {
        var waiting = 0
        var recent: [String: Double] = [:]
    }

    static let maximumWaiting = 32
    static let repeatAfter: Double = 60
    static let timeout: Duration = .seconds(1)

    private let judge: ConnectionJudge
    private let resolvers: SystemResolvers
    private let queue = DispatchQueue(label: "screentime.dns.shadow")
    private let state = Mutex(State())

    init(judge: ConnectionJudge, resolvers: SystemResolvers) {
        self.judge = judge
        self.resolvers = resolvers
    }

    /// Asks `resolver` (the address and port the child's query went to) for the A and AAAA
    /// records of `name`, and notes them as shielded for `owner`.
    func lookUp(_ name: DNSName, owner: UInt32, resolver: [UInt8], port: UInt16) {
        let key = "\(owner) \(name.lowercased)"
        let now = judge.now
        let admitted = state.withLock { state -> Bool in
            if let last = state.recent[key], now - last < Self.repeatAfter { return false }
            guard state.waiting < Self.maximumWaiting else { return false }
            if state.recent.count >= 4096 { state.recent = state.recent.filter { now - $0.value < Self.repeatAfter } }
            if state.recent.count >= 4096 { return false }
            state.recent[key] = now
            state.waiting += 1
            return true
        }
        guard admitted else { return }
        queue.async { [self] in
            defer { state.withLock { $0.waiting -= 1 } }
            var asked = resolvers.addresses.prefix(1).map { (address: $0, port: UInt16(53), trusted: true) }
            if !(port == 53 && resolvers.contains(resolver)) {
                asked.append((resolver, port, false))
            }
            for server in asked {
                let records = AddressQuery.records(
                    of: name, server: server.address, port: server.port, timeout: Self.timeout)
                judge.learn(records, owner: owner, shielded: true, trusted: server.trusted)
            }
        }
    }
}
