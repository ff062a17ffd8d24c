import LinuxSupport
import ScreenTimeCore
import Synchronization

// Judging.
extension ConnectionJudge {
    /// The decision on one packet of `owner` (an authorized user, for its own or a subordinate
    /// uid) whose connection stands `standing` so far (nil: not judged; `.pending`: its opening
    /// is being gathered).
    func judge(
        _ parsed: DNSPacket?, bytes: [UInt8], owner: UInt32, standing: Firewall.Standing?, filter: DomainFilter,
        generation: UInt8 = 0
    ) -> Decision {
        guard let packet = parsed else {
            // ICMP, GRE and the like carry no name: passed. TCP or UDP that cannot be read (a
            // fragment, an IPv6 extension header in front) cannot be judged: dropped.
            switch DNSPacket.protocolNumber(of: bytes) {
            case 6, 17, 0, 43, 44, 60, nil: return .drop
            default: return .pass
            }
        }
        guard let destination = LearnedAddresses.Address(packet.destination),
            let source = LearnedAddresses.Address(packet.source)
        else { return .drop }
        let time = now
        let addressStanding = state.withLock { $0.standing(of: destination, owner: owner, now: time) }
        switch packet.transport {
        case .udp:
            // (A datagram passed under earlier web shields is simply judged again.)
            if addressStanding != .unknown {
                return .refuse(
                    Refusal(kind: "address", reason: "an address the child's resolver returned for a shielded name"))
            }
            if QUICInitial.looksLikeClientInitial(packet.payload) {
                return .refuse(Refusal(kind: "quic", reason: "QUIC, refused so that the browser uses TLS over TCP"))
            }
            return .pass
        case .tcp:
            break
        }
        let key = FlowKey(
            source: source, destination: destination,
            ports: UInt32(packet.sourcePort) << 16 | UInt32(packet.destinationPort))
        // Passed under web shields since changed: the connection's opening is long gone, and what
        // it carries now cannot be judged by name. Reset; the browser opens a new one.
        if standing == .passedEarlier {
            return .refuse(.changed)
        }
        if standing == .watched { return watched(packet, key: key, generation: generation) }
        // Urgent data in an opening: the byte it marks is taken out of the stream by the server's
        // TCP, so the bytes here would not be what the server reads (one urgent byte before a
        // hello made it look like nothing).
        if packet.tcpFlags & DNSPacket.flagURG != 0 {
            return .refuse(Refusal(kind: "urgent", reason: "urgent data in a connection's opening"))
        }
        // An address returned for shielded names only: refused at the SYN when one comes here
        // (the rules pass segments without data in the kernel), else at the first data.
        if addressStanding == .shielded {
            return .refuse(
                Refusal(kind: "address", reason: "an address the child's resolver returned for a shielded name"))
        }
        // A shared address's connection is judged by the name it carries, and one that names
        // nothing is refused: its SYN opens an empty opening (pending), so that what the server
        // sends before she named anything comes to the queue and is dropped (`serverPacket`). A
        // server that speaks first would otherwise stream a shielded site's data to her.
        if packet.payload.isEmpty, addressStanding == .shared, packet.tcpFlags & DNSPacket.flagSYN != 0 {
            remember(key, Flow(owner: owner, opening: [], start: packet.sequence &+ 1, since: time))
            return .pending
        }
        if packet.payload.isEmpty {
            if packet.tcpFlags & (DNSPacket.flagFIN | DNSPacket.flagRST) != 0 {
                state.withLock { $0.removeFlow(key) }
            }
            return .accept
        }
        // Data (under TCP Fast Open, on the SYN itself).
        let gathered: (opening: [UInt8], appended: Bool)?
        gathered = state.withLock { state -> (opening: [UInt8], appended: Bool)? in
            // (A flow watched or released under this key is another connection's, long gone.)
            guard let flow = state.flows[key], flow.passedUnder == nil else { return ([], true) }
            let offset = Int(packet.sequence &- flow.start)
            let end = offset + packet.payload.count
            if offset > flow.opening.count || offset < 0 || packet.sequence &- flow.start > 0x7FFF_FFFF {
                return nil  // ahead of a gap (or before the start): dropped, sent again in order
            }
            // Sent again over what came before (inside it, or running past it): the overlap must say
            // the same. (Not appended, with nothing: a difference.)
            guard Self.agrees(packet, with: flow) else { return ([], false) }
            if end <= flow.opening.count { return (flow.opening, false) }
            // Appended in place: the table's copy is the only one.
            state.flows[key]?.opening += packet.payload.dropFirst(flow.opening.count - offset)
            return (state.flows[key]?.opening ?? [], true)
        }
        guard let gathered else { return .drop }
        if !gathered.appended {
            // Sent again, and the same: still pending, its mark put back if it went (a SYN sent
            // again after one with Fast Open data cleared it, and a plain accept left the flow
            // unmarked: her next segment was judged as the start of a stream, the attack of
            // 2026-12-01).
            return gathered.opening.isEmpty
                ? .refuse(Refusal(kind: "resent", reason: "a segment sent again that differs from the one judged"))
                : standing == .pending ? .accept : .pending
        }
        var opening = gathered.opening
        if opening.isEmpty {
            // The first data of the flow. One whose earlier segments were gathered by a state since
            // lost (the table full, the agent restarted) cannot be read from the middle.
            if standing == .pending {
                return .refuse(
                    Refusal(kind: "lost", reason: "an opening whose first segments the agent no longer holds"))
            }
            opening = Array(packet.payload)
        }
        let reading = ConnectionOpening.read(opening[...])
        if reading == .incomplete {
            if gathered.opening.isEmpty {
                // Data on a SYN (TCP Fast Open) starts one after the SYN's own sequence number.
                let start = packet.sequence &+ (packet.tcpFlags & DNSPacket.flagSYN != 0 ? 1 : 0)
                remember(key, Flow(owner: owner, opening: opening, start: start, since: time))
            }
            return standing == .pending ? .accept : .pending
        }
        var decision: Decision
        switch reading {
        case .incomplete:
            return .pending
        case .unreadable(let kind, let reason):
            decision = .refuse(Refusal(kind: "unreadable", reason: "\(kind.rawValue) that cannot be read: \(reason)"))
        case .unnamed, .names([], _):
            if addressStanding != .unknown {
                decision = .refuse(
                    Refusal(kind: "address", reason: "no name, to an address returned for a shielded name"))
            } else if filter.safeSearch != nil,
                state.withLock({ $0.searchAddresses[owner]?.standing(of: destination, now: time) ?? .unknown })
                    != .unknown
            {
                // Google's and YouTube's servers are shared: with no name, the site's Host could be
                // inside (the second attack's finding 1).
                decision = .refuse(
                    Refusal(kind: "safe search", reason: "no name, to an address of a search engine's or YouTube's"))
            } else {
                decision = .watch
            }
        case .names(let names, let kind):
            decision =
                names.lazy.compactMap { name in filter.verdict(for: name).map { (name, $0) } }.first.map {
                    .refuse(
                        Refusal(
                            kind: "name", reason: "\(kind.rawValue) names a shielded host", name: $0.0, verdict: $0.1,
                            answeredWithPage: kind == .http && $0.1.reason != .bypass))
                } ?? .watch
            // Safe search at the connection: a search engine or YouTube reached without the
            // agent's alias (an address cached from before, typed in, or from another resolver)
            // goes to its safe host's address or nowhere.
            // The safe host named itself (`forcesafesearch.google.com` sent to Google's ordinary
            // address, with the unsafe site's Host inside) is held to its own address too.
            if decision == .watch,
                let (name, target) = names.lazy.compactMap({ name in
                    filter.safeSearchTarget(for: name).map { (name, $0) }
                        ?? (filter.safeSearch != nil && SafeSearch.isSafeHost(name) ? (name, name.lowercased) : nil)
                }).first,
                !(safeHosts?.addresses(of: target) ?? []).contains(where: { $0.elementsEqual(packet.destination) })
            {
                decision = .refuse(
                    Refusal(
                        kind: "safe search",
                        reason: "\(kind.rawValue) names \(name), whose safe version \(target) is not at this address",
                        name: name))
            }
            if decision == .watch { passedNames(names, owner) }
        }
        guard decision == .watch else {
            state.withLock { $0.removeFlow(key) }
            return decision
        }
        // Kept, whole, until the server acknowledges it.
        let start =
            gathered.opening.isEmpty
            ? packet.sequence &+ (packet.tcpFlags & DNSPacket.flagSYN != 0 ? 1 : 0)
            : state.withLock { $0.flows[key]?.start } ?? packet.sequence
        var flow = Flow(owner: owner, opening: opening, start: start, since: time, passedUnder: generation)
        flow.sent = opening.count
        if gathered.opening.isEmpty {
            remember(key, flow)
        } else {
            state.withLock { $0.flows[key] = flow }
        }
        return .watch
    }

