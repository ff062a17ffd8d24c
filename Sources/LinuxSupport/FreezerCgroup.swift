import Glibc

/// A root-owned cgroup v2 group that holds shielded processes frozen (`cgroup.freeze`), and gives
/// them back, thawed, to the group they came from.
///
/// A process's owner cannot thaw it: the group's files belong to root, SIGCONT does not wake a
/// frozen task, and moving it out needs write access to both groups' `cgroup.procs`. Frozen tasks
/// still die on SIGKILL (unlike the v1 freezer's). The hierarchy is given by its root so that the
/// hybrid layout's `/sys/fs/cgroup/unified` and a pure v2 `/sys/fs/cgroup` both work.
public struct FreezerCgroup: Sendable {
    /// The v2 hierarchy's mount point.
    public let hierarchy: String
    /// The group's path below it, like `screentime/frozen`.
    public let name: String

    public var path: String { hierarchy + "/" + name }

    /// The v2 hierarchy of this machine: `/sys/fs/cgroup` on a pure v2 system, the `unified`
    /// mount on a hybrid one; nil where there is none.
    public static func systemHierarchy() -> String? {
        for candidate in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        where Files.exists(candidate + "/cgroup.procs") && Files.exists(candidate + "/cgroup.subtree_control") {
            return candidate
        }
        return nil
    }

    /// Makes the group (and its parents), frozen from the start, so that a process moved in never
    /// runs there. Must be done while the agent may still write the hierarchy's root.
    public init(hierarchy: String, name: String) throws(SystemError) {
        self.hierarchy = hierarchy
        self.name = name
        var current = hierarchy
        for component in name.split(separator: "/") {
            current += "/" + component
            if !Files.exists(current) {
                _ = try systemCall("mkdir(\(current))") { mkdir(current, 0o755) }
            }
        }
        try write("1", to: path + "/cgroup.freeze")
    }

    /// Moves a process into the frozen group. Returns once the group reports itself frozen again.
    public func freeze(_ pid: Int32) throws(SystemError) {
        try write(String(pid), to: path + "/cgroup.procs")
        try waitUntilFrozen()
    }

    /// Moves a process back to the group it is given (where it came from), where it runs again.
    public func release(_ pid: Int32, to group: String) throws(SystemError) {
        try write(String(pid), to: hierarchy + group + "/cgroup.procs")
    }

    /// The processes in the group now.
    public func members() -> [Int32] {
        guard let bytes = try? Files.read(path + "/cgroup.procs") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
    }

    /// Whether the kernel reports every task of the group frozen.
    public var isFrozen: Bool {
        guard let bytes = try? Files.read(path + "/cgroup.events") else { return false }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").contains("frozen 1")
    }

    /// The group a process is in, as the unified line of `/proc/PID/cgroup` names it (`/user.slice/…`).
    public static func group(of pid: Int32, proc: String = "/proc") -> String? {
        guard let bytes = try? Files.read("\(proc)/\(pid)/cgroup") else { return nil }
        let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("0::") }
        return line.map { String($0.dropFirst(3)) }
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
