import FoundationEssentials

/// What is known of one process that can say which application it is, in the terms the index
/// matches (read from `/proc` by the agent; paths resolved and files hashed there).
public struct ProcessEvidence: Sendable, Hashable {
    /// The unified line of `/proc/PID/cgroup` (`0::/user.slice/…/app-gnome-org.gnome.Chess-12.scope`).
    public var cgroup: String?
    /// The Flatpak application ID of the process's sandbox.
    public var flatpakID: String?
    /// `GIO_LAUNCHED_DESKTOP_FILE`: the desktop file the process (or an ancestor) was launched from.
    public var launchedDesktopFile: String?
    /// The executable's resolved path, and the SHA-256 of its contents.
    public var executablePath: String?
    public var executableHash: String?
    /// For an interpreter: the script (or jar) it runs, resolved, and the SHA-256 of its contents.
    public var scriptPath: String?
    public var scriptHash: String?

    public init(
        cgroup: String? = nil, flatpakID: String? = nil, launchedDesktopFile: String? = nil,
        executablePath: String? = nil, executableHash: String? = nil, scriptPath: String? = nil,
        scriptHash: String? = nil
    ) {
        self.cgroup = cgroup
        self.flatpakID = flatpakID
        self.launchedDesktopFile = launchedDesktopFile
        self.executablePath = executablePath
        self.executableHash = executableHash
        self.scriptPath = scriptPath
        self.scriptHash = scriptHash
    }
}

/// One user's installed applications, indexed by what a process can show of itself: desktop-entry
/// IDs, the resolved path of each entry's program and the hash of its contents.
///
/// `identities(of:inherited:)` gives every application a process can be taken for, best evidence
/// first. A shield applies when any of them is shielded: evidence a child can forge (an
/// environment variable, a file in their own sandbox) can only add applications, never take the
/// real one away, and a copied or renamed binary still hashes to its entry's program.
public struct ApplicationIndex: Sendable {
    public struct Application: Sendable, Hashable {
        public var identity: ApplicationIdentity
        public var name: String
        /// The entry's `Categories=`, as category names.
        public var categories: Set<CategoryName>
        /// A `Type=Application` entry shown in menus: what category shields apply to (a
        /// `.all` category shield must not freeze a session's helpers).
        public var isListed: Bool
        /// The entry's `Icon=`.
        public var icon: String? = nil
    }

    /// The program of a desktop entry: its resolved path and, when it could be read, its hash.
    public struct Program: Sendable, Hashable {
        public var path: String
        public var sha256: String?
        /// Named by one of the user's own entries (a child's file): such entries give a program
        /// at most `maximumUserIdentities` applications, so that ten thousand entries naming
        /// `/bin/sh` neither slow every shell's judgement nor crowd out the system's.
        public var isUsers: Bool

        public init(path: String, sha256: String?, isUsers: Bool = false) {
            self.path = path
            self.sha256 = sha256
            self.isUsers = isUsers
        }
    }

    /// How many applications the user's own entries may give one program.
    public static let maximumUserIdentities = 8

    /// Programs that start other applications rather than being one (`flatpak run ID`).
    public static let launchers: Set<String> = [
        "flatpak", "snap", "gtk-launch", "xdg-open", "gio", "exo-open", "kioclient5",
    ]

    private var applications: [ApplicationIdentity: Application] = [:]
    private var byPath: [String: [ApplicationIdentity]] = [:]
    private var byHash: [String: [ApplicationIdentity]] = [:]
    /// Every indexed program (launchers and interpreters left out), by path.
    public private(set) var programsByPath: [String: Program] = [:]

    public init() {}

