import Foundation
import Testing

@testable import LinuxSupport

@Suite struct RunQueueWaitTests {
    @Test func schedstatGivesWhatRanAndWhatWaited() {
        let figures = RunQueueWait.parseSchedstat(Array("294591457 192592 9\n".utf8))
        #expect(figures?.ran == 294_591_457)
        #expect(figures?.waited == 192_592)
    }

    @Test(arguments: ["", "1 2\n", "1 2 3 4\n", "1 -2 3\n", "1 2x 3\n", "1 99999999999999999999 3\n", "a b c\n"])
    func anythingElseIsNoSchedstat(_ text: String) {
        #expect(RunQueueWait.parseSchedstat(Array(text.utf8)) == nil)
    }

    /// A thread's name is its own to choose: the state is the field after the last `)`.
    @Test func theStateFollowsTheLastParenthesis() {
        #expect(RunQueueWait.parseState(Array("42 (Xvfb) S 1 42 42 0 -1".utf8)) == UInt8(ascii: "S"))
        #expect(RunQueueWait.parseState(Array("42 (a) R (b) S 1 42".utf8)) == UInt8(ascii: "S"))
        #expect(RunQueueWait.parseState(Array("42 (x)".utf8)) == nil)
        #expect(RunQueueWait.parseState(Array("42 x S".utf8)) == nil)
    }

    @Test func aThreadThatWorksRunsAndIsReadyAThreadThatIsGoneIsNothing() {
        let scheduler = RunQueueWait(threads: [(getpid(), getpid()), (getpid(), 0), (getpid(), Int32.max)])
        let before = scheduler.sample()
        var sum = 0.0
        for value in 0..<3_000_000 { sum += sqrt(Double(value)) }
        let after = scheduler.sample()
        #expect(sum > 0)
        // The main thread: this test runs on another, so only its figures are known to grow
        // or stay; the other two read as nothing.
        #expect(after[0].ran >= before[0].ran)
        #expect(after[1] == RunQueueWait.Thread(ran: .zero, waited: .zero, ready: false))
        #expect(after[2] == RunQueueWait.Thread(ran: .zero, waited: .zero, ready: false))
    }

    @Test func aThreadKeptFromTheProcessorIsStarvingOneThatRanIsNot() {
        let quarter = Duration.milliseconds(250)
        let was = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(2), ready: true)
        let kept = RunQueueWait.Thread(ran: .seconds(1) + .milliseconds(10), waited: .seconds(2), ready: true)
        let worked = RunQueueWait.Thread(ran: .seconds(1) + .milliseconds(600), waited: .seconds(2), ready: true)
        let asleep = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(2), ready: false)
        #expect(RunQueueWait.starving(from: [was], to: [kept], over: quarter * 4))
        #expect(!RunQueueWait.starving(from: [was], to: [worked], over: quarter * 4))
        #expect(!RunQueueWait.starving(from: [was], to: [asleep], over: quarter * 4))
        let waited = RunQueueWait.Thread(ran: .seconds(1), waited: .seconds(3), ready: false)
        #expect(RunQueueWait.waited(from: [was, was], to: [waited, asleep]) == .seconds(1))
    }
}
