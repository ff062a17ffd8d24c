import LinuxSupport
import ScreenTimeCore
import Synchronization

/// Judges the opening packets of filtered users' connections (every port, TCP and UDP, IPv4 and
/// IPv6) by what they say of where they go, so that a web shield holds whatever resolver the
/// child uses: the server name of a TLS ClientHello, the host of an HTTP request, the address
/// itself when the child's resolver returned it for a shielded name, and QUIC, which is refused
/// so that browsers fall back to TLS over TCP.
///
/// Only a connection's opening comes here: a decision is handed back as a mark the rules keep on
/// the connection (see `Firewall`), and the rest of the flow stays in the kernel. A TLS hello or
/// HTTP head that spans segments is gathered here, segment by segment, each let through while it
/// is incomplete (the flow is marked pending, so a flow whose state is lost is refused, not
/// passed). The table of such flows is bounded per user and in all; a child filling it loses
/// only its own oldest flows. Called on the queue's one thread.
///
/// A TCP opening judged and passed is watched until the server acknowledges it: what the agent
/// judged is one copy of the bytes, and TCP sends them again from the sender's pages as they are
/// then (a decoy sent with TTL 1, which the first router drops, from a page rewritten before its
/// retransmission). Each data segment of a watched flow is compared with the bytes judged where
/// it overlaps them, and a difference refuses the flow; the server's acknowledgement of the
/// whole opening (no further than what was sent) lets it go to the kernel's fast path.
final class ConnectionJudge: Sendable {
    enum Decision: Equatable {
        /// Let this packet through; the connection stays unjudged (a SYN, an empty ACK).
        case accept
        /// Drop this packet (one that cannot be read; TCP sends it again).
        case drop
        /// The connection may go on; the kernel takes the rest.
        case pass
        /// The connection's opening passed; its segments and the server's acknowledgements still
        /// come here until the server has acknowledged the opening.
        case watch
        /// Let this segment through; the opening is not all here yet.
        case pending
        /// Reset or reject the connection.
        case refuse(Refusal)
    }

    struct Refusal: Equatable {
        /// A connection whose opening was judged under web shields since changed.
        static let changed = Refusal(kind: "changed", reason: "a connection passed before the web shields changed")

        /// What kind of refusal, as `status` counts them (see `DomainShieldReport`).
        var kind: String
        var reason: String
        /// The shielded name, when the connection named one.
        var name: DNSName?
        var verdict: DomainFilter.Verdict?
        /// A plain-HTTP request for a shielded name: answered with the block page, then reset.
        var answeredWithPage = false
    }

    struct FlowKey: Hashable {
        var source: LearnedAddresses.Address
        var destination: LearnedAddresses.Address
        var ports: UInt32
    }

    struct Flow {
        var owner: UInt32
        var opening: [UInt8]
        /// The sequence number of the opening's first byte.
        var start: UInt32
        var since: Double
        /// Judged and passed, under this generation of the web shields: the opening is all here,
        /// and the flow waits for the server's acknowledgement of it.
        var passedUnder: UInt8?
        /// How far past the opening's start the client's data has been seen.
        var sent = 0
        /// Packets from the server that did not acknowledge the whole opening.
        var unacknowledging = 0
        /// Acknowledged and let go (the opening's bytes no longer kept): packets of the flow that
        /// were on their way to the queue before its new mark was kept pass too.
        var released = false
    }

    struct State {
        var flows: [FlowKey: Flow] = [:]
        /// How many of `flows` each user has, kept with them.
        var flowsOf: [UInt32: Int] = [:]
        /// What the system's resolvers and the agent's own lookups said, per user; and, apart,
        /// the shielded names' addresses that a resolver the child chose said (which may lie):
        /// answers of hers can neither make a learned address shared nor push it out.
        var addresses: [UInt32: LearnedAddresses] = [:]
        var heard: [UInt32: LearnedAddresses] = [:]
        /// Addresses answered for a search engine's or YouTube's names, per user with safe search:
        /// a connection naming nothing may not go to one (it could carry the site's Host inside).
        var searchAddresses: [UInt32: LearnedAddresses] = [:]

        /// An address her own resolver gave for a shielded name is shielded, unless the system's
        /// resolvers (or the agent's lookups) returned it for a name she may visit: then it is
        /// shared, as if they had said both (her resolver can restrict her, never free her).
        func standing(of address: LearnedAddresses.Address, owner: UInt32, now: Double) -> LearnedAddresses.Standing {
            let book = addresses[owner]
            let learned = book?.standing(of: address, now: now) ?? .unknown
            guard learned == .unknown else { return learned }
            let said = heard[owner]?.standing(of: address, now: now) ?? .unknown
            return said == .shielded && book?.isAllowed(address, now: now) == true ? .shared : said
        }
        var refused: [UInt32: [String: Int]] = [:]
        /// The flows let go, per owner in the order they were (due: when): each is forgotten
        /// `releasedLinger` after, in turn, so that a table of a child's finished connections is
        /// not full and searched for its oldest at each new one. An entry whose flow has since gone
        /// (or was let go again later) is passed over.
        var released = OwnerQueues<FlowKey>()

