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
                    try acknowledgements.log.run { bytes in judgeLoggedAcknowledgement(bytes) }
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
            case .refuse: mark(Firewall.refusalAsked, Firewall.acknowledgedMask)
            default: break
            }
        }
        // Counted and told as a queued one's would be.
        if case .refuse = decision { _ = verdict(decision, mark: 0, owner: owner, generation: generation) }
    }
}
