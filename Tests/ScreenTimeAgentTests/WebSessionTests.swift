import Foundation
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

/// The dashboard's sessions, through the agent's own router (the test kit's, in this process):
/// `screentime-web` signs a guardian in and acts only in that guardian's session; no one else's
/// session, no expired, ended or made-up one, and no child gets anything through it.
@Suite struct WebSessionTests {
    let agent = try! InProcessAgent()

    var mum: UInt32 { agent.accounts.uid("mum") }
    var kid: UInt32 { agent.accounts.uid("kid") }
    var web: UInt32 { agent.accounts.uid("screentime-web") }

    func send<R: ControlRequest>(_ request: R, as uid: UInt32, session: String? = nil) throws -> R.Reply {
        let reply = agent.router.reply(
            to: try RequestEnvelope.encode(request, session: session),
            context: RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid)))
        return try ReplyCoding.decode(R.Reply.self, from: reply)
    }

    func refusal<R: ControlRequest>(_ request: R, as uid: UInt32, session: String? = nil) -> ScreenTimeIPCError? {
        do {
            _ = try send(request, as: uid, session: session)
            return nil
        } catch {
            return error as? ScreenTimeIPCError ?? ScreenTimeIPCError(.internalError, "\(error)")
        }
    }

    init() throws {
        _ = try send(AuthorizeRequest(user: "kid", member: .child), as: agent.accounts.uid("mum"))
    }

    @Test func theDashboardSignsAGuardianInAndActsOnlyInHerSession() throws {
        let signedIn = try send(WebSignInRequest(user: "mum", password: "right", device: "Mum's phone"), as: web)
        #expect(signedIn.user.name == "mum" && signedIn.token.count >= 43)
        #expect(!signedIn.session.paired && signedIn.session.device == "Mum's phone")
        let hours = signedIn.session.expires.timeIntervalSince(signedIn.session.created) / 3_600
        #expect(hours == 12)
        // In the session, the dashboard is mum: it locks the child and reads its status.
        let lock = try send(LockRequest(user: "kid"), as: web, session: signedIn.token)
        #expect(lock.user.name == "kid")
        #expect(try send(PingRequest(), as: web, session: signedIn.token).role == .guardian)
        #expect(try send(UnlockRequest(user: "kid"), as: web, session: signedIn.token).lockLifted == true)
        // Without a session the dashboard is nobody: it may not lock anyone.
        #expect(try send(PingRequest(), as: web).role == .user)
        #expect(refusal(LockRequest(user: "kid"), as: web)?.code == .notAllowed)
        // Her session from anyone but the dashboard's account is refused: the child, and mum.
        for uid in [kid, mum, 0] {
            let refused = refusal(LockRequest(user: "kid"), as: uid, session: signedIn.token)
            #expect(refused?.code == .notAllowed && refused?.message.contains("screentime-web") == true, "\(uid)")
        }
        #expect(try send(StatusRequest(user: "kid"), as: mum).loginLock == nil)
        // A made-up session, and one of the right shape, get nothing.
        for made in ["", "x", String(repeating: "A", count: 43), signedIn.token + "A"] {
            #expect(refusal(LockRequest(user: "kid"), as: web, session: made)?.code == .notAuthorized, "\(made)")
        }
    }

    @Test func noOneButAGuardianSignsInAndWrongPasswordsAreThrottled() throws {
        // Only from the dashboard's account.
        #expect(refusal(WebSignInRequest(user: "mum", password: "right", device: "x"), as: mum)?.code == .notAllowed)
        #expect(refusal(WebSignInRequest(user: "mum", password: "right", device: "x"), as: kid)?.code == .notAllowed)
        // The child, with what may be its own password: refused, as not a guardian.
        let child = refusal(WebSignInRequest(user: "kid", password: "right", device: "x"), as: web)
        #expect(child?.code == .authenticationFailed && child?.message.contains("not a guardian") == true)
        // The next try waits (1 s after one failure, then 2 s …), right password or not.
        let waiting = refusal(WebSignInRequest(user: "mum", password: "right", device: "x"), as: web)
        #expect(waiting?.code == .tooManyAttempts, "\(String(describing: waiting))")
        agent.clock.advance(1.5)
        #expect(
            refusal(WebSignInRequest(user: "mum", password: "wrong", device: "x"), as: web)?.code
                == .authenticationFailed)
        agent.clock.advance(2.5)
        #expect(try send(WebSignInRequest(user: "mum", password: "right", device: "x"), as: web).user.name == "mum")
        // Bad input is refused and makes no session.
        for bad in [
            WebSignInRequest(device: "x"), WebSignInRequest(user: "mum", device: "x"),
            WebSignInRequest(user: "mum", password: String(repeating: "p", count: 2_000), device: "x"),
            WebSignInRequest(user: "mum", password: "right", pairingCode: "ABCDEFGH", device: "x"),
        ] {
            #expect(refusal(bad, as: web)?.code == .invalidArgument, "\(bad)")
        }
        #expect(try send(WebSessionsRequest(), as: mum).sessions.count == 1)
    }

    @Test func aSessionEndsWhenSignedOutRevokedOrExpired() throws {
        let first = try send(WebSignInRequest(user: "mum", password: "right", device: "laptop"), as: web).token
        let second = try send(WebSignInRequest(user: "mum", password: "right", device: "tablet"), as: web).token
        let listed = try send(WebSessionsRequest(), as: mum).sessions
        #expect(Set(listed.map(\.device)) == ["laptop", "tablet"])
        #expect(listed.allSatisfy { $0.id.count == 10 })
        // Signed out: the first is gone; the second goes on.
        let out = try send(WebSignOutRequest(), as: web, session: first)
        #expect(out.ended == 1 && out.sessions.map(\.device) == ["tablet"])
        #expect(refusal(PingRequest(), as: web, session: first)?.code == .notAuthorized)
        #expect(try send(PingRequest(), as: web, session: second).role == .guardian)
        // Revoked by mum at the PC, by its id; an id that is not hers is refused.
        #expect(refusal(WebSessionsRequest(revoke: "0123456789"), as: mum)?.code == .invalidArgument)
        #expect(refusal(WebSessionsRequest(revoke: "all"), as: kid)?.code == .notAllowed)
        let id = try #require(try send(WebSessionsRequest(), as: mum).sessions.first?.id)
        #expect(try send(WebSessionsRequest(revoke: id), as: mum).ended == 1)
        #expect(refusal(PingRequest(), as: web, session: second)?.code == .notAuthorized)
        // Twelve hours later a password sign-in has run out.
        let third = try send(WebSignInRequest(user: "mum", password: "right", device: "phone"), as: web).token
        agent.clock.advance(12 * 3_600 + 1)
        #expect(refusal(PingRequest(), as: web, session: third)?.code == .notAuthorized)
        #expect(try send(WebSessionsRequest(), as: mum).sessions.isEmpty)
    }

    @Test func aPairingCodeSignsAPhoneInOnceAndLongLived() throws {
        #expect(refusal(WebPairRequest(), as: kid)?.code == .notAllowed)
        let pairing = try send(WebPairRequest(), as: mum)
        #expect(pairing.code.count == 8 && pairing.code.allSatisfy { "ABCDEFGHJKMNPQRSTUVWXYZ23456789".contains($0) })
        // Typed as a person would: lower case, a dash in the middle.
        let typed = pairing.code.prefix(4).lowercased() + "-" + pairing.code.suffix(4).lowercased()
        let phone = try send(WebSignInRequest(pairingCode: typed, device: "Mum's phone"), as: web)
        #expect(phone.user.name == "mum" && phone.session.paired)
        #expect(phone.session.expires.timeIntervalSince(phone.session.created) == 90 * 86_400)
        #expect(try send(PingRequest(), as: web, session: phone.token).role == .guardian)
        // Used once: the same code again is a failure (and waits are counted as for passwords).
        agent.clock.advance(1)
        #expect(
            refusal(WebSignInRequest(pairingCode: pairing.code, device: "x"), as: web)?.code == .authenticationFailed)
        // A code runs out after ten minutes.
        let late = try send(WebPairRequest(), as: mum)
        agent.clock.advance(601)
        #expect(refusal(WebSignInRequest(pairingCode: late.code, device: "x"), as: web)?.code == .authenticationFailed)
    }
}
