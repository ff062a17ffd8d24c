import Foundation
import LinuxSupport
import ScreenTimeCore
import Testing

@testable import ScreenTimeAgent

/// The connection judge on packets made here (no root, no queue): how a flow's opening is
/// gathered across segments, what a lost state, a gap, a resent segment and a full table do.
@Suite struct ConnectionJudgeTests {
    static let child: UInt32 = 1001
    static let filter: DomainFilter = {
        let name = try! DomainName("blocked.test")
        let token = try! TokenMinter(secret: Array(repeating: UInt8(7), count: 32)).token(for: name)
        var settings = StoreSettings()
        settings.shield.webDomains = [token]
        let policy = try! StoreCollection([(StoreKey(client: try! ClientID("t"), name: try! StoreName("s")), settings)])
            .effectivePolicy
        return DomainFilter(
            policy: policy, names: [token: name], categoryLists: [:], adultList: DomainList([DomainName]()))
    }()

    /// An IPv4 TCP packet from 10.0.0.2:port to 10.1.1.1:443.
    static func segment(port: UInt16 = 40000, sequence: UInt32, flags: UInt8 = 0x18, _ payload: [UInt8] = []) -> [UInt8]
    {
        var tcp: [UInt8] = [UInt8(port >> 8), UInt8(port & 0xFF), 0x01, 0xBB]
        tcp += [
            UInt8(sequence >> 24), UInt8(sequence >> 16 & 0xFF), UInt8(sequence >> 8 & 0xFF), UInt8(sequence & 0xFF),
        ]
        tcp += [0, 0, 0, 1, 0x50, flags, 0xFF, 0xFF, 0, 0, 0, 0]
        let total = 20 + tcp.count + payload.count
        let ip: [UInt8] = [
            0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 1, 1, 1,
        ]
        return ip + tcp + payload
    }

    static func hello(_ name: String) -> [UInt8] {
        var bytes = Array(try! Data(contentsOf: URL(fileURLWithPath: fixtures + "curl.bin")))
        let original = Array("video.shielded.test".utf8)
        let at = bytes.firstRange(of: original)!
        bytes.replaceSubrange(at, with: Array(name.utf8))
        return bytes
    }

    static let fixtures =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path
        + "/ScreenTimeCoreTests/Fixtures/ClientHellos/"

    func judge(
        _ judge: ConnectionJudge, _ bytes: [UInt8], standing: Firewall.Standing? = nil, generation: UInt8 = 0
    ) -> ConnectionJudge.Decision {
        judge.judge(
            try? DNSPacket(parsing: bytes), bytes: bytes, owner: Self.child, standing: standing, filter: Self.filter,
            generation: generation)
    }

    /// An IPv4 TCP packet from the server, 10.1.1.1:443, to 10.0.0.2:port.
    static func reply(port: UInt16 = 40000, acknowledging: UInt32, flags: UInt8 = 0x18) -> [UInt8] {
        var tcp: [UInt8] = [0x01, 0xBB, UInt8(port >> 8), UInt8(port & 0xFF), 0, 0, 0x10, 0]
        tcp += [
            UInt8(acknowledging >> 24), UInt8(acknowledging >> 16 & 0xFF), UInt8(acknowledging >> 8 & 0xFF),
            UInt8(acknowledging & 0xFF),
        ]
        tcp += [0x50, flags, 0xFF, 0xFF, 0, 0, 0, 0]
        let payload = Array("server".utf8)
        let total = 20 + tcp.count + payload.count
        let ip: [UInt8] = [
            0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 1, 1, 1, 10, 0, 0, 2,
        ]
        return ip + tcp + payload
    }

    func acknowledgement(_ judge: ConnectionJudge, _ bytes: [UInt8], generation: UInt8 = 0) -> ConnectionJudge.Decision
    {
        judge.acknowledgement(try? DNSPacket(parsing: bytes), generation: generation).decision
    }

    func isRefusal(_ decision: ConnectionJudge.Decision) -> Bool {
        if case .refuse = decision { return true }
        return false
    }

