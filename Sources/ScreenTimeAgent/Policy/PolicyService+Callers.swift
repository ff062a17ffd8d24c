import FoundationEssentials
package import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

// Who is who.
extension PolicyService {
    /// How the control server counts a connecting process: guardians apart (they always find a
    /// slot), everyone else under their uid.
    @Sendable package func admission(_ peer: PeerCredentials) -> ControlServer.Admission {
        // A child's subordinate uids are the child: counted with it.
        let principal = publisher.current.owner(ofKernelUID: peer.uid) ?? peer.uid
        guard let account = try? users.user(uid: peer.uid) else { return .user(principal: principal) }
        return isGuardian(account) ? .guardian : .user(principal: principal)
    }

    /// How a user is authorized (child or individual), if they are.
    func member(of uid: UInt32) throws -> FamilyControlsMember? {
        guard let record = try database.authorization(uid: uid), record.status == .approved else { return nil }
        return record.member
    }

    /// Whether the peer is a guardian (root or the guardian group), for handlers of other services.
    func isGuardian(_ peer: PeerCredentials) -> Bool { (try? caller(peer))?.isGuardian ?? false }

    /// Who sent a request: the extension a channel was given to, else the connecting process.
    func caller(_ context: RequestContext) throws -> Caller {
        guard let authority = context.authority else {
            if let guardian = try sessionCaller(context) { return guardian }
            var caller = try caller(context.peer)
            caller.program = ClientProgram.of(pid: context.peer.pid)
            return caller
        }
        guard let account = try? users.user(uid: authority.uid),
            let record = try database.authorization(uid: authority.uid), record.status == .approved
        else {
            throw ScreenTimeIPCError(.notAuthorized, "the user this extension acts for is no longer authorized")
        }
        return Caller(account: account, role: .extension, authority: try ClientID(authority.client))
    }

    func caller(_ peer: PeerCredentials) throws -> Caller {
        let account: UserAccount
        do {
            account = try users.user(uid: peer.uid)
        } catch {
            throw ScreenTimeIPCError(.unknownUser, "uid \(peer.uid) is not in the user database")
        }
        if isGuardian(account) { return Caller(account: account, role: .guardian) }
        if let authorization = try database.authorization(uid: account.uid), authorization.status == .approved {
            return Caller(account: account, role: authorization.member == .child ? .child : .individual)
        }
        return Caller(account: account, role: .user)
    }

    func isGuardian(_ account: UserAccount) -> Bool { Self.isGuardian(account, users, configuration) }

    /// Root, and members of the guardian group.
    static func isGuardian(
        _ account: UserAccount, _ users: any Accounts, _ configuration: AgentConfiguration
    ) -> Bool {
        if account.uid == 0 { return true }
        guard let gid = users.groupID(named: configuration.guardianGroup) else { return false }
        return users.groupIDs(of: account).contains(gid)
    }

    /// Why an account may not be a child, nil if it may.
    func adminReason(_ account: UserAccount) -> String? {
        if account.uid == 0 { return "it is root" }
        if isGuardian(account) { return "it is a guardian (a member of \(configuration.guardianGroup))" }
        let groups = users.groupNames(of: account)
        if let admin = configuration.adminGroups.first(where: groups.contains) {
            return "it is a member of \(admin) and could undo every restriction"
        }
        return nil
    }

    func target(_ reference: UserReference?, caller: Caller) throws -> UserAccount {
        guard let reference, !reference.isEmpty else { return caller.account }
        do {
            return try users.user(reference)
        } catch {
            throw ScreenTimeIPCError(.unknownUser, "there is no user '\(reference.prefix(64))' on this computer")
        }
    }

    func summary(_ account: UserAccount) -> UserSummary {
        UserSummary(name: account.name, uid: account.uid)
    }
}