    /// A packet from the server of a flow whose opening is pending (gathered, or not begun: a
    /// shared address's): one that carries data is dropped (the server speaks before she named
    /// anything; sent again, it comes here again), one without (its SYN-ACK, an ACK) passes.
    func serverPacket(ofPendingFlow parsed: DNSPacket?) -> Decision {
        guard let packet = parsed, packet.transport == .tcp else { return .drop }
        return packet.payload.isEmpty ? .accept : .drop
    }

    /// Whether the bytes of a segment that overlap the opening are the opening's.
    static func agrees(_ packet: DNSPacket, with flow: Flow) -> Bool {
        let distance = packet.sequence &- flow.start
        // Before the opening's start (beyond half the sequence space): nothing a client resends.
        guard distance <= 0x7FFF_FFFF else { return false }
        let offset = Int(distance)
        guard offset < flow.opening.count else { return true }
        let overlap = min(packet.payload.count, flow.opening.count - offset)
        return packet.payload.prefix(overlap).elementsEqual(flow.opening[offset..<(offset + overlap)])
    }

    /// A data segment of a flow whose opening passed and is not acknowledged yet.
    /// A segment of a watched flow that no socket sent (its process closed the socket: TCP
    /// sends what it has not had acknowledged alone): judged as the flow's own segments are,
    /// for the flow's owner. Nothing else of no socket's comes here.
    func unowned(_ parsed: DNSPacket?, generation: UInt8) -> (decision: Decision, owner: UInt32?) {
        guard let packet = parsed, packet.transport == .tcp,
            let source = LearnedAddresses.Address(packet.source),
            let destination = LearnedAddresses.Address(packet.destination)
        else { return (.drop, nil) }
        let key = FlowKey(
            source: source, destination: destination,
            ports: UInt32(packet.sourcePort) << 16 | UInt32(packet.destinationPort))
        let owner = state.withLock { $0.flows[key]?.owner }
        return (watched(packet, key: key, generation: generation), owner)
    }

