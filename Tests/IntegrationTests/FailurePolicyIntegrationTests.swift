import Foundation
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestThreads
import Testing

/// What a service's failure means (`Agent.failurePolicy`), tried on the real agent: a DNS queue it
/// cannot read is tried again while everything else goes on, and a subordinate id watch that
/// cannot be made does not stop the agent.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: netfilter queues, users, the agent"))
struct FailurePolicyIntegrationTests {
    private func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    @Test func aDNSQueueHeldByAnotherIsTriedAgainWhileAppShieldsHold() throws {
        let (number, lock) = try AgentWorld.claimQueue()
        defer { close(lock) }
        // Another process (here, this test) holds the queue the agent is configured with.
        var holder: NetfilterQueue? = try NetfilterQueue(number: UInt16(number)) { _ in .accept }
        let world = try AgentWorld(queue: number)
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()

        let before = try #require(try world.status(of: world.child).domainShield)
        #expect(!before.filtering)
        #expect(before.problems.contains { $0.contains("the DNS queue cannot be read") }, "\(before.problems)")
        // The agent is up and its app shield holds meanwhile.
        let pid = try world.launch(as: world.child, world.counter, [try world.childDirectory() + "/count"])
        #expect(eventually(5) { world.isFrozen(pid) })
        // The rules are in place: the child's DNS goes to a queue the agent does not read.
        let uid = try #require(getpwnam(world.child)?.pointee.pw_uid)
        let rules = try world.firewallRules()
        #expect(rules.contains { $0.contains("--uid-owner \(uid)") })
        #expect(rules.contains { $0.contains("NFQUEUE --queue-num \(number)") })
        #expect(!rules.contains { $0.contains("queue-bypass") })

        _ = holder  // held until here
        holder = nil  // released
        #expect(try eventually(10) { try world.status(of: world.child).domainShield?.filtering == true })
        let after = try #require(try world.status(of: world.child).domainShield)
        #expect(after.problems.isEmpty, "\(after.problems)")
        #expect(world.agentPID != nil, "the agent never stopped")
    }

    @Test func subordinateIDsThatCannotBeWatchedDoNotStopTheAgent() throws {
        let world = try AgentWorld(configuration: [
            "subordinateUIDs": "\"/nonexistent-directory/subuid\"",
            "subordinateGIDs": "\"/nonexistent-directory/subgid\"",
        ])
        defer { world.tearDown() }
        try world.authorizeChildAndShieldCounter()
        Thread.sleep(forTimeInterval: 1)
        #expect(world.agentPID != nil)
        #expect(try world.cli(as: world.guardian, "status", "--user", world.child).status == 0)
        let pid = try world.launch(as: world.child, world.counter, [try world.childDirectory() + "/count"])
        #expect(eventually(5) { world.isFrozen(pid) })
    }
}
