import FoundationEssentials
import LinuxSupport
import ScreenTimeCore

/// One authorized user's application rules, ready for the process watcher, the judges and the
/// exec gate.
struct UserApps: Sendable {
    var uid: UInt32
    var name: String
    var filter: ApplicationFilter
    /// `application.denyAppInstallation`: only programs a guardian installed run.
    var denyInstalls: Bool
    var installed: InstalledProgram
    /// The user's sessions are locked (downtime or the day's screen time, with `--no-login`):
    /// every process is held but the display servers and the shield windows.
    var locked = false

    /// Whether nothing about this user's processes needs a look.
    var isEmpty: Bool { filter.isEmpty && !denyInstalls && !locked }
}

/// A file the exec gate watches, named as the kernel names it to the gate.
/// A program known by content to be a shielded or blocked one (a copy), found at its exec.
struct LearnedProgram: Equatable, Sendable {
    var hash: String
    var file: FileIdentity?
}

struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64

    init(_ key: FileKey) {
        device = key.device
        inode = key.inode
    }
}

/// The app shield's rules in force, made from one policy snapshot and swapped whole: the watcher,
/// the judges and the gate read it without any lock on the process table.
struct AppPolicy: Sendable {
    var generation: UInt64
    var snapshot: PolicySnapshot
    var users: [UInt32: UserApps]
    /// The programs the gate marks, and what each is to each user it matters to.
    var marked: [FileIdentity: [UInt32: ApplicationFilter.Verdict]]
    var markedPaths: [String]

    static let empty = AppPolicy(generation: 0, snapshot: .empty, users: [:], marked: [:], markedPaths: [])

    /// The authorized user a kernel uid belongs to (its own, or its subordinate ones).
    func owner(ofKernelUID uid: UInt32) -> UInt32? { snapshot.owner(ofKernelUID: uid) }

    /// Whether any user's file systems need every exec asked about (`denyAppInstallation`).
    var deniesInstalls: Bool { users.values.contains(where: \.denyInstalls) }
}

/// The system's dynamic loaders, by file and by content: a copy or a renamed one is still the
/// loader (`cp /lib64/ld-linux-x86-64.so.2 ~/l`), and what it runs is judged as its program.
struct Loaders: Sendable {
    var files: Set<FileIdentity> = []
    var hashes: Set<String> = []

    /// Finds the loaders of this machine (before the agent drops its capabilities, or after:
    /// they are world-readable).
    static func find(hashes: ExecutableHashes) -> Loaders {
        var loaders = Loaders()
        var candidates: [String] = []
        for directory in ["/lib64", "/lib", "/usr/lib", "/lib32", "/libx32", "/usr/lib64"] {
            candidates += Self.names(in: directory).filter { $0.hasPrefix("ld-linux") || $0.hasPrefix("ld-musl") }
                .map { directory + "/" + $0 }
            for sub in Self.names(in: directory) where sub.hasSuffix("-linux-gnu") {
                candidates += Self.names(in: directory + "/" + sub).filter { $0.hasPrefix("ld-linux") }
                    .map { directory + "/" + sub + "/" + $0 }
            }
        }
        for candidate in Set(candidates) {
            guard let status = FileStatus.of(path: candidate), status.isRegular,
                let hash = try? hashes.sha256(of: candidate)
            else { continue }
            loaders.files.insert(FileIdentity(status.key))
            loaders.hashes.insert(hash)
        }
        return loaders
    }

    func isLoader(file: FileKey?, hash: String?) -> Bool {
        if let file, files.contains(FileIdentity(file)) { return true }
        if let hash, hashes.contains(hash) { return true }
        return false
    }

    private static func names(in directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }
}
