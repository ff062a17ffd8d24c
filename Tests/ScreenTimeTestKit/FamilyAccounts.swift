public import LinuxSupport

/// The accounts of a family PC, as a table: what the agent's services are given instead of the
/// system's. `mum` is a guardian (in `st-guardians`), `admin` is in `sudo`, the others are
/// people with no role (`kid` is the one tests authorize); `screentime-web` is the dashboard's
/// account.
public struct FamilyAccounts: Accounts {
    public static let guardianGroupName = "st-guardians"
    public static let guardianGroup: UInt32 = 900
    public static let sudo: UInt32 = 27
    static let groupNames: [UInt32: String] = [guardianGroup: guardianGroupName, sudo: "sudo"]

    public let accounts: [UserAccount]
    let extraGroups: [String: Set<UInt32>]

    /// `mum` at `mumUID` (1000; the uid running the tests when they call the agent through its
    /// socket, which knows callers by their uid), root at 0 (unless mum is), and kid, sib, indie,
    /// guest, admin and screentime-web at uids of their own.
    public init(mumUID: UInt32 = 1000) {
        let others = ["kid", "sib", "indie", "guest", "admin", "screentime-web"]
        let base: UInt32 = (1001...1006).contains(mumUID) ? 3001 : 1001
        var accounts = [UserAccount(name: "mum", uid: mumUID, gid: mumUID, home: "/home/mum")]
        if mumUID != 0 { accounts.insert(UserAccount(name: "root", uid: 0, gid: 0, home: "/root"), at: 0) }
        for (offset, name) in others.enumerated() {
            let uid = base + UInt32(offset)
            accounts.append(UserAccount(name: name, uid: uid, gid: uid, home: "/nonexistent/\(name)"))
        }
        self.accounts = accounts
        extraGroups = ["mum": [Self.guardianGroup], "admin": [Self.sudo]]
    }

    public func user(_ reference: String) throws(SystemError) -> UserAccount {
        if let uid = UInt32(reference) { return try user(uid: uid) }
        guard let account = accounts.first(where: { $0.name == reference }) else {
            throw SystemError(.noSuchUser, "no user '\(reference)'")
        }
        return account
    }

    public func user(uid: UInt32) throws(SystemError) -> UserAccount {
        guard let account = accounts.first(where: { $0.uid == uid }) else {
            throw SystemError(.noSuchUser, "no uid \(uid)")
        }
        return account
    }

    public func groupID(named name: String) -> UInt32? { Self.groupNames.first { $0.value == name }?.key }

    public func groupIDs(of account: UserAccount) -> Set<UInt32> {
        Set([account.gid]).union(extraGroups[account.name] ?? [])
    }

    public func groupNames(of account: UserAccount) -> Set<String> {
        Set(groupIDs(of: account).compactMap { Self.groupNames[$0] })
    }

    /// The uid of an account in the table.
    public func uid(_ name: String) -> UInt32 { accounts.first { $0.name == name }?.uid ?? UInt32.max }
}
