import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Packets.
extension DomainShield {
    /// The verdict on one queued packet: a filtered user's DNS query, a reply to one, or the
    /// opening of another of its connections (see `ConnectionJudge`).
    func judge(_ packet: NetfilterQueue.Packet) -> NetfilterQueue.Verdict {
        if packet.incoming {
            let generation = state.withLock { $0.installedRules?.generation ?? 0 }
            let standing = firewall.standing(ofMark: packet.mark, generation: generation)
            if standing == .pending {
                return verdict(
                    connections.serverPacket(ofPendingFlow: try? DNSPacket(parsing: packet.bytes)), mark: packet.mark,
                    owner: nil, generation: generation)
            }
            guard standing == .watched else { return judgeReply(packet) }
            drainLog()
            let (decision, owner) = connections.acknowledgement(
                try? DNSPacket(parsing: packet.bytes), generation: generation)
            return verdict(decision, mark: packet.mark, owner: owner, generation: generation)
        }
        guard let sender = packet.uid else {
            // A segment of a watched flow whose socket its process closed (TCP sends the opening
            // again alone): compared with the opening judged, as any other. A pending flow's (the
            // rest of an opening sent after the socket was closed) is dropped: no user to judge
            // it for, and its start was not all of it.
            let generation = state.withLock { $0.installedRules?.generation ?? 0 }
            guard firewall.standing(ofMark: packet.mark, generation: generation) == .watched else { return .drop }
            drainLog()
            let (decision, owner) = connections.unowned(
                try? DNSPacket(parsing: packet.bytes), generation: generation)
            return verdict(decision, mark: packet.mark, owner: owner, generation: generation)
        }
        // The sender's uid may be a subordinate one: the filter is its owner's.
        guard
            let (uid, filter, generation, fastPathGeneration) = state.withLock({ state in
                state.snapshot.owner(ofKernelUID: sender).flatMap { owner in
                    state.filters[owner].map {
                        (owner, $0, state.installedRules?.generation ?? 0, state.fastPathGeneration)
                    }
                }
            })
        else {
            // Not (or no longer) a filtered user: the rules lag a revocation by a moment.
            return .accept
        }
        let parsed = try? DNSPacket(parsing: packet.bytes)
        let standing = firewall.standing(ofMark: packet.mark, generation: generation)
        if let parsed, parsed.destinationPort == 53 {
            // Her DNS comes to the queue before any verdict's mark is put back on the packet, and
            // a question's verdict is never NF_REPEAT: one with a mark is no question the rules
            // send, and passing it to the connections' judge could repeat it without end (her
            // UDP questions meet no rule that keeps a repeated verdict).
            guard standing == nil || standing == .dns else { return .drop }
            return judgeQuery(parsed, uid: uid, filter: filter)
        }
        // A watched flow's data: the copy of a hello the kernel let go on it is judged first.
        if standing == .watched { drainLog() }
        let decision = connections.judge(
            parsed, bytes: packet.bytes, owner: uid, standing: standing, filter: filter, generation: generation)
        if case .refuse(let refusal) = decision, refusal.answeredWithPage, let parsed {
            sendBlockPage(answering: parsed, refusal: refusal, uid: uid)
        }
        // A hello passed: the same is let go in the kernel from now on.
        if decision == .watch, let parsed { offerHello(parsed, uid: sender, generation: fastPathGeneration) }
        return verdict(decision, mark: packet.mark, owner: uid, generation: generation)
    }