    @Test func aHelloInTwoSegmentsIsGatheredThenJudged() {
        let connections = ConnectionJudge()
        let hello = Self.hello("video.blocked.test.")  // the same length, a trailing dot
        #expect(judge(connections, Self.segment(sequence: 99, flags: 0x02)) == .accept)  // the SYN
        #expect(judge(connections, Self.segment(sequence: 100, flags: 0x10)) == .accept)  // the ACK
        #expect(judge(connections, Self.segment(sequence: 100, Array(hello[0..<200]))) == .pending)
        #expect(connections.gathering == 1)
        // Sent again: what it holds was seen.
        #expect(judge(connections, Self.segment(sequence: 100, Array(hello[0..<200])), standing: .pending) == .accept)
        // Ahead of a gap: dropped, to come again in order.
        #expect(judge(connections, Self.segment(sequence: 400, Array(hello[300...])), standing: .pending) == .drop)
        let last = judge(connections, Self.segment(sequence: 300, Array(hello[200...])), standing: .pending)
        #expect(isRefusal(last), "\(last)")
        #expect(connections.gathering == 0)
        // An allowed name, whole, passes.
        #expect(judge(connections, Self.segment(port: 40001, sequence: 1, Self.hello("video.allowed.test."))) == .watch)
    }

    /// A flow the rules know as pending whose gathered bytes the agent lost (a restart, a full
    /// table) is refused: read from the middle, the rest of a hello would name nothing.
    @Test func aPendingFlowWithoutItsStateIsRefused() {
        let connections = ConnectionJudge()
        let hello = Self.hello("video.blocked.test.")
        #expect(isRefusal(judge(connections, Self.segment(sequence: 300, Array(hello[200...])), standing: .pending)))
        // Without the pending mark the same bytes would be a new opening that names nothing.
        #expect(judge(connections, Self.segment(port: 40002, sequence: 300, Array(hello[250...]))) == .watch)
    }

