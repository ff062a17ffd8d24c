import Foundation
import LinuxSupport
import ScreenTimeAgent
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeWeb

/// The asks' feed behind the event streams: one look per session whatever the number of its
/// open pages, every page told of a change, all told when the session ends, and nothing looked
/// at once the last page is gone.
@Suite struct AskFeedTests {
    let agent = try! InProcessAgent()

    func send<R: ControlRequest>(_ request: R, as name: String, session: String? = nil) throws -> R.Reply {
        let uid = agent.accounts.uid(name)
        let reply = agent.router.reply(
            to: try RequestEnvelope.encode(request, session: session),
            context: ScreenTimeAgent.RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid)))
        return try ReplyCoding.decode(R.Reply.self, from: reply)
    }

    /// The next event that is not a "still here", within two seconds.
    func next(_ iterator: inout AsyncStream<AskFeed.Event>.Iterator) async -> AskFeed.Event? {
        while let event = await iterator.next() {
            if event != .stillHere { return event }
        }
        return nil
    }

    @Test func twoPagesOfASessionShareOneLookAndHearOfAnAskAndOfTheSignOut() async throws {
        _ = try send(AuthorizeRequest(user: "kid", member: .child), as: "mum")
        let token = try send(WebSignInRequest(user: "mum", password: "right", device: "phone"), as: "screentime-web")
            .token
        let connection = RouterConnection(agent: agent, uid: agent.accounts.uid("screentime-web"))
        let feed = AskFeed(agent: connection, period: .milliseconds(50), quietLooks: 1_000)
        let (first, firstEvents) = await feed.subscribe(token, shown: "")
        let (second, secondEvents) = await feed.subscribe(token, shown: "")
        #expect(await feed.sessionsWatched == 1)

        let ask = try send(AskRequest(webDomain: "example.org", minutes: 5), as: "kid")
        var one = firstEvents.makeAsyncIterator()
        var two = secondEvents.makeAsyncIterator()
        #expect(await next(&one) == .asks("\(ask.id)"))
        #expect(await next(&two) == .asks("\(ask.id)"))

        // Signed out elsewhere: both pages are told, and the feed lets the session go.
        _ = try send(WebSignOutRequest(), as: "screentime-web", session: token)
        #expect(await next(&one) == .signedOut)
        #expect(await next(&two) == .signedOut)
        #expect(await feed.sessionsWatched == 0)
        await feed.unsubscribe(token, first)
        await feed.unsubscribe(token, second)
    }

    @Test func theLookStopsWithTheLastPage() async throws {
        let token = try send(WebSignInRequest(user: "mum", password: "right", device: "phone"), as: "screentime-web")
            .token
        let feed = AskFeed(
            agent: RouterConnection(agent: agent, uid: agent.accounts.uid("screentime-web")), period: .milliseconds(50))
        let (first, _) = await feed.subscribe(token, shown: "")
        let (second, _) = await feed.subscribe(token, shown: "")
        await feed.unsubscribe(token, first)
        #expect(await feed.sessionsWatched == 1)
        await feed.unsubscribe(token, second)
        #expect(await feed.sessionsWatched == 0)
    }
}
