import CLinuxShim
import Glibc

/// A user account from the system's user database (NSS: /etc/passwd, LDAP, …).
public struct UserAccount: Hashable, Sendable {
    public var name: String
    public var uid: UInt32
    public var gid: UInt32
    public var home: String

    public init(name: String, uid: UInt32, gid: UInt32, home: String) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.home = home
    }
}

/// Who the users and groups are: the system's (`UserDirectory`), or a table in tests without
/// root, where the accounts a test needs cannot be made.
public protocol Accounts: Sendable {
    /// A user by name, or by uid written as digits.
    func user(_ reference: String) throws(SystemError) -> UserAccount
    func user(uid: UInt32) throws(SystemError) -> UserAccount
    /// The gid of a group, nil if there is no such group.
    func groupID(named name: String) -> UInt32?
    /// Every group the user belongs to (primary group included).
    func groupIDs(of account: UserAccount) -> Set<UInt32>
    /// The names of the user's groups.
    func groupNames(of account: UserAccount) -> Set<String>
}

/// Looks up users and groups through NSS, the same way `id` does.
public struct UserDirectory: Accounts {
    public init() {}

    /// A user by name, or by uid written as digits.
    public func user(_ reference: String) throws(SystemError) -> UserAccount {
        if let uid = UInt32(reference) { return try user(uid: uid) }
        return try lookUp("user '\(reference)'") { entry, buffer, size, result in
            getpwnam_r(reference, entry, buffer, size, result)
        }
    }

    public func user(uid: UInt32) throws(SystemError) -> UserAccount {
        try lookUp("uid \(uid)") { entry, buffer, size, result in getpwuid_r(uid, entry, buffer, size, result) }
    }

    /// The gid of a group, nil if there is no such group.
    public func groupID(named name: String) -> UInt32? {
        Self.growing { entry, buffer, size, result in getgrnam_r(name, entry, buffer, size, result) }?.gid
    }

    /// The name of a group, nil if there is no such group.
    public func groupName(gid: UInt32) -> String? {
        Self.growing { entry, buffer, size, result in getgrgid_r(gid, entry, buffer, size, result) }?.name
    }

    /// A group lookup with a buffer that grows while NSS says it is too small (a group with many
    /// members needs more than any fixed size).
    private static func growing(
        _ call: (
            UnsafeMutablePointer<group>, UnsafeMutablePointer<CChar>, Int,
            UnsafeMutablePointer<UnsafeMutablePointer<group>?>
        ) -> Int32
    ) -> (gid: UInt32, name: String)? {
        var size = 16_384
        while size <= 64 << 20 {
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            var buffer = [CChar](repeating: 0, count: size)
            let status = buffer.withUnsafeMutableBufferPointer { call(&entry, $0.baseAddress!, $0.count, &result) }
            if status == ERANGE {
                size *= 4
                continue
            }
            guard status == 0, let found = result else { return nil }
            return (found.pointee.gr_gid, String(cString: found.pointee.gr_name))
        }
        return nil
    }

    /// Every group the user belongs to in the database (primary group included).
    public func groupIDs(of account: UserAccount) -> Set<UInt32> {
        var count: Int32 = 64
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            var found = count
            if screentime_group_list(account.name, account.gid, &groups, &found) == 0 {
                return Set(groups.prefix(Int(found)))
            }
            guard found > count, found < 65_536 else { return Set(groups.prefix(Int(count))) }
            count = found
        }
    }

    /// The names of the user's groups.
    public func groupNames(of account: UserAccount) -> Set<String> {
        Set(groupIDs(of: account).compactMap(groupName(gid:)))
    }

    private func lookUp(
        _ what: String,
        _ call: (
            UnsafeMutablePointer<passwd>, UnsafeMutablePointer<CChar>, Int,
            UnsafeMutablePointer<UnsafeMutablePointer<passwd>?>
        ) -> Int32
    ) throws(SystemError) -> UserAccount {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = 16_384
        var buffer = [CChar](repeating: 0, count: size)
        var status = buffer.withUnsafeMutableBufferPointer { call(&entry, $0.baseAddress!, $0.count, &result) }
        // NSS says when the buffer is too small (an entry from LDAP can be long): it grows.
        while status == ERANGE, size < 64 << 20 {
            size *= 4
            buffer = [CChar](repeating: 0, count: size)
            status = buffer.withUnsafeMutableBufferPointer { call(&entry, $0.baseAddress!, $0.count, &result) }
        }
        guard status == 0 else { throw SystemError.call("getpwnam_r(\(what))", status) }
        guard let found = result else { throw SystemError(.noSuchUser, "there is no \(what) on this computer") }
        return UserAccount(
            name: String(cString: found.pointee.pw_name), uid: found.pointee.pw_uid, gid: found.pointee.pw_gid,
            home: String(cString: found.pointee.pw_dir))
    }
}
