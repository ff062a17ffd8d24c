/// The mounts of the agent's mount namespace (`/proc/self/mountinfo`), for marking the file
/// systems programs can run from.
public struct MountTable: Sendable {
    public struct Mount: Sendable, Hashable {
        public var mountPoint: String
        public var filesystem: String
        public var options: Set<String>
        /// The file system's own options (the superblock's, as the kernel lists them), in order.
        public var superOptions: [String] = []
    }

    public var mounts: [Mount]

    /// File systems that hold no programs (kernel interfaces and the like).
    static let virtual: Set<String> = [
        "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs", "pstore",
        "bpf", "configfs", "fusectl", "hugetlbfs", "binfmt_misc", "autofs", "efivarfs", "nsfs", "rpc_pipefs",
        "selinuxfs", "devtmpfs",
    ]

    public init(parsing text: String) {
        var mounts: [Mount] = []
        for line in text.split(separator: "\n") {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER-OPTIONS
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard fields.count >= 10, let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count,
                separator >= 6
            else { continue }
            mounts.append(
                Mount(
                    mountPoint: Self.unescape(fields[4]), filesystem: fields[separator + 1],
                    options: Set(fields[5].split(separator: ",").map(String.init)),
                    superOptions: separator + 3 < fields.count
                        ? fields[separator + 3].split(separator: ",").map(String.init) : []))
        }
        self.mounts = mounts
    }

    /// The agent's own mount table.
    public static func read() -> MountTable {
        let bytes = (try? Files.read("/proc/self/mountinfo", limit: 4 << 20)) ?? []
        return MountTable(parsing: String(decoding: bytes, as: UTF8.self))
    }

    /// One mount point per file system programs may run from: not `noexec`, not a kernel
    /// interface (a mark on a file system covers all its mounts).
    public var executableFilesystems: [String] {
        var seen: Set<String> = []
        return mounts.filter { mount in
            !mount.options.contains("noexec") && !Self.virtual.contains(mount.filesystem)
                && seen.insert(mount.mountPoint).inserted
        }.map(\.mountPoint)
    }

    /// Octal escapes (`\040` for a space) as the kernel writes them.
    private static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var bytes: [UInt8] = []
        let raw = Array(text.utf8)
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\"), index + 3 < raw.count,
                let value = UInt8(String(decoding: raw[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
