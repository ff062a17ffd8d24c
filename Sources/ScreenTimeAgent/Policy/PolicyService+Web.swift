import Crypto
import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

// The dashboard's sessions. `screentime-web` has no authority of its own: it runs as its own
// account (`webUser`), which is nobody here, and each request it forwards carries the session a
// guardian signed in to, which is checked here and makes the request that guardian's. The agent
// keeps only each secret's SHA-256; the secret lives in the guardian's cookie.
extension PolicyService {
    /// How long a password sign-in lasts, and a paired device's session.
    static let webSignInLifetime: TimeInterval = 12 * 3_600
    static let pairedLifetime: TimeInterval = 90 * 86_400
    /// How long a pairing code may wait to be used.
    static let pairingLifetime: TimeInterval = 10 * 60
    /// A pairing code's letters: no 0/O, 1/I/L look-alikes.
    static let pairingAlphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")

    /// Whether a peer is the dashboard (its own account; never root).
    func isDashboard(_ peer: PeerCredentials) -> Bool {
        peer.uid != 0 && !configuration.webUser.isEmpty
            && (try? users.user(uid: peer.uid))?.name == configuration.webUser
    }

    /// The guardian a request made in a dashboard session acts as; nil for a request without one.
    /// A session from anyone but the dashboard, and one unknown, expired or ended, are refused;
    /// so is one whose guardian is no longer a guardian (and it is ended).
    func sessionCaller(_ context: RequestContext) throws -> Caller? {
        guard let secret = context.session else { return nil }
        guard isDashboard(context.peer) else {
            throw ScreenTimeIPCError(
                .notAllowed,
                "a request in a dashboard session is taken only from the dashboard's account (\(configuration.webUser))"
            )
        }
        guard let session = try database.useWebSession(hash: Self.hash(secret), now: now()) else {
            throw ScreenTimeIPCError(
                .notAuthorized, "the dashboard session is unknown, expired or ended: sign in again")
        }
        guard let account = try? users.user(uid: session.uid), isGuardian(account) else {
            _ = try database.endWebSessions(uid: session.uid, hashes: [session.secretHash])
            throw ScreenTimeIPCError(
                .notAuthorized, "the session's user is no longer a guardian; the session is ended")
        }
        return Caller(account: account, role: .guardian)
    }