    func watched(_ packet: DNSPacket, key: FlowKey, generation: UInt8) -> Decision {
        state.withLock { state -> Decision in
            guard var flow = state.flows[key], let judgedUnder = flow.passedUnder else {
                return .refuse(
                    Refusal(kind: "lost", reason: "a watched connection whose judged opening the agent no longer holds")
                )
            }
            // Sent before the acknowledgement's mark was kept on the connection: passed, unless
            // the web shields changed since its opening was judged.
            if flow.released { return Self.released(key, judgedUnder: judgedUnder, generation: generation, &state) }
            guard Self.agrees(packet, with: flow) else {
                state.removeFlow(key)
                return .refuse(
                    Refusal(kind: "resent", reason: "a segment sent again that differs from the opening judged"))
            }
            let offset = Int(packet.sequence &- flow.start)
            // Urgent data inside the opening: the server's TCP takes the marked byte out of it.
            if packet.tcpFlags & DNSPacket.flagURG != 0, offset < flow.opening.count {
                state.removeFlow(key)
                return .refuse(Refusal(kind: "urgent", reason: "urgent data in a connection's opening"))
            }
            if packet.payload.isEmpty, packet.tcpFlags & (DNSPacket.flagFIN | DNSPacket.flagRST) != 0 {
                state.removeFlow(key)
                return .accept
            }
            flow.sent = max(flow.sent, offset + packet.payload.count)
            state.flows[key] = flow
            return .accept
        }
    }

