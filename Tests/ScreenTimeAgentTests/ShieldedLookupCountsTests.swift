import Foundation
import ScreenTimeCore
import Testing

@testable import ScreenTimeAgent

/// The shielded names met and not yet written (`DomainShield.EventBuffer`): counted only for the
/// users filtered now, and a revocation takes its user's counts with it, including one its judge
/// made before the revocation and counted after (found under load: the lookup came back once the
/// child was authorized again before the batch was written).
@Suite struct ShieldedLookupCountsTests {
    typealias Buffer = DomainShield.EventBuffer

    func key(_ uid: UInt32, _ domain: String) throws -> DomainShield.EventKey {
        DomainShield.EventKey(uid: uid, domain: try DomainName(domain), reason: .domain, category: nil)
    }

    @Test func aRevocationTakesItsUsersCountsAndNoLateOneComesBack() throws {
        var buffer = Buffer()
        let now = Date()
        // No one filtered: nothing is counted, and no batch starts.
        #expect(!buffer.count(try key(1001, "blocked.test"), at: now))
        #expect(buffer.counts.isEmpty)

        buffer.keep(only: [1001, 1002])
        #expect(buffer.count(try key(1001, "blocked.test"), at: now), "the first count starts a batch")
        #expect(!buffer.count(try key(1001, "blocked.test"), at: now.addingTimeInterval(1)))
        #expect(!buffer.count(try key(1002, "games.test"), at: now))
        #expect(buffer.counts[try key(1001, "blocked.test")]?.count == 2)

        // 1001 revoked: hers go, 1002's stay; one judged before and counted after is not kept.
        buffer.keep(only: [1002])
        #expect(buffer.counts.keys.map(\.uid) == [1002])
        #expect(!buffer.count(try key(1001, "blocked.test"), at: now.addingTimeInterval(2)))
        #expect(buffer.counts.keys.map(\.uid) == [1002])

        // Authorized again before the batch is written: what she met before does not come back;
        // what she meets now is hers.
        buffer.keep(only: [1001, 1002])
        #expect(buffer.counts[try key(1001, "blocked.test")] == nil)
        #expect(!buffer.count(try key(1001, "other.test"), at: now.addingTimeInterval(3)))
        #expect(Set(buffer.counts.keys.map(\.domain.ascii)) == ["games.test", "other.test"])
    }

    @Test func pastItsCapacityNewNamesAreDroppedAndCounted() throws {
        var buffer = Buffer()
        buffer.keep(only: [1001])
        let now = Date()
        for index in 0..<Buffer.capacity { _ = buffer.count(try key(1001, "n\(index).test"), at: now) }
        #expect(buffer.counts.count == Buffer.capacity && buffer.dropped == 0)
        _ = buffer.count(try key(1001, "one-more.test"), at: now)
        _ = buffer.count(try key(1001, "n0.test"), at: now)
        #expect(buffer.counts.count == Buffer.capacity && buffer.dropped == 1)
        #expect(buffer.counts[try key(1001, "n0.test")]?.count == 2)
    }
}
