import Foundation
import LinuxSupport
import ScreenTimeCore
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// The agent's own lookups of the shielded names children ask, with a stand-in for the servers:
/// fair between children, bounded for each.
@Suite struct ShadowLookupsTests {
    static func name(_ text: String) -> DNSName { DNSName(try! DomainName(text)) }

    /// One child's flood of invented shielded names takes a few places, her own; her sister's
    /// shielded name is still taken, and asked after at most one more of the flood's (a helper's
    /// attack on the installed agent: a flood of hers took every place, and her sister's site,
    /// reached by its address, was never learned).
    @Test func oneChildsFloodNeitherKeepsOutNorHoldsBackAnothers() throws {
        let path = NSTemporaryDirectory() + "shadow-resolv-\(UInt32.random(in: 0...UInt32.max)).conf"
        try "nameserver 10.0.0.1\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let gate = DispatchSemaphore(value: 0)
        let asked = Mutex<[String]>([])
        let judge = ConnectionJudge()
        let shadows = ShadowLookups(judge: judge, resolvers: SystemResolvers(path: path)) { name, server, port in
            let first = asked.withLock { asked in
                asked.append(name.description)
                return asked.count == 1
            }
            // The first lookup hangs until the flood and the sister's name are in.
            if first { gate.wait() }
            #expect(server == [10, 0, 0, 1] && port == 53)
            return name.description == "x.allowed.test."
                ? [DNSMessage.AddressRecord(address: [10, 9, 9, 9], ttl: 60)] : []
        }
        var taken = 0
        for index in 0..<1000
        where shadows.lookUp(
            Self.name("n\(index).blocked.test"), owner: 1001, resolver: [10, 0, 0, 1], port: 53)
        {
            taken += 1
        }
        #expect(taken >= ShadowLookups.waitingPerChild && taken <= ShadowLookups.waitingPerChild + 1, "\(taken)")
        #expect(shadows.lookUp(Self.name("x.allowed.test"), owner: 1002, resolver: [10, 0, 0, 1], port: 53))
        // Asked lately: not again.
        #expect(!shadows.lookUp(Self.name("X.allowed.test"), owner: 1002, resolver: [10, 0, 0, 1], port: 53))
        gate.signal()
        let deadline = Date().addingTimeInterval(5)
        while asked.withLock({ $0.count }) < taken + 1, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let order = asked.withLock { $0 }
        #expect(order.count == taken + 1, "\(order)")
        let position = order.firstIndex(of: "x.allowed.test.")
        #expect(position.map { $0 <= 2 } == true, "\(order)")
        // What was learned is the sister's, shielded.
        let address = LearnedAddresses.Address([10, 9, 9, 9])!
        let standing = judge.state.withLock { $0.standing(of: address, owner: 1002, now: judge.now) }
        #expect(standing == .shielded)
    }
}
