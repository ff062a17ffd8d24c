import Foundation
import LinuxSupport
import ScreenTimeAgent
import ScreenTimeIPC
import ScreenTimeTestKit
import Testing

/// Wrong sign-ins through the dashboard wait and lock out per device: a child who guesses from
/// its own device locks out that device, not the guardian's phone; a dashboard that claims ever
/// new devices still gets no more than `dashboardLockoutAfter` guesses in a row.
@Suite struct SignInThrottleTests {
    let agent = try! InProcessAgent()
    var mum: UInt32 { agent.accounts.uid("mum") }
    var web: UInt32 { agent.accounts.uid("screentime-web") }

    func send<R: ControlRequest>(_ request: R, as uid: UInt32, session: String? = nil) throws -> R.Reply {
        let reply = agent.router.reply(
            to: try RequestEnvelope.encode(request, session: session),
            context: RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid)))
        return try ReplyCoding.decode(R.Reply.self, from: reply)
    }

    /// A sign-in from `client` through the dashboard's account; the error's code and message, or
    /// nil when it signed in.
    func signIn(_ password: String, from client: String, user: String = "mum") -> ScreenTimeIPCError? {
        do {
            _ = try send(
                WebSignInRequest(user: user, password: password, device: "phone", client: client), as: web)
            return nil
        } catch let error as ScreenTimeIPCError {
            return error
        } catch {
            return ScreenTimeIPCError(.internalError, "\(error)")
        }
    }

    @Test func aChildsGuessesLockOutItsDeviceAndNotTheGuardiansPhone() throws {
        let child = "192.168.1.31"
        for attempt in 1...GuardianApprovals.lockoutAfter {
            #expect(signIn("guess \(attempt)", from: child)?.code == .authenticationFailed, "try \(attempt)")
            // At once again: it waits, and says how long.
            let waiting = signIn("guess", from: child)
            #expect(waiting?.code == .tooManyAttempts, "\(String(describing: waiting))")
            agent.clock.advance(GuardianApprovals.longestWait + 1)
        }
        let locked = signIn("right", from: child)
        #expect(locked?.code == .tooManyAttempts && locked?.message.contains("this device") == true)
        // The same device written as IPv6 is the same device.
        #expect(signIn("right", from: "::ffff:192.168.1.31")?.code == .tooManyAttempts)
        // The guardian's phone signs in at once, and its success forgets nothing of the child's.
        #expect(signIn("right", from: "192.168.1.20") == nil)
        #expect(signIn("right", from: child)?.code == .tooManyAttempts)
        // A guardian lifts it.
        _ = try send(UnlockRequest(user: "screentime-web"), as: mum)
        #expect(signIn("right", from: child) == nil)
    }

    @Test func thisPCsLoopbackAddressesAreOneDevice() throws {
        #expect(signIn("wrong", from: "127.0.0.1")?.code == .authenticationFailed)
        for other in ["127.0.0.2", "127.9.9.9", "::1"] {
            #expect(signIn("right", from: other)?.code == .tooManyAttempts, "\(other)")
        }
        #expect(signIn("right", from: "10.0.0.5") == nil)
    }

    @Test func aDashboardThatMakesUpDevicesGetsNoMoreThanItsOwnLimit() throws {
        // A paired phone, signed in before.
        let pairing = try send(WebPairRequest(), as: mum)
        let paired = try send(WebSignInRequest(pairingCode: pairing.code, device: "phone", client: "10.0.0.9"), as: web)
        for index in 0..<GuardianApprovals.dashboardLockoutAfter {
            let address = "10.1.\(index / 200).\(index % 200 + 1)"
            #expect(signIn("guess", from: address)?.code == .authenticationFailed, "\(address)")
        }
        let refused = signIn("right", from: "10.2.0.1")
        #expect(refused?.code == .tooManyAttempts && refused?.message.contains("paired phones still work") == true)
        // The paired phone's session still works.
        #expect(try send(StatusRequest(user: "mum"), as: web, session: paired.token).authorization.user.name == "mum")
    }

    /// PAM refuses a guardian's wrong password after its fail delay (about 2 s); a name that is
    /// no guardian's (a child's, or no one's) is refused no sooner, so the time does not tell
    /// who the guardians are.
    @Test(arguments: ["kid", "nobody-here"])
    func aNameThatIsNoGuardiansIsRefusedNoSoonerThanPAMRefuses(user: String) async throws {
        let started = Date()
        // On a thread of its own, as the agent answers: the wait would hold one of the test
        // runner's few threads.
        let refused = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: signIn("right", from: "10.3.0.\(user.count)", user: user)) }
                .start()
        }
        #expect(refused?.code == .authenticationFailed)
        #expect(Date().timeIntervalSince(started) >= 2.0)
    }
}
