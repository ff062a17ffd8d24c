import Glibc
public import ScreenTimeCore

/// The desktop applications installed for one user: every `applications/` directory of the XDG
/// data path, first match of an ID wins (as menus do), `Hidden=true` deleting an ID.
public struct ApplicationCatalogue: Sendable {
    /// Where an entry was found, for display.
    public struct Entry: Hashable, Sendable {
        public var entry: DesktopEntry
        public var path: String
        /// `user`, `flatpak`, `snap` or `system`.
        public var source: String
    }

    /// The data directories searched for a user, in order: the user's own, their Flatpak exports,
    /// then `systemDataDirectories` (`XDG_DATA_DIRS` of the agent, which the tests set), the
    /// system's Flatpak exports and Snap's desktop directory.
    public static func dataDirectories(home: String, systemDataDirectories: [String]) -> [String] {
        [home + "/.local/share", home + "/.local/share/flatpak/exports/share"] + systemDataDirectories + [
            "/var/lib/flatpak/exports/share", "/var/lib/snapd/desktop",
        ]
    }

    /// `XDG_DATA_DIRS` as the spec reads it: default `/usr/local/share:/usr/share`.
    public static func systemDataDirectories(environment value: String?) -> [String] {
        let parts = (value ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return parts.isEmpty ? ["/usr/local/share", "/usr/share"] : parts
    }

    public let entries: [String: Entry]

    /// Reads the entries. Below `userHome`, symbolic links are not followed: the agent reads
    /// as root, and a link planted there must not make it read someone else's file.
    public init(dataDirectories: [String], userHome: String? = nil) {
        var entries: [String: Entry] = [:]
        var deleted: Set<String> = []
        for directory in dataDirectories {
            let userOwned = userHome.map { directory.hasPrefix($0 + "/") } ?? false
            let applications = directory + "/applications"
            for relative in Self.desktopFiles(below: applications) {
                let id = DesktopEntry.id(forRelativePath: relative)
                guard entries[id] == nil, !deleted.contains(id) else { continue }
                let path = applications + "/" + relative
                guard let bytes = try? Files.read(path, limit: 1 << 20, followingSymlinks: !userOwned),
                    let entry = DesktopEntry(id: id, parsing: String(decoding: bytes, as: UTF8.self))
                else { continue }
                if entry.hidden {
                    deleted.insert(id)
                    continue
                }
                entries[id] = Entry(entry: entry, path: path, source: Self.source(of: directory))
            }
        }
        self.entries = entries
    }

    /// The applications a person would see in a menu, by name.
    public var listed: [Entry] {
        entries.values.filter(\.entry.isListedApplication).sorted {
            ($0.entry.name.lowercased(), $0.entry.id) < ($1.entry.name.lowercased(), $1.entry.id)
        }
    }

    /// An entry by ID, with or without `.desktop`.
    public func entry(id: String) -> Entry? {
        entries[id.hasSuffix(".desktop") ? String(id.dropLast(".desktop".count)) : id]
    }

    private static func source(of directory: String) -> String {
        if directory.contains("/flatpak/") { return "flatpak" }
        if directory.contains("/snapd/") { return "snap" }
        if directory.hasSuffix("/.local/share") { return "user" }
        return "system"
    }

    /// Paths of `.desktop` files below a directory, relative to it (subdirectories included, as
    /// the spec allows), at most a few levels deep and a few thousand files.
    private static func desktopFiles(below root: String) -> [String] {
        var found: [String] = []
        var pending: [(String, Int)] = [("", 0)]
        while let (relative, depth) = pending.popLast(), found.count < 10_000 {
            guard let directory = opendir(relative.isEmpty ? root : root + "/" + relative) else { continue }
            defer { closedir(directory) }
            while let item = readdir(directory) {
                let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name.hasPrefix(".") { continue }
                let path = relative.isEmpty ? name : relative + "/" + name
                if item.pointee.d_type == UInt8(DT_DIR) {
                    if depth < 4 { pending.append((path, depth + 1)) }
                } else if name.hasSuffix(".desktop") {
                    found.append(path)
                }
            }
        }
        return found.sorted()
    }
}

extension ApplicationCatalogue {
    /// Where `Exec=` programs given by name are looked for: the usual `PATH` of a desktop session.
    public static let programDirectories = [
        "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/games", "/usr/games",
    ]

    /// The index of these entries: each entry's programs (the executable `Exec=` starts, or the
    /// script an interpreter there runs, and `TryExec=`) found on the program path, its symbolic links resolved,
    /// and hashed. An entry whose program is missing is still indexed by ID and categories.
    public func index(hashes: ExecutableHashes) -> ApplicationIndex {
        ApplicationIndex(
            entries: entries.values.map { item in
                let paths = Set([item.entry.program, item.entry.tryExec].compactMap { $0 }.compactMap(Self.locate))
                return (
                    entry: item.entry,
                    programs: paths.sorted().map {
                        ApplicationIndex.Program(path: $0, sha256: try? hashes.sha256(of: $0))
                    }
                )
            })
    }

    /// A program's real path: as given when absolute, else the first match on the program path.
    static func locate(_ program: String) -> String? {
        let candidates =
            program.hasPrefix("/")
            ? [program] : program.contains("/") ? [] : programDirectories.map { $0 + "/" + program }
        for candidate in candidates where access(candidate, X_OK) == 0 || access(candidate, R_OK) == 0 {
            guard let resolved = realpath(candidate, nil) else { continue }
            defer { free(resolved) }
            return String(cString: resolved)
        }
        return nil
    }
}
