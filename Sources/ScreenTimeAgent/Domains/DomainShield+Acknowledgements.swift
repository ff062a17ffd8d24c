import FoundationEssentials
import LinuxSupport
import ScreenTimeCore

// Acknowledgements: a watched flow's packets from its server come as copies in the log (see
// `Firewall.ruleset`), read here; the agent marks the flow in the kernel itself.
extension DomainShield {
    /// Reads the copies of watched flows' server packets on a thread of its own until the agent
    /// stops. A log that fails is left (logged): its flows stay watched, their packets compared
    /// in the queue, until the agent starts again.
    func readAcknowledgements() async {
        guard let acknowledgements else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Threads.start("screentime.acks") { [self] in
                do {
                    try acknowledgements.log.run { copy in judgeLogged(copy) }
                } catch {
                    logger.error("reading the acknowledgement log failed", metadata: ["error": "\(error)"])
                }
                done.resume()
            }
        }
    }

    /// A copy of a watched flow's packet from its server (the log; the packet itself went on):
    /// its acknowledgement judged as a queued one is. When it lets the flow go, the flow's
    /// acknowledged bits are set in the kernel (the rules make it PASSED at its next packet);
    /// when it refuses the flow, the same bits ask for REFUSED (at its next packet). Both only
    /// where the connection is still WATCHED, and while the judge's state is held: an opening
    /// on the same ports is judged after (its verdict clears the bits).
    func judgeLoggedAcknowledgement(_ bytes: [UInt8]) {
        guard let marks = acknowledgements?.marks, let packet = try? DNSPacket(parsing: bytes) else { return }
        let generation = state.withLock { $0.installedRules?.generation ?? 0 }
        // The flow's first packet went from the server packet's destination to its source.
        func mark(_ value: UInt32, _ mask: UInt32) {
            do {
                try marks.setMark(
                    source: packet.destination, sourcePort: packet.destinationPort, destination: packet.source,
                    destinationPort: packet.sourcePort, value: value, mask: mask)
            } catch {
                // Gone meanwhile (a reset): nothing to mark.
                logger.debug("a watched flow's mark was not set", metadata: ["error": "\(error.message)"])
            }
        }
        let (decision, owner) = connections.acknowledgement(packet, generation: generation) { decision in
            switch decision {
            case .pass: mark(Firewall.acknowledged(generation: generation), Firewall.acknowledgedMask)
            case .refuse:
                // A flow whose hello's copy the agent refused: its refusal is asked again as that
                // one was, which a flow the server's acknowledgement passed in the kernel heeds too
                // (a refusal asked as any other would take the place of that one before her next
                // packet met it). Looked up only here, not for every copy.
                let refusedHello = self.refusedHellos.withLock {
                    $0.contains(Self.flow(packet.destination, packet.destinationPort, packet.source, packet.sourcePort))
                }
                mark(refusedHello ? Firewall.helloRefusalAsked : Firewall.refusalAsked, Firewall.acknowledgedMask)
            default: break
            }
        }
        // Counted and told as a queued one's would be.
        if case .refuse = decision { _ = verdict(decision, mark: 0, owner: owner, generation: generation) }
    }
}

// Hellos the kernel let go: a copy of each comes to the same log, ahead of the server's answer.
extension DomainShield {
    /// A copy from the log: her hello the kernel let go (on its way out), or the server's packet
    /// on a watched flow.
    func judgeLogged(_ copy: PacketLog.Copy) {
        if copy.outgoing {
            judgeLoggedHello(copy)
        } else {
            judgeLoggedAcknowledgement(copy.bytes)
        }
    }

    /// Every copy logged so far, judged now, before a packet of a watched flow is: her next data
    /// can reach the queue before the log's thread has read the copy of the hello the kernel let
    /// go on that flow, and would find no flow. (The copy is logged before the hello leaves, so
    /// it is there to read.) Nothing to do without the hello fast path: no copy but the server's
    /// comes then.
    func drainLog() {
        guard configuration.helloFastPath, let acknowledgements else { return }
        do {
            try acknowledgements.log.drain { copy in judgeLogged(copy) }
        } catch {
            logger.error("reading the acknowledgement log failed", metadata: ["error": "\(error.message)"])
        }
    }