        mutating func release(_ key: FlowKey, _ flow: inout Flow, now: Double) {
            flow.released = true
            flow.opening = []
            flow.since = now
            flows[key] = flow
            released.append(key, owner: flow.owner, due: now)
        }

        /// Forgets the flows let go `linger` seconds or more before `now`.
        mutating func forgetReleased(now: Double, linger: Double) {
            for (entry, _) in released.takeDue(now: now - linger) where stands(entry) { removeFlow(entry.key) }
        }

        mutating func removeFlow(_ key: FlowKey) {
            guard let flow = flows.removeValue(forKey: key) else { return }
            flowsOf[flow.owner, default: 1] -= 1
            if flowsOf[flow.owner] == 0 { flowsOf[flow.owner] = nil }
        }

        /// Whether an entry of a release order is its flow's (not gone, nor let go again since).
        func stands(_ entry: OwnerQueues<FlowKey>.Entry) -> Bool {
            guard let flow = flows[entry.key] else { return false }
            return flow.released && flow.since == entry.due
        }

        /// The flow of `owner` (every user's when nil) let go longest ago, from the order they
        /// were let go in (passing over the entries at its head that no longer stand); nil when
        /// it has none.
        mutating func oldestReleased(of owner: UInt32?) -> FlowKey? {
            var oldest: OwnerQueues<FlowKey>.Entry?
            for candidate in owner.map({ [$0] }) ?? released.owners {
                while let entry = released.first(of: candidate), !stands(entry) { released.removeFirst(of: candidate) }
                if let entry = released.first(of: candidate), oldest.map({ entry.due < $0.due }) ?? true {
                    oldest = entry
                }
            }
            return oldest?.key
        }

        /// The oldest flow of `owner` (every user's when nil), a released one first. (Every flow
        /// let go stands in `released`; the others are searched, only when a table is full
        /// of flows not let go.)
        mutating func oldest(of owner: UInt32?) -> FlowKey? {
            if let released = oldestReleased(of: owner) { return released }
            return flows.lazy.filter { owner == nil || $0.value.owner == owner }.min {
                $0.value.since < $1.value.since
            }?.key
        }
    }

    static let flowsPerUser = 256
    static let flowsInAll = 2048
    /// A flow whose opening has not all come after this long is forgotten (and then refused).
    static let flowLifetime: Double = 30
    /// Packets a server may send on a watched flow without acknowledging the opening: a real one
    /// acknowledges it with its first answer (a delayed ACK of part of it first, at most).
    static let unacknowledgingLimit = 32

    let state = Mutex(State())
    /// Told the names of each connection passed by name (usage: a web domain in use).
    let passedNames: @Sendable ([DNSName], UInt32) -> Void

    /// The kernel sets of addresses learned for shielded names (the SYN fast path), if the
    /// kernel has them: each shielded learning goes into its family's.
    let shieldedSets: (v4: AddressSet, v6: AddressSet)?
    /// Held while a learning is noted and sent to the kernel's set.
    let setOrder = Mutex(())

    /// The safe hosts' addresses: a connection naming a search engine or YouTube, for a child with
    /// safe search, must go to one of its safe host's.
    let safeHosts: SafeSearchAddresses?

    /// How long a flow let go is kept, in seconds: for its packets that were on their way to the
    /// queue before its new mark was kept on the connection (a moment). One of its packets that
    /// came after would find no flow, and be refused as lost.
    let releasedLinger: Double

    /// - Parameters:
    ///   - safeHosts: the safe hosts' addresses (nil: safe search is held at the name alone).
    ///   - passedNames: told the names of each connection passed by name, and its owner.
    ///   - shieldedSets: the kernel sets of addresses learned for shielded names, if any.
    ///   - releasedLinger: how long a flow let go is kept (see `releasedLinger`).
    init(
        safeHosts: SafeSearchAddresses? = nil, shieldedSets: (v4: AddressSet, v6: AddressSet)? = nil,
        releasedLinger: Double = 5, passedNames: @escaping @Sendable ([DNSName], UInt32) -> Void = { _, _ in }
    ) {
        self.safeHosts = safeHosts
        self.releasedLinger = releasedLinger
        self.shieldedSets = shieldedSets
        self.passedNames = passedNames
    }
    private let epoch = ContinuousClock.now

