/// Apple's `application.denyAppInstallation` on Linux: with it, a child runs only programs a
/// guardian installed. A program counts as installed when the child could not have put it there
/// or changed it: the file is not the child's (not owned by one of its uids, not writable by it)
/// and no directory above it is the child's or writable by it (else it could have swapped the
/// file). Scripts the child wrote still run through installed interpreters: an interpreter is the
/// program, and the line is drawn there (see docs/threat-model.md).
public struct InstalledProgram: Sendable {
    /// What `lstat` says of a file or directory, as far as this rule needs it.
    public struct Status: Sendable, Hashable {
        public var owner: UInt32
        public var group: UInt32
        /// The permission bits (`st_mode & 0o7777`).
        public var permissions: UInt32

        public init(owner: UInt32, group: UInt32, permissions: UInt32) {
            self.owner = owner
            self.group = group
            self.permissions = permissions
        }
    }

    /// The child: every uid that is the child (its own and its subordinate ones) and its groups.
    public struct Person: Sendable, Hashable {
        public var uids: UIDRanges
        /// Its groups and its subordinate gids.
        public var groups: UIDRanges

        public init(uids: UIDRanges, groups: UIDRanges) {
            self.uids = uids
            self.groups = groups
        }
    }

    public let person: Person

    public init(person: Person) { self.person = person }

    /// Whether the person may change a file or directory of this status: it owns it, or it is
    /// writable by a group of its, or by everyone.
    public func mayChange(_ status: Status) -> Bool {
        if person.uids.contains(status.owner) { return true }
        if status.permissions & 0o002 != 0 { return true }
        if status.permissions & 0o020 != 0, person.groups.contains(status.group) { return true }
        return false
    }

    /// Why a program is not installed, nil when it is: `file` is the program's status, `parents`
    /// the statuses of every directory above it, nearest first, up to the root. A program whose
    /// file or a directory could not be read is not installed (`parents` nil).
    public func refusal(file: Status?, parents: [Status]?) -> String? {
        guard let file else { return "the program cannot be read" }
        if person.uids.contains(file.owner) { return "the program is the child's own file" }
        if mayChange(file) { return "the program is writable by the child" }
        guard let parents else { return "a directory above the program cannot be read" }
        if parents.contains(where: mayChange) { return "the program is in a directory the child can write" }
        return nil
    }
}
