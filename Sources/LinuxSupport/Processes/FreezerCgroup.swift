import Glibc

/// A root-owned cgroup that holds shielded processes frozen, and gives them back, thawed, to the
/// group they came from: a v2 group with `cgroup.freeze`, or, where the machine's v2 hierarchy
/// cannot be used, a group of the v1 freezer controller (`freezer.state`).
///
/// A process's owner cannot thaw it: the group's files belong to root, SIGCONT does not wake a
/// frozen task, and moving it out needs write access to the hierarchy's root `cgroup.procs`.
/// Frozen tasks of a v2 group die on SIGKILL; a v1 frozen task dies only once thawed (moved out).
/// The hierarchy is given by its root so that the hybrid layout's `/sys/fs/cgroup/unified` and a
/// pure v2 `/sys/fs/cgroup` both work.
public struct FreezerCgroup: Sendable {
    public enum Version: String, Sendable {
        /// The unified hierarchy's `cgroup.freeze`.
        case v2
        /// The legacy `freezer` controller's `freezer.state`.
        case v1
    }

    public let version: Version
    /// The hierarchy's mount point.
    public let hierarchy: String
    /// The group's path below it, like `screentime/frozen`.
    public let name: String

    public var path: String { hierarchy + "/" + name }

    /// The hierarchy of this machine for a version: for v2 `/sys/fs/cgroup` on a pure v2 system,
    /// the `unified` mount on a hybrid one; for v1 the freezer controller's mount. Nil where
    /// there is none.
    public static func systemHierarchy(_ version: Version = .v2) -> String? {
        switch version {
        case .v2:
            for candidate in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            where Files.exists(candidate + "/cgroup.procs") && Files.exists(candidate + "/cgroup.subtree_control") {
                return candidate
            }
        case .v1:
            // A v1 hierarchy has `tasks`; a v2 group that happens to be called "freezer" has not.
            let candidate = "/sys/fs/cgroup/freezer"
            if Files.exists(candidate + "/tasks") && Files.exists(candidate + "/cgroup.procs") { return candidate }
        }
        return nil
    }

    /// Makes the group (and its parents), frozen from the start, so that a process moved in never
    /// runs there. Must be done while the agent may still write the hierarchy's root.
    public init(_ version: Version = .v2, hierarchy: String, name: String) throws(SystemError) {
        self.version = version
        self.hierarchy = hierarchy
        self.name = name
        var current = hierarchy
        for component in name.split(separator: "/") {
            current += "/" + component
            if !Files.exists(current) {
                _ = try systemCall("mkdir(\(current))") { mkdir(current, 0o755) }
            }
        }
        switch version {
        case .v2: try write("1", to: path + "/cgroup.freeze")
        case .v1: try write("FROZEN", to: path + "/freezer.state")
        }
    }

    /// A group made earlier (by an earlier run, perhaps with another version), as it is; nil if
    /// it does not exist.
    public init?(existing version: Version, hierarchy: String, name: String) {
        guard Files.exists(hierarchy + "/" + name + "/cgroup.procs") else { return nil }
        self.version = version
        self.hierarchy = hierarchy
        self.name = name
    }

    /// Moves a process into the frozen group. Returns once the group reports itself frozen again,
    /// or at once without `waiting` (a process moved in while inside a system call freezes before
    /// it returns to its program either way).
    public func freeze(_ pid: Int32, waiting: Bool = true) throws(SystemError) {
        try write(String(pid), to: path + "/cgroup.procs")
        if waiting { try waitUntilFrozen() }
    }

    /// Moves a process back to the group it is given (where it came from), where it runs again.
    public func release(_ pid: Int32, to group: String) throws(SystemError) {
        try write(String(pid), to: hierarchy + group + "/cgroup.procs")
    }

    /// Moves a process back to the group it came from or, when that is gone (an empty scope is
    /// removed), to its nearest ancestor that takes it, up to the hierarchy's root. Returns the
    /// group it went to; throws the root's refusal if none took it.
    @discardableResult
    public func release(_ pid: Int32, toNearest origin: String) throws(SystemError) -> String {
        var group = origin == "/" ? "" : origin
        while true {
            do {
                try release(pid, to: group)
                return group.isEmpty ? "/" : group
            } catch {
                if group.isEmpty { throw error }
                group = group.split(separator: "/").dropLast().map { "/" + $0 }.joined()
            }
        }
    }

    /// The processes in the group now.
    public func members() -> [Int32] {
        guard let bytes = try? Files.read(path + "/cgroup.procs") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
    }

    /// Whether the kernel reports every task of the group frozen.
    public var isFrozen: Bool {
        switch version {
        case .v2:
            guard let bytes = try? Files.read(path + "/cgroup.events") else { return false }
            return String(decoding: bytes, as: UTF8.self).split(separator: "\n").contains("frozen 1")
        case .v1:
            // Reading the state is what moves it from FREEZING to FROZEN once every task is.
            guard let bytes = try? Files.read(path + "/freezer.state") else { return false }
            return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first == "FROZEN"
        }
    }

    /// The group a process is in, in this group's hierarchy (`/user.slice/…`, `/` at the root).
    public func group(of pid: Int32, proc: String = "/proc") -> String? {
        Self.group(of: pid, version: version, proc: proc)
    }

    /// The group a process is in, as `/proc/PID/cgroup` names it: the unified line (`0::`) for
    /// v2, the line of the freezer controller for v1. A process whose leader thread ended first
    /// (a zombie, its other threads running on) is where its live threads are: a move of the
    /// process moves them, not the leader.
    public static func group(of pid: Int32, version: Version = .v2, proc: String = "/proc") -> String? {
        let task = ProcessInspector(root: proc).leaderGone(pid) ?? "\(proc)/\(pid)"
        guard let record = KernelRecord.read(task + "/cgroup") else { return nil }
        let colon = UInt8(ascii: ":")
        for line in record.split(separator: UInt8(ascii: "\n")) {
            // hierarchy-ID:controllers:path, where the path may itself hold colons.
            let fields = line.split(separator: colon, maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            switch version {
            case .v2 where fields[0].elementsEqual("0".utf8) && fields[1].isEmpty:
                return String(decoding: fields[2], as: UTF8.self)
            case .v1
            where fields[1].split(separator: UInt8(ascii: ",")).contains(where: { $0.elementsEqual("freezer".utf8) }):
                return String(decoding: fields[2], as: UTF8.self)
            default:
                continue
            }
        }
        return nil
    }

    private func waitUntilFrozen() throws(SystemError) {
        // Freezing takes tens of microseconds; poll briefly rather than set up inotify per call.
        for _ in 0..<2000 {
            if isFrozen { return }
            usleep(50)
        }
        throw SystemError(.badFile, "\(path) did not report itself frozen")
    }

    private func write(_ text: String, to file: String) throws(SystemError) {
        let fd = try systemCall("open(\(file))") { open(file, O_WRONLY | O_CLOEXEC) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        _ = try systemCall("write(\(file), \(text))") { Glibc.write(fd, bytes, bytes.count) }
    }
}