    /// A connection judge's decision as the queue's verdict: a standing for the flow goes back
    /// through NF_REPEAT as the packet's mark, which the rules keep on the connection.
    func verdict(
        _ decision: ConnectionJudge.Decision, mark: UInt32, owner: UInt32?, generation: UInt8
    ) -> NetfilterQueue.Verdict {
        let others = mark & ~Firewall.markMask
        switch decision {
        case .accept: return .accept
        case .drop: return .drop
        case .pass: return .repeatMarked(others | firewall.mark(.passed, generation: generation))
        case .watch: return .repeatMarked(others | firewall.mark(.watched))
        case .pending: return .repeatMarked(others | firewall.mark(.pending))
        case .refuse(let refusal):
            if let owner {
                if let name = refusal.name, let verdict = refusal.verdict {
                    note(uid: owner, name: name, verdict: verdict)
                }
                connections.count(refusal, owner: owner)
            }
            logger.debug(
                "connection refused", metadata: ["uid": "\(owner.map(String.init) ?? "-")", "why": "\(refusal.reason)"])
            return .repeatMarked(others | firewall.mark(.refused))
        }
    }

    /// The verdict on a DNS query. What cannot be judged is dropped: the sender's lookup fails,
    /// as it would while the agent is down.
    func judgeQuery(_ parsed: DNSPacket, uid: UInt32, filter: DomainFilter) -> NetfilterQueue.Verdict {
        guard let messages = try? parsed.messages() else { return .drop }
        guard !messages.isEmpty else { return .accept }
        var answers: [[UInt8]] = []
        for bytes in messages {
            guard let message = try? DNSMessage(parsing: bytes) else { return .drop }
            // Counted for usage reports: each address question (A or AAAA) is a lookup.
            if let question = message.questions.first, question.type == 1 || question.type == 28 {
                metUsage?.note([question.name], uid: uid, lookups: 1)
            }
            if let (question, verdict) = filter.verdict(for: message) {
                answers.append(DNSMessage.nxdomain(answering: message).serialized())
                note(uid: uid, name: question.name, verdict: verdict)
                // The addresses behind the name, learned in the background, are refused to this
                // child for their TTL.
                if verdict.reason != .bypass {
                    shadows.lookUp(
                        question.name, owner: uid, resolver: Array(parsed.destination), port: parsed.destinationPort)
                }
            } else if filter.safeSearch != nil, message.questions.count > 1,
                message.questions.contains(where: { filter.safeSearchTarget(for: $0.name) != nil })
            {
                // Several questions, one a search engine's: not answered for the first alone, not
                // passed for the resolver to answer the rest.
                return .drop
            } else if let question = message.questions.first, question.class == 1,
                let target = filter.safeSearchTarget(for: question.name)
            {
                // Search and YouTube answered by their safe versions. Addresses not learned yet:
                // dropped, and the child's resolver asks again in a moment.
                let wanted = question.type == DNSMessage.typeA || question.type == DNSMessage.typeAAAA
                let addresses = safeSearch.addresses(of: target)
                if wanted, addresses == nil { return .drop }
                answers.append(
                    DNSMessage.alias(
                        answering: message, to: target, addresses: addresses ?? [], ttl: SafeSearchAddresses.answerTTL
                    ).serialized())
            }
        }
        // Its reply comes back queued (its connection is marked), to be judged as this user's:
        // the server's, or the NXDOMAIN written here in its place.
        for bytes in messages where bytes.count >= 2 {
            outstanding.remember(Self.key(parsed, id: bytes, reply: false), owner: uid)
        }
        if answers.isEmpty { return .accept }
        // Part of a TCP segment shielded, or a connection not open yet: nothing can be answered
        // in place, and nothing may pass.
        guard answers.count == messages.count, !parsed.opensConnection else { return .drop }
        return .replace(parsed.reply(carrying: answers))
    }

