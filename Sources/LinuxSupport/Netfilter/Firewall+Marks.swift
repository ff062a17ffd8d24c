// The connection mark's byte: what each standing's value is, and back.
extension Firewall {
    /// The mark's value (within `markMask`) of a connection so far judged; PASSED of a generation.
    public func mark(_ standing: Standing, generation: UInt8 = 0) -> UInt32 {
        switch standing {
        case .dns: mark
        case .pending: mark &+ 0x01_0000
        case .refused: mark &+ 0x02_0000
        case .passed, .passedEarlier: mark &+ (0x03_0000 &+ UInt32(generation % Self.generations) << 16)
        case .watched: mark &+ (0x03_0000 &+ UInt32(Self.generations) << 16)
        }
    }

    /// The mark's value of a connection whose hello the hello fast path let go in the kernel
    /// (`helloRules`): watched as WATCHED is (the agent reads it as `.watched`), but never made
    /// PASSED by the acknowledged bits, which are written by addresses and ports and, read late,
    /// land on whatever connection holds them then. Its server's acknowledgement of that very
    /// hello makes it PASSED in the kernel; a verdict of the agent on one of its packets makes it
    /// WATCHED.
    public var kernelWatchedMark: UInt32 { mark &+ (0x04_0000 &+ UInt32(Self.generations) << 16) }

    /// The same as a rule writes it (value/mask).
    var kernelWatchedText: String {
        "0x" + String(kernelWatchedMark, radix: 16) + "/0x" + String(Self.markMask, radix: 16)
    }

    /// The mark's value of a TCP connection opened from outside (a SYN that came in, not over
    /// loopback): what a server of this machine sends back on it is an answer, not a place its
    /// user goes, and leaves unjudged. Conntrack's direction alone does not say so: a server's
    /// packet that comes after a flow's entry went makes a new one with the server's side as its
    /// original direction (`nf_conntrack_tcp_loose`), and her packets on it went out as a reply,
    /// unjudged (a child's attack on the installed agent, 2026-12-01).
    public var inboundMark: UInt32 { mark &+ (0x05_0000 &+ UInt32(Self.generations) << 16) }

    /// The same as a rule writes it (value/mask).
    var inboundText: String { "0x" + String(inboundMark, radix: 16) + "/0x" + String(Self.markMask, radix: 16) }

    /// A standing's mark as the rules write it (value/mask).
    func markText(_ standing: Standing, generation: UInt8 = 0) -> String {
        "0x" + String(mark(standing, generation: generation), radix: 16) + "/0x" + String(Self.markMask, radix: 16)
    }

    /// The marks (value/mask) of connections let go under the generations other than
    /// `generation`: PASSED; and, with the acknowledgement log, WATCHED with its opening's
    /// acknowledgement read under one (a long poll: her request acknowledged, its answer held by
    /// the server until after a shield; the rules turn only the current generation's into PASSED).
    func earlierGenerations(_ generation: UInt8, acknowledged: Bool) -> [String] {
        let owned = "/0x" + String(Self.markMask | Self.acknowledgedMask, radix: 16)
        let others = (0..<Self.generations).filter { $0 != generation % Self.generations }
        let passed = others.map { markText(.passed, generation: $0) }
        guard acknowledged else { return passed }
        return passed
            + others.map { "0x" + String(mark(.watched) | Self.acknowledged(generation: $0), radix: 16) + owned }
    }

    /// How far the connection of a packet the queue holds was judged, from its mark (which the
    /// rules restored from the connection's); nil for none of the agent's marks.
    public func standing(ofMark packetMark: UInt32, generation: UInt8) -> Standing? {
        let value = packetMark & Self.markMask
        for standing in [Standing.dns, .pending, .refused, .watched] where mark(standing) == value { return standing }
        if value == kernelWatchedMark { return .watched }
        for earlier in 0..<Self.generations where mark(.passed, generation: earlier) == value {
            return earlier == generation % Self.generations ? .passed : .passedEarlier
        }
        return nil
    }
}