    /// A copy of a hello the kernel let go (`hello` in the kernel's table: a name the agent
    /// passed to her for that server under the filters in force): judged as a queued one is,
    /// the flow kept as watched and the name noted for usage. When the agent would not pass it
    /// (its filters or what it learned of the address changed since the entry was made, or the
    /// copy is not what it reads as a hello), the flow's refusal is asked in the kernel: the
    /// hello reached the server, and nothing of hers after it does. A flow the agent cannot name
    /// a user for is refused too.
    func judgeLoggedHello(_ copy: PacketLog.Copy) {
        guard let parsed = try? DNSPacket(parsing: copy.bytes), parsed.transport == .tcp else { return }
        let found = copy.uid.flatMap { sender in
            state.withLock { state in
                state.snapshot.owner(ofKernelUID: sender).flatMap { owner in
                    state.filters[owner].map {
                        (owner, $0, state.installedRules?.generation ?? 0, state.fastPathGeneration)
                    }
                }
            }
        }
        var decision = ConnectionJudge.Decision.refuse(
            ConnectionJudge.Refusal(kind: "lost", reason: "a hello the kernel passed for no filtered user"))
        if let (owner, filter, generation, fastPathGeneration) = found {
            decision = connections.judge(
                parsed, bytes: copy.bytes, owner: owner, standing: nil, filter: filter, generation: generation)
            switch decision {
            case .watch:
                // In use: the entry holds on.
                if let sender = copy.uid { offerHello(parsed, uid: sender, generation: fastPathGeneration) }
                return
            case .refuse: break
            default:
                decision = .refuse(
                    ConnectionJudge.Refusal(
                        kind: "unreadable", reason: "a hello the kernel passed that the agent does not read as one"))
            }
            _ = verdict(decision, mark: 0, owner: owner, generation: generation)
        }
        refusedHellos.withLock { refused in
            refused.append(Self.flow(parsed.source, parsed.sourcePort, parsed.destination, parsed.destinationPort))
            if refused.count > Self.refusedHellosKept { refused.removeFirst() }
        }
        do {
            try acknowledgements?.marks.setMark(
                source: parsed.source, sourcePort: parsed.sourcePort, destination: parsed.destination,
                destinationPort: parsed.destinationPort, value: Firewall.helloRefusalAsked,
                mask: Firewall.acknowledgedMask)
        } catch {
            logger.debug("a refused hello's flow was not marked", metadata: ["error": "\(error.message)"])
        }
    }

    /// How many flows of refused hellos are kept (`refusedHellos`).
    static let refusedHellosKept = 64

    /// A flow's addresses and ports as `refusedHellos` holds them (its client's first).
    static func flow(
        _ client: ArraySlice<UInt8>, _ clientPort: UInt16, _ server: ArraySlice<UInt8>, _ serverPort: UInt16
    ) -> [UInt8] {
        Array(client) + [UInt8(clientPort >> 8), UInt8(clientPort & 0xFF)] + Array(server)
            + [UInt8(serverPort >> 8), UInt8(serverPort & 0xFF)]
    }

    /// The fast path's programs as the rules use them: the hello's only with `helloFastPath`.
    var fastPathPrograms: Firewall.DNSFastPathPrograms? {
        guard var programs = fastPath?.programs else { return nil }
        if !configuration.helloFastPath {
            programs.hello = nil
            programs.acknowledged = nil
        }
        return programs
    }

    /// How long a hello's entry holds (unless a filter changes first): the agent judges each copy
    /// all the same, and a name in use is put again once a third of this has gone.
    static let helloLifetime: Double = 30

    /// After the agent passed a TLS hello naming one server: the same hello (her uid, that
    /// server's address and port, that name byte for byte) is let go in the kernel from now on,
    /// for `helloLifetime` or until the next change of a filter.
    func offerHello(_ packet: DNSPacket, uid: UInt32, generation: UInt64) {
        guard let fastPath, configuration.helloFastPath, acknowledgements != nil,
            let opening = connections.opening(of: packet),
            case .read(let hello) = TLSClientHello.read(opening[...]), hello.serverNames.count == 1
        else { return }
        let entry = DNSFastPath.Hello(
            uid: uid, address: Array(packet.destination), port: packet.destinationPort, name: hello.serverNames[0])
        guard entry.fits else { return }
        // Put again only once a third of its lifetime has gone since the last put under the same
        // generation: the kernel's entry holds on meanwhile, and a put is two system calls on
        // each connection (her tenth connection a second to one server cost the agent as much as
        // the rest of its judging).
        let now = ContinuousClock.now
        let recent = offeredHellos.withLock { offered in
            if let last = offered[entry], last.generation == generation,
                now - last.at < .seconds(Self.helloLifetime / 3)
            {
                return true
            }
            if offered.count >= Self.offeredHellosKept { offered.removeAll(keepingCapacity: true) }
            offered[entry] = (generation, now)
            return false
        }
        guard !recent else { return }
        do {
            try fastPath.allow(entry, seconds: Self.helloLifetime, generation: generation)
        } catch {
            offeredHellos.withLock { _ = $0.removeValue(forKey: entry) }
            logger.debug("not on the hello fast path", metadata: ["error": "\(error.message)"])
        }
    }

    /// How many hellos `offeredHellos` keeps before it starts again empty.
    static let offeredHellosKept = 4_096
}
