import Foundation
import Testing

@testable import ScreenTimeAgent

/// The questions remembered for their replies: a UDP reply answers its question once, and only
/// unanswered questions count against a user's bound.
@Suite struct OutstandingQueriesTests {
    private func key(_ id: UInt16, port: UInt16 = 40000) -> OutstandingQueries.Key {
        OutstandingQueries.Key(
            client: [127, 0, 0, 1], clientPort: port, server: [127, 0, 0, 53], serverPort: 53, id: id)
    }

    @Test func aReplyAnswersItsQuestionOnce() {
        let queries = OutstandingQueries(perOwner: 4, total: 8)
        #expect(queries.remember(key(1), owner: 1001))
        #expect(queries.owner(of: key(1), answered: true) == 1001)
        // A second reply to it (a forged one, late) finds nothing: dropped.
        #expect(queries.owner(of: key(1), answered: true) == nil)
        #expect(queries.owner(of: key(2), answered: true) == nil)
        #expect(queries.count == 0)
    }

    /// A TCP reply leaves its question for the server's copies of a lost segment.
    @Test func aTCPReplyLeavesItsQuestionUntilItExpires() {
        let queries = OutstandingQueries(perOwner: 4, total: 8)
        let now = Date()
        queries.remember(key(7), owner: 1001, now: now)
        #expect(queries.owner(of: key(7), answered: false, now: now) == 1001)
        #expect(queries.owner(of: key(7), answered: false, now: now.addingTimeInterval(1)) == 1001)
        #expect(queries.owner(of: key(7), answered: false, now: now.addingTimeInterval(16)) == nil)
    }

    /// The bound is on questions not answered: a user asking fast, answered as fast, is never
    /// refused; one whose questions go unanswered gives up her oldest for her newest, never
    /// another user's.
    @Test func onlyUnansweredQuestionsCountAgainstTheBound() {
        let queries = OutstandingQueries(perOwner: 2, total: 4)
        let now = Date()
        for id in UInt16(0)..<10_000 {
            #expect(queries.remember(key(id), owner: 1001, now: now))
            #expect(queries.owner(of: key(id), answered: true, now: now) == 1001)
        }
        #expect(queries.remember(key(1), owner: 1001, now: now))
        #expect(queries.remember(key(2), owner: 1001, now: now))
        #expect(queries.remember(key(3), owner: 1001, now: now))
        // Her oldest went: its reply is dropped; the two newest are hers.
        #expect(queries.owner(of: key(1), answered: false, now: now) == nil)
        #expect(queries.owner(of: key(2), answered: false, now: now) == 1001)
        #expect(queries.owner(of: key(3), answered: false, now: now) == 1001)
        // Another user is not held back by this one (the total is 4), and when all places are
        // taken each gives up only her own.
        #expect(queries.remember(key(3, port: 40001), owner: 1002, now: now))
        #expect(queries.remember(key(4, port: 40001), owner: 1002, now: now))
        #expect(queries.remember(key(5, port: 40001), owner: 1002, now: now))
        #expect(queries.owner(of: key(3, port: 40001), answered: false, now: now) == nil)
        #expect(queries.owner(of: key(2), answered: false, now: now) == 1001)
        #expect(queries.count == 4)
        // A user with none to give up is refused while all are taken.
        #expect(!queries.remember(key(6, port: 40002), owner: 1003, now: now))
        // Expired, they no longer count.
        #expect(queries.remember(key(3), owner: 1001, now: now.addingTimeInterval(16)))
        #expect(queries.count == 1)
    }

    /// The stall found under dnsperf: thousands of her questions never answered here (their
    /// replies passed in the kernel) filled her bound, and then the replies to her new questions,
    /// which did come here, found nothing and were dropped. Her newest are always remembered.
    @Test func unansweredQuestionsNeverCrowdOutHerNewOnes() {
        let queries = OutstandingQueries()
        let now = Date()
        for id in UInt16(0)..<10_000 { queries.remember(key(id), owner: 1001, now: now) }
        #expect(queries.count == 4096)
        for id in UInt16(10_000)..<10_100 {
            #expect(queries.remember(key(id), owner: 1001, now: now))
            #expect(queries.owner(of: key(id), answered: true, now: now) == 1001)
        }
    }
}