    /// A packet from the server on a watched flow (`standing` of the flow is `.watched`): `.pass`
    /// once it acknowledges the whole opening and no byte the client has not sent, `.refuse` when
    /// the flow was judged under web shields since changed, when its state is lost, or when the
    /// server goes on without acknowledging it; else `.accept`, and the flow stays watched.
    ///
    /// `whileHeld` is told the decision before the judge's state is let go: what it does to the
    /// flow (the agent marking it in the kernel, for a copy from the log) is done before any
    /// later opening on the same ports is judged.
    func acknowledgement(
        _ parsed: DNSPacket?, generation: UInt8, whileHeld: ((Decision) -> Void)? = nil
    ) -> (decision: Decision, owner: UInt32?) {
        guard let packet = parsed, packet.transport == .tcp,
            let client = LearnedAddresses.Address(packet.destination),
            let server = LearnedAddresses.Address(packet.source)
        else { return (.drop, nil) }
        let key = FlowKey(
            source: client, destination: server,
            ports: UInt32(packet.destinationPort) << 16 | UInt32(packet.sourcePort))
        let time = now
        return state.withLock { state -> (decision: Decision, owner: UInt32?) in
            let outcome = decide(&state)
            whileHeld?(outcome.decision)
            return outcome
        }
        func decide(_ state: inout State) -> (decision: Decision, owner: UInt32?) {
            guard var flow = state.flows[key], let judgedUnder = flow.passedUnder else {
                let lost = Refusal(
                    kind: "lost", reason: "a watched connection whose judged opening the agent no longer holds")
                return (.refuse(lost), nil)
            }
            let owner = flow.owner
            if flow.released {
                return (Self.released(key, judgedUnder: judgedUnder, generation: generation, &state), owner)
            }
            if packet.tcpFlags & DNSPacket.flagRST != 0 {
                state.removeFlow(key)
                return (.accept, owner)
            }
            let acknowledged = packet.acknowledgment &- flow.start
            if packet.tcpFlags & DNSPacket.flagACK != 0, acknowledged <= 0x7FFF_FFFF,
                Int(acknowledged) >= flow.opening.count, Int(acknowledged) <= flow.sent + 1
            {
                guard judgedUnder == generation else {
                    state.removeFlow(key)
                    return (.refuse(.changed), owner)
                }
                state.release(key, &flow, now: time)
                return (.pass, owner)
            }
            flow.unacknowledging += 1
            guard flow.unacknowledging <= Self.unacknowledgingLimit else {
                state.removeFlow(key)
                let silent = Refusal(
                    kind: "unacknowledged", reason: "a server that does not acknowledge the opening judged")
                return (.refuse(silent), owner)
            }
            state.flows[key] = flow
            return (.accept, owner)
        }
    }

    /// A packet of a flow already let go (its acknowledgement read, its mark not yet kept on the
    /// connection): passed if its opening was judged under the web shields in force, else the
    /// flow is forgotten and refused. (A connection kept quiet across a change of shields, its
    /// acknowledgement read before and its next packet after, is judged under the new ones: found
    /// by the attack on the acknowledgement log, 2026-11-29.)
    static func released(_ key: FlowKey, judgedUnder: UInt8, generation: UInt8, _ state: inout State) -> Decision {
        guard judgedUnder == generation else {
            state.removeFlow(key)
            return .refuse(.changed)
        }
        return .pass
    }

    /// Keeps a flow whose opening is being gathered, making room first: the user's oldest flow
    /// when it has too many, the oldest of all when the table is full, and every expired one.
    func remember(_ key: FlowKey, _ flow: Flow) {
        state.withLock { state in
            state.removeFlow(key)
            state.forgetReleased(now: flow.since, linger: releasedLinger)
            if state.flowsOf[flow.owner, default: 0] >= Self.flowsPerUser, let oldest = state.oldest(of: flow.owner) {
                state.removeFlow(oldest)
            }
            if state.flows.count >= Self.flowsInAll {
                for (expired, old) in state.flows where flow.since - old.since >= Self.flowLifetime {
                    state.removeFlow(expired)
                }
                if state.flows.count >= Self.flowsInAll, let oldest = state.oldest(of: nil) { state.removeFlow(oldest) }
            }
            state.flows[key] = flow
            state.flowsOf[flow.owner, default: 0] += 1
        }
    }

    /// Counts a refusal for `status`.
    func count(_ refusal: Refusal, owner: UInt32) {
        state.withLock { $0.refused[owner, default: [:]][refusal.kind, default: 0] += 1 }
    }

    /// The refusals counted for a user since the agent started, by kind.
    func refusals(of owner: UInt32) -> [String: Int] { state.withLock { $0.refused[owner] ?? [:] } }

    /// The opening judged on the flow `packet` (hers, to the server) is part of, while it is
    /// watched.
    func opening(of packet: DNSPacket) -> [UInt8]? {
        guard let source = LearnedAddresses.Address(packet.source),
            let destination = LearnedAddresses.Address(packet.destination)
        else { return nil }
        let key = FlowKey(
            source: source, destination: destination,
            ports: UInt32(packet.sourcePort) << 16 | UInt32(packet.destinationPort))
        return state.withLock { state in
            state.flows[key].flatMap { $0.passedUnder != nil && !$0.released ? $0.opening : nil }
        }
    }

    /// Flows whose openings are being gathered, for status and tests.
    var gathering: Int { state.withLock { $0.flows.count } }
}