    /// 300 half-sent hellos of one child: the table keeps 256 of its flows; the evicted ones are
    /// refused when they go on; a new flow is gathered.
    @Test func aChildFillingTheTableLosesItsOwnOldestFlows() {
        let connections = ConnectionJudge()
        let hello = Self.hello("video.allowed.test.")
        for port in 0..<300 {
            #expect(
                judge(connections, Self.segment(port: UInt16(20000 + port), sequence: 1, Array(hello[0..<100])))
                    == .pending)
        }
        #expect(connections.gathering == ConnectionJudge.flowsPerUser)
        let evicted = judge(
            connections, Self.segment(port: 20000, sequence: 101, Array(hello[100...])), standing: .pending)
        #expect(isRefusal(evicted))
        let kept = judge(
            connections, Self.segment(port: 20299, sequence: 101, Array(hello[100...])), standing: .pending)
        #expect(kept == .watch)
    }

    /// A child's finished connections do not fill her table: a flow let go is forgotten its
    /// linger after (here at once, at the next opening), so 600 connections one after another
    /// leave one flow, and her half-sent hellos keep their places. With the agent's linger, the
    /// flows let go stay, and a packet of one that was on its way to the queue passes.
    @Test func flowsLetGoAreForgottenAfterTheirLinger() {
        let hello = Self.hello("video.allowed.test.")
        let end = 1 + UInt32(hello.count)
        let forgetting = ConnectionJudge(releasedLinger: 0)
        let keeping = ConnectionJudge()
        #expect(judge(forgetting, Self.segment(port: 19999, sequence: 1, Array(hello[0..<100]))) == .pending)
        for connections in [forgetting, keeping] {
            for port in 0..<600 {
                #expect(judge(connections, Self.segment(port: UInt16(20000 + port), sequence: 1, hello)) == .watch)
                #expect(
                    acknowledgement(connections, Self.reply(port: UInt16(20000 + port), acknowledging: end)) == .pass)
            }
        }
        // The last one let go, and the half-sent hello, which no finished flow pushed out.
        #expect(forgetting.gathering == 2)
        #expect(
            judge(forgetting, Self.segment(port: 19999, sequence: 101, Array(hello[100...])), standing: .pending)
                == .watch)
        // Forgotten: a late packet of one is refused as lost (the rules never send it here once
        // its mark is kept).
        #expect(isRefusal(judge(forgetting, Self.segment(port: 20000, sequence: end, [1]), standing: .watched)))
        #expect(keeping.gathering == ConnectionJudge.flowsPerUser)
        #expect(judge(keeping, Self.segment(port: 20599, sequence: end, [1]), standing: .watched) == .pass)
    }

    /// A child's table full of connections let go makes room from her own oldest, never from
    /// her sibling's (older still); a user no longer filtered takes her flows and their order
    /// along (`keep(owners:)`).
    @Test func aFullTableMakesRoomFromItsOwnersOwnFlowsLetGo() {
        let hello = Self.hello("video.allowed.test.")
        let end = 1 + UInt32(hello.count)
        let connections = ConnectionJudge()
        let sibling: UInt32 = 2002
        func finish(port: UInt16, owner: UInt32) -> Bool {
            let opening = Self.segment(port: port, sequence: 1, hello)
            let judged = connections.judge(
                try? DNSPacket(parsing: opening), bytes: opening, owner: owner, standing: nil, filter: Self.filter)
            return judged == .watch && acknowledgement(connections, Self.reply(port: port, acknowledging: end)) == .pass
        }
        #expect((0..<10).allSatisfy { finish(port: UInt16(30000 + $0), owner: sibling) })
        #expect(
            (0..<(ConnectionJudge.flowsPerUser + 10)).allSatisfy { finish(port: UInt16(20000 + $0), owner: Self.child) }
        )
        let counts = connections.state.withLock { ($0.flowsOf[Self.child], $0.flowsOf[sibling]) }
        #expect(counts.0 == ConnectionJudge.flowsPerUser && counts.1 == 10)
        // Her ten first went (a late packet of one is refused as lost); her eleventh and her
        // sibling's first stay (a late packet passes).
        #expect(isRefusal(judge(connections, Self.segment(port: 20009, sequence: end, [1]), standing: .watched)))
        #expect(judge(connections, Self.segment(port: 20010, sequence: end, [1]), standing: .watched) == .pass)
        let siblings = Self.segment(port: 30000, sequence: end, [1])
        #expect(
            connections.judge(
                try? DNSPacket(parsing: siblings), bytes: siblings, owner: sibling, standing: .watched,
                filter: Self.filter) == .pass)
        connections.keep(owners: [Self.child])
        let kept = connections.state.withLock { state in
            (state.released.owners.sorted(), state.flowsOf[sibling], state.flowsOf[Self.child])
        }
        #expect(kept.0 == [Self.child] && kept.1 == nil && kept.2 == ConnectionJudge.flowsPerUser)
    }

    @Test func learnedAddressesRefuseTheSYNAndNamelessOpenings() {
        let connections = ConnectionJudge()
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 300)], owner: Self.child, shielded: true,
            trusted: true)
        #expect(isRefusal(judge(connections, Self.segment(sequence: 99, flags: 0x02))))
        // Shared with an allowed name: the SYN passes with an empty opening pending (what the
        // server sends before she names anything is dropped), the name decides, no name is refused.
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 300)], owner: Self.child, shielded: false,
            trusted: true)
        #expect(judge(connections, Self.segment(sequence: 99, flags: 0x02)) == .pending)
        #expect(
            connections.serverPacket(ofPendingFlow: try? DNSPacket(parsing: Self.reply(acknowledging: 100))) == .drop)
        var synAck = Self.reply(acknowledging: 100, flags: 0x12)
        synAck.removeLast(synAck.count - 40)
        synAck[2] = 0
        synAck[3] = 40
        #expect(connections.serverPacket(ofPendingFlow: try? DNSPacket(parsing: synAck)) == .accept)
        #expect(
            judge(connections, Self.segment(sequence: 100, Self.hello("video.allowed.test.")), standing: .pending)
                == .watch)
        #expect(judge(connections, Self.segment(port: 40003, sequence: 1, Self.hello("video.allowed.test."))) == .watch)
        #expect(isRefusal(judge(connections, Self.segment(port: 40004, sequence: 1, Array("SSH-2.0-x\r\n".utf8)))))
        // Another owner's book is its own.
        let other = connections.judge(
            try? DNSPacket(parsing: Self.segment(sequence: 99, flags: 0x02)),
            bytes: Self.segment(sequence: 99, flags: 0x02),
            owner: 2002, standing: nil, filter: Self.filter)
        #expect(other == .accept)
    }

    /// Findings of the attack on the installed agent: one urgent byte before a hello, a hello
    /// begun on a Fast Open SYN, a connection passed before the web shields changed.
    @Test func urgentDataFastOpenAndEarlierVerdicts() {
        let connections = ConnectionJudge()
        let hello = Self.hello("video.blocked.test.")
        let urgent = judge(connections, Self.segment(sequence: 100, flags: 0x38, [0x21]))
        #expect(isRefusal(urgent))
        // Fast Open: the SYN carries the first 200 bytes, which start one after its sequence.
        #expect(
            judge(connections, Self.segment(port: 41000, sequence: 99, flags: 0x02, Array(hello[0..<200]))) == .pending)
        let rest = judge(
            connections, Self.segment(port: 41000, sequence: 300, Array(hello[200...])), standing: .pending)
        #expect(isRefusal(rest), "\(rest)")
        // Passed under earlier shields: refused, whatever it carries; UDP is judged afresh.
        #expect(
            isRefusal(judge(connections, Self.segment(port: 41001, sequence: 5, flags: 0x10), standing: .passedEarlier))
        )
    }

    /// The opening passed is watched until the server acknowledges it: a segment sent again must
    /// say what was judged (the decoy sent with TTL 1, then rewritten), and only the server's
    /// acknowledgement of the whole opening, no further than what was sent, lets the flow go.
    @Test func aPassedOpeningIsWatchedUntilTheServerAcknowledgesIt() {
        let connections = ConnectionJudge()
        let decoy = Self.hello("video.allowed.test.")
        let real = Self.hello("video.blocked.test.")
        #expect(decoy.count == real.count)
        #expect(judge(connections, Self.segment(sequence: 100, decoy)) == .watch)
        // The same bytes again, whole or in part: accepted, still watched.
        #expect(judge(connections, Self.segment(sequence: 100, decoy), standing: .watched) == .accept)
        #expect(judge(connections, Self.segment(sequence: 150, Array(decoy[50..<90])), standing: .watched) == .accept)
        // The rewritten pages' bytes: refused, and the flow is forgotten.
        let resent = judge(connections, Self.segment(sequence: 100, real), standing: .watched)
        #expect(isRefusal(resent), "\(resent)")
        #expect(connections.gathering == 0)

        // A second flow: a part-acknowledgement (a delayed ACK) keeps it watched; an
        // acknowledgement of bytes never sent is no acknowledgement; the whole opening's lets go.
        #expect(judge(connections, Self.segment(port: 40010, sequence: 100, decoy)) == .watch)
        let end = 100 + UInt32(decoy.count)
        #expect(acknowledgement(connections, Self.reply(port: 40010, acknowledging: 150)) == .accept)
        #expect(acknowledgement(connections, Self.reply(port: 40010, acknowledging: end + 500)) == .accept)
        // Data past the opening is accepted (and counts as sent).
        #expect(
            judge(connections, Self.segment(port: 40010, sequence: end, Array("more".utf8)), standing: .watched)
                == .accept)
        #expect(acknowledgement(connections, Self.reply(port: 40010, acknowledging: end + 4)) == .pass)
        // Packets already on their way before the flow's new mark was kept pass too.
        #expect(judge(connections, Self.segment(port: 40010, sequence: end + 4, [1]), standing: .watched) == .pass)
        #expect(acknowledgement(connections, Self.reply(port: 40010, acknowledging: end + 4)) == .pass)
        // A new connection on the same ports later is judged afresh.
        #expect(isRefusal(judge(connections, Self.segment(port: 40010, sequence: 9000, real))))
    }

    /// A flow let go (its acknowledgement read) whose mark was not yet kept when the web shields
    /// changed: its next packet, the server's or hers, refuses it (the attack on the
    /// acknowledgement log kept such a connection quiet across a new shield of its own site).
    @Test func aReleasedFlowUnderChangedShieldsIsRefused() {
        let connections = ConnectionJudge()
        let decoy = Self.hello("video.allowed.test.")
        let end = 100 + UInt32(decoy.count)
        for (port, fromServer) in [(UInt16(40030), true), (40031, false)] {
            #expect(judge(connections, Self.segment(port: port, sequence: 100, decoy)) == .watch)
            #expect(acknowledgement(connections, Self.reply(port: port, acknowledging: end)) == .pass)
            // Unchanged: still passed, whichever side sends next.
            #expect(acknowledgement(connections, Self.reply(port: port, acknowledging: end)) == .pass)
            // The shields change (the next generation): refused, and forgotten.
            let next =
                fromServer
                ? acknowledgement(connections, Self.reply(port: port, acknowledging: end), generation: 1)
                : judge(connections, Self.segment(port: port, sequence: end, [1]), standing: .watched, generation: 1)
            #expect(isRefusal(next), "\(fromServer ? "server" : "child"): \(next)")
            #expect(isRefusal(acknowledgement(connections, Self.reply(port: port, acknowledging: end), generation: 1)))
        }
    }

    @Test func aWatchedFlowWithoutItsStateOrUnderChangedShieldsIsRefused() {
        let connections = ConnectionJudge()
        let hello = Self.hello("video.allowed.test.")
        // Lost (a restart, an evicted flow): both the client's and the server's packets refuse it.
        #expect(isRefusal(judge(connections, Self.segment(port: 40020, sequence: 100, hello), standing: .watched)))
        #expect(isRefusal(acknowledgement(connections, Self.reply(port: 40020, acknowledging: 100))))
        // Judged under generation 0, acknowledged under 1: refused.
        #expect(judge(connections, Self.segment(port: 40021, sequence: 100, hello)) == .watch)
        let end = 100 + UInt32(hello.count)
        #expect(isRefusal(acknowledgement(connections, Self.reply(port: 40021, acknowledging: end), generation: 1)))
        // A server that goes on without acknowledging the opening is refused after a while.
        #expect(judge(connections, Self.segment(port: 40022, sequence: 100, hello)) == .watch)
        var decisions: [ConnectionJudge.Decision] = []
        for _ in 0...ConnectionJudge.unacknowledgingLimit {
            decisions.append(acknowledgement(connections, Self.reply(port: 40022, acknowledging: 100)))
        }
        #expect(decisions.dropLast().allSatisfy { $0 == .accept })
        #expect(decisions.last.map(isRefusal) == true)
        // Urgent data over the opening: the server would read other bytes. Refused.
        #expect(judge(connections, Self.segment(port: 40023, sequence: 100, hello)) == .watch)
        let urgent = judge(
            connections, Self.segment(port: 40023, sequence: 100, flags: 0x38, hello), standing: .watched)
        #expect(isRefusal(urgent))
    }

    /// What a resolver the child chose says restricts her only: it cannot make an address the
    /// system's resolver returned for a shielded name shared, nor push it out of the book.
    @Test func theChildsOwnResolverNeitherSharesNorEvictsWhatWasLearned() {
        let connections = ConnectionJudge()
        let site = DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 60)
        connections.learn([site], owner: Self.child, shielded: true, trusted: true)
        connections.learn([site], owner: Self.child, shielded: false, trusted: false)
        #expect(isRefusal(judge(connections, Self.segment(sequence: 99, flags: 0x02))), "made shared by her resolver")
        for round in 0..<300 {
            let flood = (0..<70).map { index in
                DNSMessage.AddressRecord(address: [10, 200, UInt8(round % 256), UInt8(index + 1)], ttl: 86_400)
            }
            connections.learn(flood, owner: Self.child, shielded: true, trusted: false)
        }
        #expect(isRefusal(judge(connections, Self.segment(sequence: 99, flags: 0x02))), "pushed out by her flood")
        // Her shielded answers do restrict her (the first she gave: her flood pushes none out).
        var syn = Self.segment(sequence: 99, flags: 0x02)
        syn.replaceSubrange(16..<20, with: [10, 200, 43, 5])
        #expect(isRefusal(judge(connections, syn)))
    }

    /// An address her own resolver gave for a shielded name, that the system's resolver returns
    /// for a name she may visit (a site a guardian let past the filter since, or a shared
    /// server), is shared: its connections are judged by the name they carry, in either order of
    /// learning. (Before, her resolver's word held it shielded: the site stayed refused after a
    /// grant until the answer's time ran out.)
    @Test func theSystemsResolverSharesAnAddressHerResolverShielded() {
        for trustedFirst in [false, true] {
            let connections = ConnectionJudge()
            let site = DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 60)
            let learnings = [(shielded: true, trusted: false), (shielded: false, trusted: true)]
            for learning in trustedFirst ? learnings.reversed() : learnings {
                connections.learn([site], owner: Self.child, shielded: learning.shielded, trusted: learning.trusted)
            }
            let syn = judge(connections, Self.segment(port: 40040, sequence: 99, flags: 0x02))
            #expect(syn == .pending, "trusted first: \(trustedFirst): \(syn)")
            let allowed = judge(
                connections, Self.segment(port: 40040, sequence: 100, Self.hello("video.allowed.test.")))
            #expect(allowed == .watch, "trusted first: \(trustedFirst): \(allowed)")
            let blocked = judge(
                connections, Self.segment(port: 40041, sequence: 100, Self.hello("video.blocked.test.")))
            #expect(isRefusal(blocked), "trusted first: \(trustedFirst): \(blocked)")
        }
        // Her resolver's word alone still refuses it.
        let connections = ConnectionJudge()
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 60)], owner: Self.child, shielded: true,
            trusted: false)
        #expect(isRefusal(judge(connections, Self.segment(sequence: 99, flags: 0x02))))
    }

    /// The kernel's set takes the time an address is added with, even a shorter one: the time is
    /// the longest any book keeps it, so a short answer (another of the site's names, or her own
    /// resolver's) does not cut what a long one taught (the fourth attack's finding 1).
    @Test func theKernelSetsTimeIsTheLongestKept() {
        let connections = ConnectionJudge()
        let address = LearnedAddresses.Address([10, 1, 1, 1])!
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 3600)], owner: Self.child, shielded: true,
            trusted: true)
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 0)], owner: Self.child, shielded: true,
            trusted: false)
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 5)], owner: 2002, shielded: true, trusted: true)
        let seconds = connections.state.withLock { ConnectionJudge.setSeconds(address, in: $0, now: connections.now) }
        #expect((3595...3601).contains(seconds), "\(seconds)")
        // Never learned: a second.
        let unknown = LearnedAddresses.Address([10, 9, 9, 9])!
        #expect(connections.state.withLock { ConnectionJudge.setSeconds(unknown, in: $0, now: connections.now) } == 1)
    }

    /// A site's address that only her own resolver gave (the system's knows nothing of it) is not
    /// pushed out by a flood of her aliases into the shielded name, 70 addresses each, for a day
    /// (found by the second attack on the installed agent).
    @Test func herFloodKeepsWhatHerResolverSaidFirst() {
        let connections = ConnectionJudge()
        connections.learn(
            [DNSMessage.AddressRecord(address: [10, 1, 1, 1], ttl: 60)], owner: Self.child, shielded: true,
            trusted: false)
        for round in 0..<70 {
            let flood = (0..<70).map { index in
                DNSMessage.AddressRecord(address: [10, 201, UInt8(round), UInt8(index + 1)], ttl: 86_400)
            }
            connections.learn(flood, owner: Self.child, shielded: true, trusted: false)
        }
        #expect(isRefusal(judge(connections, Self.segment(sequence: 99, flags: 0x02))))
    }

    /// A segment sent again over part of what was gathered and running past it: its overlap must
    /// say what was gathered (found reading the judge during the attack on the installed agent).
    @Test func aGatheringSegmentThatRewritesWhatCameBeforeIsRefused() {
        let connections = ConnectionJudge()
        let decoy = Self.hello("video.allowed.test.")
        let real = Self.hello("video.blocked.test.")
        let name = decoy.firstRange(of: Array("allowed".utf8))!.lowerBound
        #expect(judge(connections, Self.segment(port: 40030, sequence: 100, Array(decoy[0..<(name + 3)]))) == .pending)
        let rewritten = judge(
            connections, Self.segment(port: 40030, sequence: 100 + UInt32(name), Array(real[name...])),
            standing: .pending)
        #expect(isRefusal(rewritten), "\(rewritten)")
    }
}
