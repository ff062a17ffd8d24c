import Foundation
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// Who may do what, through the agent's own router and policy service, without root: a table of
/// accounts instead of the system's, a fake password check, a manual clock, a state database in a
/// temporary directory, no shields attached. Each row is a request, each column a caller.
@Suite struct AccessMatrixTests {
    /// The agent's policy service and router on a fresh state (the test kit's), the kid's
    /// subordinate uids listed.
    struct Agent {
        let agent: InProcessAgent
        var router: ControlRouter { agent.router }
        var clock: ManualClock { agent.clock }

        init() throws {
            agent = try InProcessAgent(subordinateUIDs: "kid:100000:65536\n")
        }

        /// The reply's error code, or nil when it succeeded.
        func send<R: ControlRequest>(_ request: R, as uid: UInt32) -> ScreenTimeIPCError.Code? {
            let bytes = try! RequestEnvelope.encode(request)
            let reply = router.reply(
                to: bytes, context: RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid)))
            do {
                _ = try ReplyCoding.decode(R.Reply.self, from: reply)
                return nil
            } catch {
                return error.code
            }
        }
    }

    static let root: UInt32 = 0, mum: UInt32 = 1000, kid: UInt32 = 1001, sib: UInt32 = 1002, indie: UInt32 = 1003
    static let guest: UInt32 = 1004, admin: UInt32 = 1005, kidsSubordinate: UInt32 = 100_500

    @Test func whoMayDoWhat() throws {
        let agent = try Agent()
        // Set-up by the guardian: kid is a child, indie restricts themself.
        #expect(agent.send(AuthorizeRequest(user: "kid", member: .child), as: Self.mum) == nil)
        #expect(agent.send(AuthorizeRequest(member: .individual), as: Self.indie) == nil)

        let ok: ScreenTimeIPCError.Code? = nil
        let refused = ScreenTimeIPCError.Code.notAllowed
        let school = StoreTarget(user: "kid", store: "school")
        let shield = ShieldRequest(target: school, webDomains: ["example.com"])
        // Request, then the expected code for: root, mum (guardian group), kid (child), sib (not
        // authorized), indie (individual), guest, kid's subordinate uid (counted with kid for
        // connection slots, but no account: refused as unknown). Authorizing again is no conflict.
        let rows: [(String, (UInt32) -> ScreenTimeIPCError.Code?, [ScreenTimeIPCError.Code?])] = [
            (
                "status of kid", { agent.send(StatusRequest(user: "kid"), as: $0) },
                [ok, ok, ok, refused, refused, refused, .unknownUser]
            ),
            ("own status", { agent.send(StatusRequest(), as: $0) }, [ok, ok, ok, ok, ok, ok, .unknownUser]),
            ("shield kid", { agent.send(shield, as: $0) }, [ok, ok, refused, refused, refused, refused, .unknownUser]),
            (
                "clear kid", { agent.send(ClearRequest(school), as: $0) },
                [ok, ok, refused, refused, refused, refused, .unknownUser]
            ),
            (
                "deny installs", { agent.send(DenyInstallsRequest(target: school, deny: true), as: $0) },
                [ok, ok, refused, refused, refused, refused, .unknownUser]
            ),
            (
                "unlock kid", { agent.send(UnlockRequest(user: "kid"), as: $0) },
                [ok, ok, refused, refused, refused, refused, .unknownUser]
            ),
            (
                "token of a domain", { agent.send(TokenRequest(kind: .domain, identity: "example.com"), as: $0) },
                [ok, ok, refused, refused, ok, refused, .unknownUser]
            ),
            (
                "launcher check", { agent.send(LauncherCheckRequest(), as: $0) },
                [.internalError, .internalError, refused, refused, refused, refused, refused]
            ),
            (
                "authorize sib as a child", { agent.send(AuthorizeRequest(user: "sib", member: .child), as: $0) },
                [ok, ok, refused, refused, refused, refused, .unknownUser]
            ),
        ]
        let callers = [Self.root, Self.mum, Self.kid, Self.sib, Self.indie, Self.guest, Self.kidsSubordinate]
        for (name, send, expected) in rows {
            let got = callers.map(send)
            #expect(got == expected, "\(name): \(got.map { $0?.rawValue ?? "ok" })")
        }
        // Revoking: the child may not, the individual may revoke themself only, a guardian may.
        #expect(agent.send(RevokeRequest(user: "kid"), as: Self.kid) == refused)
        #expect(agent.send(RevokeRequest(user: "kid"), as: Self.indie) == refused)
        #expect(agent.send(RevokeRequest(), as: Self.indie) == nil)
        #expect(agent.send(RevokeRequest(user: "kid"), as: Self.mum) == nil)
    }

    @Test func adminsAreNeverChildrenAndGuessesAreThrottledOnTheManualClock() throws {
        let agent = try Agent()
        #expect(agent.send(AuthorizeRequest(user: "admin", member: .child), as: Self.mum) == .invalidAccountType)
        #expect(agent.send(AuthorizeRequest(user: "mum", member: .child), as: Self.root) == .invalidAccountType)
        // In the child's session: a guardian's password approves; a wrong one is refused, and the
        // next try waits (the clock does not move).
        let wrong = AuthorizeRequest(member: .child, guardian: GuardianCredentials(user: "mum", password: "nope"))
        let right = AuthorizeRequest(member: .child, guardian: GuardianCredentials(user: "mum", password: "right"))
        #expect(agent.send(wrong, as: Self.sib) == .authenticationFailed)
        #expect(agent.send(right, as: Self.sib) == .tooManyAttempts)
        agent.clock.advance(2)
        #expect(agent.send(right, as: Self.sib) == nil)
        // Someone not a guardian cannot approve, even with the right password for them.
        let fake = AuthorizeRequest(member: .child, guardian: GuardianCredentials(user: "guest", password: "right"))
        #expect(agent.send(fake, as: Self.kid) == .authenticationFailed)
    }

    @Test func theRouterAnswersEveryRegisteredKindAndRefusesOthers() throws {
        let agent = try Agent()
        #expect(agent.router.kinds.contains("launcher.check") && agent.router.kinds.contains("denyInstalls"))
        let unknown = Array(#"{"version":1,"kind":"reboot","body":{}}"#.utf8)
        let reply = agent.router.reply(
            to: unknown, context: RequestContext(peer: PeerCredentials(pid: 1, uid: 0, gid: 0)))
        #expect(throws: ScreenTimeIPCError.self) { _ = try ReplyCoding.decode(PingReply.self, from: reply) }
        do {
            _ = try ReplyCoding.decode(PingReply.self, from: reply)
        } catch {
            #expect(error.code == .unknownRequest)
            #expect(error.message.contains("reboot"))
        }
        let garbage = agent.router.reply(
            to: Array("][".utf8), context: RequestContext(peer: PeerCredentials(pid: 1, uid: 0, gid: 0)))
        do {
            _ = try ReplyCoding.decode(PingReply.self, from: garbage)
            Issue.record("garbage was answered")
        } catch {
            #expect(error.code == .malformedRequest)
        }
    }
}