    func webSignIn(_ request: WebSignInRequest, _ context: RequestContext) throws -> WebSignInReply {
        guard isDashboard(context.peer), context.session == nil else {
            throw ScreenTimeIPCError(
                .notAllowed, "only the dashboard (\(configuration.webUser)) signs in, and outside a session")
        }
        let device = String(
            request.device.unicodeScalars.filter { $0.value >= 32 && $0.value != 127 }.map(Character.init).prefix(64))
        let asker = context.peer.uid
        // The device's address as the dashboard saw it: its tries are throttled per device.
        let address = request.client.map { String($0.prefix(64)) }
        var guardian: UserAccount?
        var paired = false
        if let code = request.pairingCode {
            guard request.password == nil else {
                throw ScreenTimeIPCError(.invalidArgument, "give a password or a pairing code, not both")
            }
            let normalized = String(code.uppercased().filter { !$0.isWhitespace && $0 != "-" }.prefix(64))
            try approvals.throttled(
                asker: asker, askerName: configuration.webUser, subject: "a pairing code", device: address
            ) {
                guard normalized.count == 8, let uid = try database.takePairing(hash: Self.hash(normalized), now: now())
                else {
                    throw ScreenTimeIPCError(.authenticationFailed, "the pairing code is not right or has run out")
                }
                guardian = try? users.user(uid: uid)
            }
            paired = true
        } else {
            guard let user = request.user, !user.isEmpty, user.utf8.count <= 256, let password = request.password,
                password.utf8.count <= 1_024
            else {
                throw ScreenTimeIPCError(.invalidArgument, "give a user name and a password, or a pairing code")
            }
            try approvals.approve(
                guardian: user, password: password, asker: asker, askerName: configuration.webUser, device: address)
            guardian = try? users.user(user)
        }
        guard let guardian, isGuardian(guardian) else {
            throw ScreenTimeIPCError(.notAuthorized, "only a guardian may sign in to the dashboard")
        }
        let moment = now()
        var bytes = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = generator.next() }
        let token = Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
        let session = StateDatabase.WebSession(
            secretHash: Self.hash(token), uid: guardian.uid, device: device.isEmpty ? "a browser" : device,
            paired: paired, created: moment, lastUsed: moment,
            expires: moment.addingTimeInterval(paired ? Self.pairedLifetime : Self.webSignInLifetime))
        try database.saveWebSession(session, now: moment)
        logger.notice(
            "dashboard: signed in",
            metadata: ["user": "\(guardian.name)", "device": "\(session.device)", "paired": "\(paired)"])
        return WebSignInReply(user: summary(guardian), token: token, session: Self.report(session, name: guardian.name))
    }

    func webSignOut(_ request: WebSignOutRequest, _ context: RequestContext) throws -> WebSessionsReply {
        guard let secret = context.session, let caller = try sessionCaller(context) else {
            throw ScreenTimeIPCError(
                .invalidArgument, "sign-out ends the session the request is made in; there is none")
        }
        let ended = try database.endWebSessions(uid: caller.account.uid, hashes: [Self.hash(secret)])
        logger.notice("dashboard: signed out", metadata: ["user": "\(caller.account.name)"])
        return WebSessionsReply(sessions: try webSessions(of: caller.account), ended: ended)
    }

    func webSessions(_ request: WebSessionsRequest, _ context: RequestContext) throws -> WebSessionsReply {
        let caller = try caller(context)
        guard caller.isGuardian else {
            throw ScreenTimeIPCError(.notAllowed, "only guardians have dashboard sessions")
        }
        var ended = 0
        if let revoke = request.revoke {
            let mine = try database.webSessions(uid: caller.account.uid, now: now())
            let chosen = mine.filter { revoke == "all" || Self.publicID($0.secretHash) == revoke.lowercased() }
            guard !chosen.isEmpty else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "\(caller.account.name) has no dashboard session '\(revoke.prefix(40))'")
            }
            ended = try database.endWebSessions(uid: caller.account.uid, hashes: chosen.map(\.secretHash))
            logger.notice(
                "dashboard: sessions ended", metadata: ["user": "\(caller.account.name)", "ended": "\(ended)"])
        }
        return WebSessionsReply(sessions: try webSessions(of: caller.account), ended: ended)
    }

    func webPair(_ request: WebPairRequest, _ context: RequestContext) throws -> WebPairReply {
        let caller = try caller(context)
        guard caller.isGuardian else {
            throw ScreenTimeIPCError(.notAllowed, "only a guardian pairs a device with the dashboard")
        }
        var generator = SystemRandomNumberGenerator()
        let code = String((0..<8).map { _ in Self.pairingAlphabet.randomElement(using: &generator)! })
        let moment = now()
        let expires = moment.addingTimeInterval(Self.pairingLifetime)
        try database.savePairing(hash: Self.hash(code), uid: caller.account.uid, expires: expires, now: moment)
        logger.notice("dashboard: pairing code made", metadata: ["user": "\(caller.account.name)"])
        return WebPairReply(user: summary(caller.account), code: code, expires: expires)
    }

    private func webSessions(of account: UserAccount) throws -> [WebSessionReport] {
        try database.webSessions(uid: account.uid, now: now()).map { Self.report($0, name: account.name) }
    }

    static func report(_ session: StateDatabase.WebSession, name: String) -> WebSessionReport {
        WebSessionReport(
            id: publicID(session.secretHash), user: name, device: session.device, paired: session.paired,
            created: session.created, lastUsed: session.lastUsed, expires: session.expires)
    }

    /// A session's name in lists: the first 10 hex digits of its hash (not enough to be it).
    static func publicID(_ hash: String) -> String { String(hash.prefix(10)) }

    static func hash(_ secret: String) -> String {
        hexadecimal(SHA256.hash(data: Data(secret.utf8)))
    }
}
