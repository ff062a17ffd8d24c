import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

// Authorization.
extension PolicyService {
    func authorizationReply(_ account: UserAccount) throws -> AuthorizationReply {
        // A record made for another account that had this uid is not this account's.
        let record = try database.authorization(uid: account.uid).flatMap { $0.userName == account.name ? $0 : nil }
        return AuthorizationReply(
            user: summary(account), status: record?.status ?? .notDetermined, member: record?.member,
            showNamesToChild: record?.showNamesToChild ?? false, changedAt: record?.changedAt)
    }

    func authorize(_ request: AuthorizeRequest, caller: Caller) throws -> AuthorizationReply {
        let account = try target(request.user, caller: caller)
        switch request.member {
        case .individual:
            guard account.uid == caller.account.uid else {
                throw ScreenTimeIPCError(
                    .notAllowed, "only \(account.name) can authorize themself as an individual; a guardian uses --child"
                )
            }
        case .child:
            if let reason = adminReason(account) {
                throw ScreenTimeIPCError(
                    .invalidAccountType, "\(account.name) cannot be authorized as a child: \(reason)")
            }
            if !caller.isGuardian {
                guard account.uid == caller.account.uid else {
                    throw ScreenTimeIPCError(
                        .notAllowed,
                        "only a guardian, or \(account.name) with a guardian's password, can authorize \(account.name)")
                }
                try checkGuardian(request.guardian, asker: caller)
            }
        }
        return try edits.changes.withLock { _ in
            let existing = try database.authorization(uid: account.uid)
            if request.member == .individual, let existing, existing.status == .approved, existing.member == .child {
                throw ScreenTimeIPCError(
                    .authorizationConflict, "\(account.name) is authorized as a child; only a guardian can change that")
            }
            // The uid last held by another name: that account was deleted and this new one given
            // its uid (useradd reuses the lowest free one). Nothing of the old one's is the new
            // one's: its stores, usage and events go, as at a revoke.
            let anotherAccount = existing.map { $0.userName != account.name } ?? false
            let record = StateDatabase.Authorization(
                uid: account.uid, userName: account.name, member: request.member, status: .approved,
                showNamesToChild: request.showNamesToChild
                    ?? (anotherAccount ? nil : existing?.showNamesToChild) ?? false,
                changedAt: Date(), changedByUID: caller.account.uid)
            if anotherAccount { try database.forget(uid: account.uid) }
            try database.save(record)
            if anotherAccount, let existing {
                logger.notice(
                    "a new account on a deleted one's uid: the old account's settings and usage are removed",
                    metadata: ["user": "\(account.name)", "uid": "\(account.uid)", "was": "\(existing.userName)"])
            }
            enforce()
            logger.notice(
                "authorized",
                metadata: [
                    "user": "\(account.name)", "member": "\(request.member.rawValue)", "by": "\(caller.account.name)",
                ])
            return try authorizationReply(account)
        }
    }

    /// A guardian's approval given in a child's session: the named user must be a guardian and
    /// the password right (PAM), asked at the pace `GuardianApprovals` allows the asker.
    func checkGuardian(_ credentials: GuardianCredentials?, asker: Caller) throws {
        guard let credentials, !credentials.user.isEmpty else {
            throw ScreenTimeIPCError(
                .notAllowed, "a guardian must approve: give a guardian's user name and password")
        }
        guard !credentials.password.isEmpty else {
            throw ScreenTimeIPCError(.authorizationCanceled, "no password was given; nothing changed")
        }
        try approvals.approve(
            guardian: String(credentials.user.prefix(64)), password: credentials.password, asker: asker.account.uid,
            askerName: asker.account.name)
    }

    /// A guardian forgets a user the agent no longer enforces for: revoked, or whose account is
    /// gone or now another's (a uid given again). An authorization in force for the account that
    /// has it is revoked first, by name.
    func forget(_ request: ForgetRequest, _ context: RequestContext) throws -> ForgetReply {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian can forget a user") }
        let reference = request.user.trimmingSpaces()
        guard !reference.isEmpty, reference.utf8.count <= 256 else {
            throw ScreenTimeIPCError(.invalidArgument, "name the user to forget (a name or a uid)")
        }
        return try edits.changes.withLock { _ -> ForgetReply in
            let records = try database.authorizations()
            let current = try? users.user(reference)
            let record =
                UInt32(reference).flatMap { uid in records.first { $0.uid == uid } }
                ?? records.first { $0.userName == reference }
                ?? current.flatMap { account in
                    records.first { $0.uid == account.uid }
                }
            guard let record else {
                let uid = UInt32(reference) ?? current?.uid
                guard let uid else {
                    throw ScreenTimeIPCError(.unknownUser, "the agent knows no user '\(reference.prefix(64))'")
                }
                try database.forget(uid: uid)
                return ForgetReply(user: UserSummary(name: current?.name ?? reference, uid: uid), forgotten: false)
            }
            let holder = try? users.user(uid: record.uid)
            if record.status == .approved, holder?.name == record.userName {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "\(record.userName) is authorized; revoke it first (screentime revoke --user \(record.userName))")
            }
            try database.forget(uid: record.uid)
            logger.notice(
                "forgot a user",
                metadata: [
                    "user": "\(record.userName)", "uid": "\(record.uid)", "account": "\(holder?.name ?? "none")",
                    "by": "\(caller.account.name)",
                ])
            enforce()
            return ForgetReply(user: UserSummary(name: record.userName, uid: record.uid), forgotten: true)
        }
    }

    /// A guardian lifts a user's lockout after too many wrong guardian passwords.
    func unlock(_ request: UnlockRequest, _ context: RequestContext) throws -> UnlockReply {
        let caller = try caller(context)
        guard caller.isGuardian else { throw ScreenTimeIPCError(.notAllowed, "only a guardian can lift a lockout") }
        let account = try target(request.user, caller: caller)
        let had = try approvals.unlock(account.uid)
        if had {
            logger.notice(
                "password lockout lifted", metadata: ["user": "\(account.name)", "by": "\(caller.account.name)"])
        }
        let lifted = try edits.changes.withLock { _ in
            let lifted = try database.clearLoginLock(uid: account.uid, reason: .guardian)
            if lifted { publisher.publish() }
            return lifted
        }
        if lifted {
            logger.notice(
                "guardian's lock lifted", metadata: ["user": "\(account.name)", "by": "\(caller.account.name)"])
        }
        return UnlockReply(user: summary(account), hadFailures: had, lockLifted: lifted)
    }

    func revoke(_ reference: UserReference?, caller: Caller) throws -> AuthorizationReply {
        let account = try target(reference, caller: caller)
        return try edits.changes.withLock { _ in
            guard var record = try database.authorization(uid: account.uid), record.status == .approved else {
                throw ScreenTimeIPCError(
                    .notAuthorized, "\(account.name) is not authorized; there is nothing to revoke")
            }
            switch record.member {
            case .child where !caller.isGuardian:
                throw ScreenTimeIPCError(.notAllowed, "only a guardian can revoke a child's authorization")
            case .individual where !caller.isGuardian && caller.account.uid != account.uid:
                throw ScreenTimeIPCError(
                    .notAllowed, "only \(account.name) or a guardian can revoke this authorization")
            default:
                break
            }
            record.status = .denied
            record.changedAt = Date()
            record.changedByUID = caller.account.uid
            // Revoking removes every setting, as on Apple's devices.
            try database.save(record, clearingStoresAndEvents: true)
            enforce()
            logger.notice("revoked", metadata: ["user": "\(account.name)", "by": "\(caller.account.name)"])
            return try authorizationReply(account)
        }
    }
}
