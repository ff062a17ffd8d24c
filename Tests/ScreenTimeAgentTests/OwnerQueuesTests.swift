import Testing

@testable import ScreenTimeAgent

/// The per-owner queues behind the questions remembered and the flows let go: what is due leaves
/// from each owner's front, in order, and one owner's entries never stand in for another's.
@Suite struct OwnerQueuesTests {
    @Test func whatIsDueLeavesFromEachOwnersFrontInOrder() {
        var queues = OwnerQueues<String>()
        queues.append("a1", owner: 1, due: 10)
        queues.append("b1", owner: 2, due: 11)
        queues.append("a2", owner: 1, due: 12)
        queues.append("b2", owner: 2, due: 20)
        #expect(queues.takeDue(now: 9.5).isEmpty)
        let taken = queues.takeDue(now: 12)
        #expect(taken.filter { $0.owner == 1 }.map(\.entry.key) == ["a1", "a2"])
        #expect(taken.filter { $0.owner == 2 }.map(\.entry.key) == ["b1"])
        // An owner with nothing left has no queue; the other keeps its own.
        #expect(queues.owners == [2])
        #expect(queues.count(of: 1) == 0 && queues.count(of: 2) == 1)
        #expect(queues.first(of: 2)?.key == "b2")
        #expect(queues.takeDue(now: 19.9).isEmpty)
        #expect(queues.takeDue(now: 20).map(\.entry.key) == ["b2"])
        #expect(queues.owners.isEmpty)
        // Appended after a sweep found nothing due: still found when due.
        queues.append("c1", owner: 3, due: 30)
        #expect(queues.takeDue(now: 25).isEmpty)
        queues.append("a3", owner: 1, due: 26)
        #expect(queues.takeDue(now: 26).map(\.entry.key) == ["a3"])
    }

    @Test func anOwnersFrontMovesOnAndHerEntriesCanBeReplaced() {
        var queues = OwnerQueues<Int>()
        for index in 0..<300 { queues.append(index, owner: 7, due: Double(index)) }
        queues.append(-1, owner: 8, due: 0)
        for _ in 0..<200 { queues.removeFirst(of: 7) }
        // Compacted behind the scenes: what is left is the same.
        #expect(queues.count(of: 7) == 100)
        #expect(queues.first(of: 7)?.key == 200)
        #expect(Array(queues.entries(of: 7).map(\.key)) == Array(200..<300))
        queues.replace(7, with: queues.entries(of: 7).filter { $0.key % 2 == 0 })
        #expect(queues.count(of: 7) == 50 && queues.first(of: 7)?.key == 200)
        #expect(queues.takeDue(now: 203).map(\.entry.key).sorted() == [-1, 200, 202])
        queues.replace(7, with: [])
        #expect(queues.owners.isEmpty)
        queues.removeFirst(of: 9)
        #expect(queues.first(of: 9) == nil)
    }
}