    /// The verdict on a reply to a filtered user (queued by its connection's mark): a reply
    /// whose answers lead to a shielded name — `allowed.test CNAME shielded.test` and its
    /// addresses, a DNAME, an SVCB or HTTPS target — becomes NXDOMAIN for the asker, and an HTTPS
    /// or SVCB answer offering ECH keys becomes an empty answer, so the browser's hello shows the
    /// name (a TCP reply, which cannot be rewritten in place, is dropped). The addresses are
    /// noted for the asker: refused when returned for a shielded name. A reply to no question a
    /// filtered user asked lately is dropped.
    func judgeReply(_ packet: NetfilterQueue.Packet) -> NetfilterQueue.Verdict {
        guard let parsed = try? DNSPacket(parsing: packet.bytes), let messages = try? parsed.messages() else {
            return .drop
        }
        // The rest of a TCP connection (its handshake, its acknowledgements).
        guard !messages.isEmpty else { return .accept }
        var rewrite: (message: DNSMessage, shielded: Bool)?
        // From one of the system's resolvers (port 53), or from one the child chose.
        let trusted = parsed.sourcePort == 53 && resolvers.contains(parsed.source)
        for bytes in messages {
            guard bytes.count >= 2,
                let owner = outstanding.owner(
                    of: Self.key(parsed, id: bytes, reply: true), answered: parsed.transport == .udp),
                let (filter, fastPathGeneration) = state.withLock({ state in
                    state.filters[owner].map { ($0, state.fastPathGeneration) }
                }),
                let answers = try? DNSMessage.answers(in: bytes)
            else { return .drop }
            var shielded = false
            for name in answers.names {
                guard let verdict = filter.verdict(for: name) else { continue }
                note(uid: owner, name: name, verdict: verdict)
                shielded = true
                // A reply may carry the alias alone (`alias.test CNAME blocked.test`, no address):
                // the shielded target's addresses are learned by the agent's own lookup.
                if verdict.reason != .bypass {
                    shadows.lookUp(name, owner: owner, resolver: Array(parsed.source), port: parsed.sourcePort)
                }
                break
            }
            connections.learn(answers.addresses, owner: owner, shielded: shielded, trusted: trusted)
            if filter.safeSearch != nil, answers.names.contains(where: SafeSearch.isSearchFamily),
                !answers.names.contains(where: SafeSearch.isSafeHost)
            {
                connections.learnSearchAddresses(answers.addresses, owner: owner)
            }
            if shielded || answers.offersECH {
                guard let message = try? DNSMessage(parsing: bytes) else { return .drop }
                rewrite = (message, shielded || rewrite?.shielded == true)
            } else if fastPath != nil, messages.count == 1, parsed.transport == .udp {
                // Goes as it is: asked again, it may pass in the kernel.
                offerFastPath(reply: bytes, owner: owner, filter: filter, generation: fastPathGeneration)
            }
        }
        guard let rewrite else { return .accept }
        let answer =
            rewrite.shielded
            ? DNSMessage.nxdomain(answering: rewrite.message) : DNSMessage.noData(answering: rewrite.message)
        guard messages.count == 1, let rewritten = parsed.forwarded(carrying: answer.serialized()) else {
            return .drop
        }
        return .replace(rewritten)
    }