    /// Seconds on the monotonic clock since the judge was made.
    var now: Double {
        let elapsed = epoch.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
    }

    // MARK: addresses

    /// Notes the addresses of a reply to `owner`: returned for a shielded name (`shielded`) or
    /// for a name it may visit, by one of the system's resolvers or the agent's own lookup
    /// (`trusted`) or by a resolver the child chose. The child's resolver is believed only where
    /// it restricts her: its addresses of shielded names are kept apart, and what it says of
    /// allowed names is not kept.
    func learn(_ records: [DNSMessage.AddressRecord], owner: UInt32, shielded: Bool, trusted: Bool) {
        guard !records.isEmpty, trusted || shielded else { return }
        // Learnings go to the kernel in the order their times were worked out: a longer time
        // worked out later never lands before a shorter one worked out earlier.
        setOrder.withLock { _ in learnInOrder(records, owner: owner, shielded: shielded, trusted: trusted) }
    }

    private func learnInOrder(_ records: [DNSMessage.AddressRecord], owner: UInt32, shielded: Bool, trusted: Bool) {
        let time = now
        let kept = state.withLock { state -> [(address: [UInt8], seconds: UInt32)] in
            var kept: [LearnedAddresses.Address: [UInt8]] = [:]
            // In place: a copy taken out of the table would copy every address at each reply.
            for record in records {
                guard let address = LearnedAddresses.Address(record.address) else { continue }
                if trusted {
                    state.addresses[owner, default: LearnedAddresses()].learn(
                        address, shielded: shielded, ttl: record.ttl, now: time)
                    if shielded { kept[address] = record.address }
                } else if state.heard[owner, default: LearnedAddresses(capacity: Self.heardCapacity)]
                    .learnKeepingOldest(address, shielded: true, ttl: record.ttl, now: time)
                {
                    kept[address] = record.address
                }
            }
            // The set's time is the longest any book keeps the address for a shielded name, any
            // user's: the kernel replaces an entry's time, so a shorter answer (another name of
            // the site's, or one from a resolver she chose) must not cut it (the fourth attack).
            return kept.map { address, bytes in (bytes, Self.setSeconds(address, in: state, now: time)) }
        }
        // Into the kernel's set before this returns (before the answer that carried them is let
        // go), for a second longer than the book keeps them: a SYN to one still comes to the
        // queue, which refuses it. Outside the lock: a netlink message and its answer.
        guard let sets = shieldedSets, !kept.isEmpty else { return }
        for (address, seconds) in kept {
            // Full (a million addresses), or the kernel refused: a SYN to this address is not
            // refused in the kernel, and its first data is judged (and refused) in the queue.
            try? (address.count == 4 ? sets.v4 : sets.v6).add(address, seconds: seconds)
        }
    }

    /// Notes the addresses a reply gave for a search engine's or YouTube's names (safe search).
    func learnSearchAddresses(_ records: [DNSMessage.AddressRecord], owner: UInt32) {
        guard !records.isEmpty else { return }
        let time = now
        state.withLock { state in
            for record in records {
                guard let address = LearnedAddresses.Address(record.address) else { continue }
                state.searchAddresses[owner, default: LearnedAddresses(capacity: Self.heardCapacity)].learn(
                    address, shielded: true, ttl: max(record.ttl, 300), now: time)
            }
        }
    }

    /// How long the kernel's set keeps `address`: a second longer than the longest any book keeps
    /// it for a shielded name, any user's.
    static func setSeconds(_ address: LearnedAddresses.Address, in state: State, now: Double) -> UInt32 {
        let until =
            (state.addresses.values.compactMap { $0.shieldedUntil(address) }
            + state.heard.values.compactMap { $0.shieldedUntil(address) }).max() ?? now
        return UInt32(min(max(until - now, 0), LearnedAddresses.maximumLifetime).rounded(.up)) + 1
    }

    /// Addresses kept per user from resolvers the child chose.
    static let heardCapacity = 4096

    /// Forgets the users no longer filtered.
    func keep(owners: Set<UInt32>) {
        state.withLock { state in
            state.addresses = state.addresses.filter { owners.contains($0.key) }
            state.heard = state.heard.filter { owners.contains($0.key) }
            state.searchAddresses = state.searchAddresses.filter { owners.contains($0.key) }
            state.refused = state.refused.filter { owners.contains($0.key) }
            state.flows = state.flows.filter { owners.contains($0.value.owner) }
            state.flowsOf = state.flowsOf.filter { owners.contains($0.key) }
            for owner in state.released.owners where !owners.contains(owner) { state.released.replace(owner, with: []) }
        }
    }
}
