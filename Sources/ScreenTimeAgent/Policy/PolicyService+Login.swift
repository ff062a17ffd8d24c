import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Logins: what the PAM module asks and tells (`pam_screentime.so`, as root), the locks downtime and
/// the day's screen time put on a child's sessions with `--no-login`, and a guardian's grant of
/// more screen time, which lifts a lock for its minutes.
extension PolicyService {
    func login(_ request: LoginRequest, _ context: RequestContext) throws -> LoginReply {
        // Only root's hooks: a child telling of sessions, or asking about others, is refused.
        guard context.peer.uid == 0 else {
            throw ScreenTimeIPCError(.notAllowed, "only the PAM module (root) tells of logins")
        }
        guard !request.user.isEmpty, request.user.utf8.count <= 256, !request.user.contains("\0") else {
            throw ScreenTimeIPCError(.invalidArgument, "a login names its user (PAM_USER)")
        }
        // Someone the agent does not know is not its business: their login goes on.
        guard let account = try? users.user(request.user), UInt32(request.user) == nil || account.name == request.user,
            let user = publisher.current.users[account.uid]
        else { return LoginReply(allowed: true) }
        // The session's leader is the program that logs the user in (login, sshd's session
        // process, su, the display manager's worker): the PAM module runs inside it.
        let leader: Int32? = context.peer.pid
        switch request.phase {
        case .account, .open:
            if user.isLocked, let lock = user.loginLock {
                logger.notice(
                    "login refused",
                    metadata: [
                        "user": "\(account.name)", "why": "\(lock.reason)", "service": "\(request.service)",
                        "tty": "\(request.tty)",
                    ])
                return LoginReply(
                    allowed: false, message: LoginText.lockMessage(lock, user: account.name), until: lock.until)
            }
            if request.phase == .open, let leader, leader > 1 {
                loginSessions?.open(uid: account.uid, request: request, leader: leader)
            }
        case .close:
            if let leader { loginSessions?.close(leader: leader) }
        }
        return LoginReply(allowed: true)
    }

    /// A guardian gives a child more screen time now: a lock (downtime's or the day's screen
    /// time's) is lifted for the minutes, logins go through, and the sessions thaw.
    func screenTimeGrant(_ request: ScreenTimeGrantRequest, _ context: RequestContext) throws -> TimeRequestReport {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian grants screen time") }
        let account = try target(request.user, caller: caller)
        guard let authorization = try database.authorization(uid: account.uid), authorization.status == .approved
        else {
            throw ScreenTimeIPCError(.notAuthorized, "\(account.name) is not authorized")
        }
        let length = try Self.checkedLength(minutes: request.minutes, length: request.length, asked: request.minutes)
        let now = Date()
        if let lock = publisher.current.users[account.uid]?.loginLock, lock.reason == LoginLock.guardian {
            throw ScreenTimeIPCError(
                .invalidArgument,
                "\(account.name) is locked by a guardian; no grant lifts that ('screentime lock --user \(account.name) --off' does)"
            )
        }
        let until = try grantEnd(
            length, uid: account.uid, kind: .screenTime, token: "screen-time", excluding: nil, now: now)
        let minutes = Self.minutes(from: now, to: until)
        let granted = try edits.changes.withLock { _ -> StateDatabase.TimeRequest in
            var record = try database.addTimeRequest(
                StateDatabase.TimeRequest(
                    id: nil, uid: account.uid, kind: .screenTime, token: "screen-time", name: "screen time",
                    minutes: minutes, note: nil, state: .pending, createdAt: now))
            record.state = .granted
            record.until = until
            record.decidedAt = now
            record.decidedBy = caller.account.name
            try database.decide(
                id: record.id ?? 0, state: .granted, minutes: minutes, until: until, by: caller.account.name, at: now)
            publisher.publish()
            return record
        }
        logger.notice(
            "more screen time granted",
            metadata: [
                "user": "\(account.name)", "length": "\(length.description)", "until": "\(until)",
                "by": "\(caller.account.name)",
            ])
        return Self.report(granted, user: account.name, names: true, now: now)
    }
}