    /// Builds the index from desktop entries and the programs they were resolved to (none when
    /// no program could be found).
    ///
    /// An ID may come more than once: a user's own entry beside the system's. The first (the
    /// system's) defines the application — its name, categories, whether menus list it; later
    /// ones only add programs by which its processes are known. A child's copy with
    /// `Hidden=true`, `NoDisplay=true` or other categories changes nothing a shield relies on (an
    /// added category could even meet a policy's exception).
    public init(entries: [(entry: DesktopEntry, programs: [Program])]) {
        let ordered = entries.enumerated().sorted {
            ($0.element.entry.id, $0.offset) < ($1.element.entry.id, $1.offset)
        }
        // Kept beside the lists so that adding is not quadratic in a child's thousand entries.
        struct Pair: Hashable {
            var key: String
            var identity: ApplicationIdentity
        }
        var seenPaths: Set<Pair> = []
        var seenHashes: Set<Pair> = []
        var usersByPath: [String: Int] = [:]
        for (entry, programs) in ordered.map(\.element) {
            let identity = entry.identity
            if applications[identity] == nil {
                applications[identity] = Application(
                    identity: identity, name: entry.name,
                    // A service's category comes from the catalogue alone (ServiceDefinition).
                    categories: Set(
                        entry.categories.compactMap { try? CategoryName($0) }.filter {
                            !$0.name.hasPrefix(ServiceDefinition.categoryPrefix)
                        }),
                    isListed: entry.isListedApplication, icon: entry.icon)
            }
            for program in programs {
                let name = String(program.path.split(separator: "/").last ?? "")
                if Self.launchers.contains(name) || Interpreter.isInterpreter(name) { continue }
                guard !seenPaths.contains(Pair(key: program.path, identity: identity)) else { continue }
                if program.isUsers {
                    guard usersByPath[program.path, default: 0] < Self.maximumUserIdentities else { continue }
                    usersByPath[program.path, default: 0] += 1
                }
                seenPaths.insert(Pair(key: program.path, identity: identity))
                byPath[program.path, default: []].append(identity)
                if programsByPath[program.path]?.sha256 == nil { programsByPath[program.path] = program }
                if let hash = program.sha256, seenHashes.insert(Pair(key: hash, identity: identity)).inserted {
                    byHash[hash, default: []].append(identity)
                }
            }
        }
    }

    public var count: Int { applications.count }

    public func application(_ identity: ApplicationIdentity) -> Application? { applications[identity] }

    /// The hashes of every indexed program, to know which files are worth hashing.
    public var programHashes: Set<String> { Set(byHash.keys) }

    /// Every application the process can be taken for, best evidence first, without repeats:
    /// its systemd unit, its Flatpak sandbox, the desktop file it was launched from, entries whose
    /// program is its executable or script (by path, then by content), the executable and the
    /// script themselves (by content), then what its parent (or its program before an exec) was.
    public func identities(of evidence: ProcessEvidence, inherited: [ApplicationIdentity] = []) -> [ApplicationIdentity]
    {
        var found: [ApplicationIdentity] = []
        var seen: Set<ApplicationIdentity> = []
        func add(_ identity: ApplicationIdentity?) {
            if let identity, seen.insert(identity).inserted { found.append(identity) }
        }
        if let cgroup = evidence.cgroup { add(ApplicationIdentity.fromCgroup(cgroup)) }
        if let id = evidence.flatpakID { add(try? ApplicationIdentity.flatpak(id: id)) }
        if let file = evidence.launchedDesktopFile { add(Self.desktopIdentity(ofFile: file)) }
        for path in [evidence.scriptPath, evidence.executablePath].compactMap({ $0 }) {
            for identity in byPath[path] ?? [] { add(identity) }
        }
        for hash in [evidence.scriptHash, evidence.executableHash].compactMap({ $0 }) {
            for identity in byHash[hash] ?? [] { add(identity) }
        }
        if let hash = evidence.scriptHash { add(try? ApplicationIdentity.executable(sha256: hash)) }
        if let hash = evidence.executableHash { add(try? ApplicationIdentity.executable(sha256: hash)) }
        for identity in inherited { add(identity) }
        return found
    }

    /// The identity of a desktop file by its path (`…/applications/org.gnome.Chess.desktop`, or
    /// `…/applications/kde4/kate.desktop` → `kde4-kate`) or its bare name.
    static func desktopIdentity(ofFile file: String) -> ApplicationIdentity? {
        guard file.hasSuffix(".desktop") else { return nil }
        let relative: Substring
        if let range = file.ranges(of: "/applications/").last {
            relative = file[range.upperBound...]
        } else {
            relative = Substring(file.split(separator: "/").last ?? "")
        }
        return try? ApplicationIdentity.desktopEntry(id: DesktopEntry.id(forRelativePath: String(relative)))
    }
}

extension ApplicationIndex {
    /// The applications category shields apply to.
    var listedIdentities: [ApplicationIdentity] {
        applications.values.filter(\.isListed).map(\.identity)
    }
}