    /// A question's key, from the question's packet or from its reply's.
    static func key(_ packet: DNSPacket, id bytes: ArraySlice<UInt8>, reply: Bool) -> OutstandingQueries.Key {
        let id = UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1])
        return reply
            ? OutstandingQueries.Key(
                client: Array(packet.destination), clientPort: packet.destinationPort, server: Array(packet.source),
                serverPort: packet.sourcePort, id: id)
            : OutstandingQueries.Key(
                client: Array(packet.source), clientPort: packet.sourcePort, server: Array(packet.destination),
                serverPort: packet.destinationPort, id: id)
    }

    /// The name an event is counted under: for a domain shield, the shield's own name (the
    /// nearest one above the name that the user's policy shields: `play.google.com`, not
    /// `google.com`), so status shows what the guardian wrote; else the registrable domain.
    func eventDomain(_ domain: DomainName, uid: UInt32, verdict: DomainFilter.Verdict) -> DomainName {
        if verdict.reason == .domain,
            let shielded = state.withLock({ $0.snapshot.users[uid]?.policy.webDomainsShieldedByToken }),
            let shield = domain.selfAndAncestors.first(where: { shielded[minter.token(for: $0)] != nil })
        {
            return shield
        }
        return suffixes.registrableDomain(of: domain) ?? domain
    }

    /// Counts a shielded name met (looked up, or named by a connection) for `status` and the
    /// reports, and tells the shield presenter (a notice in her session), at most once a second
    /// per name: a page that asks a shielded name again and again costs a lookup in a table.
    func note(uid: UInt32, name: DNSName, verdict: DomainFilter.Verdict) {
        let nameKey = NotedKey(uid: uid, name: name.lowercased, reason: verdict.reason, category: verdict.category)
        let instant = ContinuousClock.now
        var noted: Noted
        // Written back only when new, or told again: a name met again costs one look.
        var changed = false
        if let known = notedNames.withLock({ $0[nameKey] }) {
            noted = known
        } else {
            changed = true
            // The nearest name that is a host name: a verdict was reached through one of them.
            var labels = name.labels
            var domain: DomainName?
            while !labels.isEmpty, domain == nil {
                domain = (try? DNSName(labels: labels))?.domainName
                labels.removeFirst()
            }
            guard let domain else { return }
            let shown = eventDomain(domain, uid: uid, verdict: verdict)
            noted = Noted(shown: shown, token: minter.token(for: shown).base64, told: nil)
        }
        let shown = noted.shown
        if verdict.reason != .bypass, noted.told.map({ instant - $0 >= Self.tellingSpacing }) ?? true {
            noted.told = instant
            changed = true
            shieldEvents.tell(
                .met(
                    ShieldEncounter(
                        kind: .webDomain, owner: uid, token: noted.token, name: shown.unicode, identity: shown.ascii,
                        categories: [], icon: nil, stores: verdict.stores, pid: nil, webReason: verdict.reason)))
        }
        if changed {
            notedNames.withLock { names in
                // Bounded: a child inventing names starts it afresh, no more.
                if names[nameKey] == nil, names.count >= RegistrableDomains.kept {
                    names.removeAll(keepingCapacity: true)
                }
                names[nameKey] = noted
            }
        }
        let key = EventKey(uid: uid, domain: shown, reason: verdict.reason, category: verdict.category)
        let now = Date()
        if events.withLock({ $0.count(key, at: now) }) { flushContinuation.yield() }
    }

    /// Writes the counted events to the database.
    func flushEvents() {
        // Only users still filtered have counts here (see `EventBuffer`): a revocation deletes a
        // user's events, and lookups counted just before it must not bring them back.
        let (counts, dropped) = events.withLock { buffer in
            defer {
                buffer.counts = [:]
                buffer.dropped = 0
            }
            return (buffer.counts, buffer.dropped)
        }
        guard !counts.isEmpty else { return }
        var records: [StateDatabase.ShieldEvent] = []
        var names: [String: TokenName] = [:]
        for (key, value) in counts {
            let token = minter.token(for: key.domain).base64
            names[token] = TokenName(kind: .domain, identity: key.domain.ascii, displayName: key.domain.unicode)
            records.append(
                StateDatabase.ShieldEvent(
                    uid: key.uid, kind: .domain, token: token, reason: key.reason.rawValue,
                    category: key.category?.base64, first: value.first, last: value.last, count: value.count))
        }
        do {
            try database.record(records, names: names)
        } catch {
            logger.error("cannot record shielded lookups", metadata: ["error": "\(error)"])
        }
        if dropped > 0 {
            logger.warning(
                "too many different shielded lookups at once; some were not recorded",
                metadata: ["dropped": "\(dropped)"])
        }
    }
}

// A shielded name met.
extension DomainShield {
    struct NotedKey: Hashable {
        var uid: UInt32
        var name: DNSName
        var reason: DomainFilter.Reason
        var category: ActivityCategoryToken?
    }

    struct Noted {
        /// The name counted and shown: the shield's own, or the registrable domain.
        var shown: DomainName
        var token: String
        var told: ContinuousClock.Instant?
    }
}
