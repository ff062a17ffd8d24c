import Foundation
import LinuxSupport
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

/// What the subordinate id watch asks of the publisher (`publish(unlessSubordinatesSame:)`): a
/// change of `/etc/subuid` or `/etc/subgid` that gives or takes an authorized user's ranges
/// publishes the policy again; one that touches only other users' lines publishes nothing (each
/// publication reads every child's applications again, and a machine whose accounts change often
/// made the agent read them every few seconds).
@Suite struct SubordinateIDsPublishTests {
    static let mum: UInt32 = 1000, kid: UInt32 = 1001

    @Test func onlyAChangeOfAnAuthorizedUsersRangesPublishes() throws {
        let agent = try InProcessAgent(subordinateUIDs: "kid:100000:65536\n")
        let reply = agent.router.reply(
            to: try RequestEnvelope.encode(AuthorizeRequest(user: "kid", member: .child)),
            context: RequestContext(peer: PeerCredentials(pid: 1, uid: Self.mum, gid: Self.mum)))
        _ = try ReplyCoding.decode(AuthorizeRequest.Reply.self, from: reply)
        let publisher = agent.publisher
        let first = publisher.publish()
        let kid = try #require(first.users[Self.kid])
        #expect(kid.uids.contains(100_500) && !kid.uids.contains(200_500))

        // Someone else's lines come and go: nothing is published.
        let subuid = agent.configuration.subordinateUIDs
        let subgid = agent.configuration.subordinateGIDs
        try "mum:300000:65536\nkid:100000:65536\nsib:400000:65536\n".write(
            toFile: subuid, atomically: true, encoding: .utf8)
        try "sib:400000:65536\n".write(toFile: subgid, atomically: true, encoding: .utf8)
        #expect(publisher.publish(unlessSubordinatesSame: true).generation == first.generation)
        #expect(publisher.current.generation == first.generation)

        // Hers change: published, with her new range hers.
        try "mum:300000:65536\nkid:100000:65536\nkid:200000:65536\n".write(
            toFile: subuid, atomically: true, encoding: .utf8)
        let second = publisher.publish(unlessSubordinatesSame: true)
        #expect(second.generation > first.generation)
        #expect(publisher.current.generation == second.generation)
        #expect(second.users[Self.kid]?.uids.contains(200_500) == true)

        // Her subordinate gids too.
        try "sib:400000:65536\nkid:500000:65536\n".write(toFile: subgid, atomically: true, encoding: .utf8)
        let third = publisher.publish(unlessSubordinatesSame: true)
        #expect(third.generation > second.generation)
        #expect(third.users[Self.kid]?.subordinateGIDs.contains(500_500) == true)

        // Taken away: published again, and the range is no longer hers.
        try "mum:300000:65536\nkid:100000:65536\n".write(toFile: subuid, atomically: true, encoding: .utf8)
        let fourth = publisher.publish(unlessSubordinatesSame: true)
        #expect(fourth.generation > third.generation)
        #expect(fourth.users[Self.kid]?.uids.contains(200_500) == false)

        // And without the condition (every other change of policy), always.
        #expect(publisher.publish().generation > fourth.generation)
    }
}
