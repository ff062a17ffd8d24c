import Glibc
public import ScreenTimeCore

/// The desktop applications installed for one user: the system's `applications/` directories
/// (the XDG data path, the system's Flatpak exports, Snap's), then the user's own.
///
/// The system's entries define applications: the first directory with an ID wins, as menus have
/// it, and a system entry with `Hidden=true` deletes the ID from the directories after it. The
/// user's own entries (`~/.local/share/applications`, the user's Flatpak exports) are the child's
/// files: they may add an application the system does not have, and add programs to one it has,
/// but never hide, rename or re-categorise one (`additions`).
///
/// The user's files are read as a hostile user's: no symbolic link is followed below the home
/// (not even one in the middle of the path), every file is opened without blocking and read
/// only when it is a regular file on a kernel file system, and the walk stops at `maximumFiles`
/// files or `maximumBytes` bytes, or when the time given for the user's files is up (a child's
/// hundred thousand entries make its own additions incomplete, never the system's late).
public struct ApplicationCatalogue: Sendable {
    /// Where an entry was found, for display.
    public struct Entry: Hashable, Sendable {
        public var entry: DesktopEntry
        public var path: String
        /// `user`, `flatpak`, `snap` or `system`.
        public var source: String
        /// Whether the entry is one of the user's own files.
        public var isUsers: Bool
    }

    public static let maximumFiles = 10_000
    public static let maximumBytes = 16 << 20
    static let maximumDepth = 4

    /// The user's data directories, relative to the home: its own, its Flatpak exports.
    public static let userDataDirectories = [".local/share", ".local/share/flatpak/exports/share"]

    /// The system's data directories: `systemDataDirectories` (`XDG_DATA_DIRS` of the agent, which
    /// the tests set), the system's Flatpak exports and Snap's desktop directory.
    public static func systemDirectories(_ systemDataDirectories: [String]) -> [String] {
        systemDataDirectories + ["/var/lib/flatpak/exports/share", "/var/lib/snapd/desktop"]
    }

    /// `XDG_DATA_DIRS` as the spec reads it: default `/usr/local/share:/usr/share`.
    public static func systemDataDirectories(environment value: String?) -> [String] {
        let parts = (value ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return parts.isEmpty ? ["/usr/local/share", "/usr/share"] : parts
    }

    /// The applications, by ID: each defined by a system entry, or by the user's own when the
    /// system has none.
    public let entries: [String: Entry]
    /// The user's entries for IDs the system defines: only their programs count.
    public let additions: [String: Entry]
    /// What could not be read, in words (a FIFO planted as an entry, a file too large, a limit).
    public let problems: [String]

    /// Whether the user's time ran out before all of their entries were read.
    public let userLate: Bool

    /// The user's own entries read.
    public var usersEntries: [Entry] { entries.values.filter(\.isUsers) + additions.values }

    /// The user's own entries read, by ID, as many as fit in `bytes` of their texts: what a read
    /// keeps for the next to take when that one runs late (kept all day, so a child's sixteen
    /// megabytes of entries do not stay with them).
    public func usersEntries(upTo bytes: Int) -> [Entry] {
        var left = bytes
        var kept: [Entry] = []
        for item in usersEntries.sorted(by: { $0.entry.id < $1.entry.id }) {
            let entry = item.entry
            left -= item.path.utf8.count + entry.id.utf8.count + entry.name.utf8.count + entry.type.utf8.count
            left -= (entry.exec?.utf8.count ?? 0) + (entry.tryExec?.utf8.count ?? 0) + (entry.icon?.utf8.count ?? 0)
            left -= entry.categories.reduce(0) { $0 + $1.utf8.count }
            if left < 0 { break }
            kept.append(item)
        }
        return kept
    }

    /// Reads the entries for a user with this home (nil: the system's only); the user's own are
    /// read for `userTime` at most, after the system's. Past it, those of the user's entries read
    /// `before` (the last read's `usersEntries`) that were not reached now are taken as they were
    /// (a loaded machine must not make her app unknown at one read and known at the next).
    public init(
        home: String?, systemDataDirectories: [String], userTime: Duration = .seconds(1), before: [Entry] = []
    ) {
        var reader = EntryReader()
        var entries: [String: Entry] = [:]
        var deleted: Set<String> = []
        for directory in Self.systemDirectories(systemDataDirectories) {
            let applications = directory + "/applications"
            for (relative, bytes) in reader.files(below: applications, userOwned: false) {
                let id = DesktopEntry.id(forRelativePath: relative)
                guard entries[id] == nil, !deleted.contains(id),
                    let entry = DesktopEntry(id: id, parsing: String(decoding: bytes, as: UTF8.self))
                else { continue }
                if entry.hidden {
                    deleted.insert(id)
                    continue
                }
                entries[id] = Entry(
                    entry: entry, path: applications + "/" + relative, source: Self.source(of: directory),
                    isUsers: false)
            }
        }
        var additions: [String: Entry] = [:]
        if let home {
            reader.deadline = .now + userTime
            for directory in Self.userDataDirectories {
                let applications = directory + "/applications"
                for (relative, bytes) in reader.files(below: applications, userOwned: true, home: home) {
                    // Parsing counts in the user's time too.
                    if reader.outOfTime {
                        reader.stoppedForTime = true
                        reader.problems.append("\(home)/\(applications): stopped reading at \(relative): out of time")
                        break
                    }
                    let id = DesktopEntry.id(forRelativePath: relative)
                    // Hidden in a user's file hides nothing; it defines nothing either.
                    guard let entry = DesktopEntry(id: id, parsing: String(decoding: bytes, as: UTF8.self)),
                        !entry.hidden
                    else { continue }
                    let item = Entry(
                        entry: entry, path: home + "/" + applications + "/" + relative,
                        source: directory.contains("flatpak") ? "flatpak" : "user", isUsers: true)
                    if entries[id]?.isUsers == false {
                        if additions[id] == nil { additions[id] = item }
                    } else if entries[id] == nil {
                        entries[id] = item
                    }
                }
            }
        }
        if reader.stoppedForTime {
            for item in before where item.isUsers && additions[item.entry.id] == nil {
                if entries[item.entry.id]?.isUsers == false {
                    additions[item.entry.id] = item
                } else if entries[item.entry.id] == nil {
                    entries[item.entry.id] = item
                }
            }
        }
        self.entries = entries
        self.additions = additions
        self.problems = reader.problems
        userLate = reader.stoppedForTime
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
        return "system"
    }
}

/// Reads `.desktop` files below a directory, relative to it (subdirectories included, as the
/// spec allows), within the catalogue's limits.
private struct EntryReader {
    var files = 0
    var bytes = 0
    var problems: [String] = []
    /// When reading stops (the user's files only).
    var deadline: ContinuousClock.Instant?

    var outOfTime: Bool { deadline.map { .now >= $0 } ?? false }
    /// Whether reading stopped, at some point, because the time was up.
    var stoppedForTime = false

    /// The files below `directory`: for a user-owned one, `directory` is relative to `home` and
    /// reached from it without following any link.
    mutating func files(below directory: String, userOwned: Bool, home: String? = nil) -> [(String, [UInt8])] {
        let root: Int32
        if userOwned, let home {
            root = Self.openDirectory(home, below: AT_FDCWD, followingLinks: true)
            guard root >= 0 else { return [] }
            var current = root
            for component in directory.split(separator: "/") {
                let next = Self.openDirectory(String(component), below: current, followingLinks: false)
                close(current)
                guard next >= 0 else { return [] }
                current = next
            }
            return walk(current, userOwned: true, name: home + "/" + directory)
        }
        root = Self.openDirectory(directory, below: AT_FDCWD, followingLinks: true)
        guard root >= 0 else { return [] }
        return walk(root, userOwned: false, name: directory)
    }

    /// Walks a directory (closing it), depth first, to the catalogue's limits.
    private mutating func walk(_ top: Int32, userOwned: Bool, name: String) -> [(String, [UInt8])] {
        var found: [(String, [UInt8])] = []
        var pending: [(fd: Int32, relative: String, depth: Int)] = [(top, "", 0)]
        func stop(_ stream: OpaquePointer?, _ problems: inout [String], _ files: Int) -> [(String, [UInt8])] {
            problems.append("\(name): stopped reading after \(files) entries: out of time")
            if let stream { closedir(stream) }
            for item in pending { close(item.fd) }
            return found
        }
        while let (fd, relative, depth) = pending.popLast() {
            guard let stream = fdopendir(fd) else {
                close(fd)
                continue
            }
            var names: [(String, UInt8)] = []
            var listed = 0
            while let item = readdir(stream) {
                listed += 1
                if listed & 255 == 0, outOfTime {
                    stoppedForTime = true
                    return stop(stream, &problems, files)
                }
                let entryName = withUnsafeBytes(of: item.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if entryName.hasPrefix(".") { continue }
                names.append((entryName, item.pointee.d_type))
            }
            for (entryName, type) in names.sorted(by: { $0.0 < $1.0 }) {
                let path = relative.isEmpty ? entryName : relative + "/" + entryName
                let maybeDirectory =
                    type == UInt8(DT_DIR)
                    || (type == UInt8(DT_UNKNOWN) || (!userOwned && type == UInt8(DT_LNK)))
                        && !entryName.hasSuffix(".desktop")
                if maybeDirectory {
                    guard depth < ApplicationCatalogue.maximumDepth else { continue }
                    let child = Self.openDirectory(entryName, below: dirfd(stream), followingLinks: !userOwned)
                    if child >= 0 { pending.append((child, path, depth + 1)) }
                } else if entryName.hasSuffix(".desktop") {
                    if outOfTime {
                        stoppedForTime = true
                        return stop(stream, &problems, files)
                    }
                    guard files < ApplicationCatalogue.maximumFiles, bytes < ApplicationCatalogue.maximumBytes else {
                        problems.append("\(name): stopped reading at \(files) entries, \(bytes) bytes")
                        closedir(stream)
                        for item in pending { close(item.fd) }
                        return found
                    }
                    files += 1
                    if let contents = read(
                        entryName, below: dirfd(stream), followingLinks: !userOwned, name: name + "/" + path)
                    {
                        bytes += contents.count
                        found.append((path, contents))
                    }
                }
            }
            closedir(stream)
        }
        return found
    }

    private mutating func read(
        _ entryName: String, below directory: Int32, followingLinks: Bool, name: String
    )
        -> [UInt8]?
    {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (followingLinks ? 0 : O_NOFOLLOW)
        let fd = openat(directory, entryName, flags)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        do {
            try UntrustedFile.check(descriptor: fd, limit: 1 << 20, name: name)
            return try UntrustedFile.readAll(fd, limit: 1 << 20, name: name)
        } catch {
            problems.append(error.message)
            return nil
        }
    }

    private static func openDirectory(_ name: String, below directory: Int32, followingLinks: Bool) -> Int32 {
        openat(
            directory, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW))
    }
}

extension ApplicationCatalogue {
    /// Where `Exec=` programs given by name are looked for: the usual `PATH` of a desktop session.
    public static let programDirectories = [
        "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/games", "/usr/games",
    ]

    /// The index of these entries: each entry's programs (the executable `Exec=` starts, or the
    /// script an interpreter there runs, and `TryExec=`) found on the program path, its symbolic
    /// links resolved. The system's programs are hashed (so a copy is known by its content); the
    /// user's own are known by path only — hashing files a child controls would let it make every
    /// policy change slow, and a copy of a system program is found by the system's hash anyway.
    /// An entry whose program is missing is still indexed by ID and categories. The user's
    /// entries' programs are `userPrograms` (`locateUserPrograms`).
    public func index(hashes: ExecutableHashes, userPrograms: UserPrograms? = nil) -> ApplicationIndex {
        let users = userPrograms ?? locateUserPrograms()
        let items =
            entries.values.sorted { $0.entry.id < $1.entry.id } + additions.values.sorted { $0.entry.id < $1.entry.id }
        var located: [String: String?] = [:]
        func locate(_ program: String, users isUsers: Bool) -> String? {
            if isUsers { return users.located[program] }
            if let known = located[program] { return known }
            let found = Self.locate(program)
            located[program] = found
            return found
        }
        return ApplicationIndex(
            entries: items.map { item in
                let paths = Set(
                    [item.entry.program, item.entry.tryExec].compactMap { $0 }.compactMap {
                        locate($0, users: item.isUsers)
                    })
                return (
                    entry: item.entry,
                    programs: paths.sorted().map {
                        ApplicationIndex.Program(
                            path: $0, sha256: item.isUsers ? nil : try? hashes.sha256(of: $0), isUsers: item.isUsers)
                    }
                )
            })
    }

    /// Where the user's entries' programs were found, by what the entries name.
    public struct UserPrograms: Sendable, Equatable {
        public var located: [String: String] = [:]
        /// Programs the user's time ran out before (those found by the read `before` kept where
        /// they were found then).
        public var late = 0

        public init(located: [String: String] = [:], late: Int = 0) {
            self.located = located
            self.late = late
        }
    }

    /// The user's entries' programs found on the program path within `time` (a chain of links can
    /// make each `realpath` slow), each distinct one once, before any of the system's is hashed.
    /// (Time of their own, not what is left of the entries' second: a loaded machine parsing her
    /// 300,000-character entry used it all, and her program was never found.) Past it, a program
    /// is where the read `before` found it (a loaded machine must not make a program known by her
    /// entry unknown at one read and known at the next, her app thawed and held again at each),
    /// or not found.
    public func locateUserPrograms(
        before: UserPrograms = UserPrograms(), time: Duration = .milliseconds(500)
    ) -> UserPrograms {
        let deadline = ContinuousClock.now + time
        var result = UserPrograms()
        let named = Set(usersEntries.flatMap { [$0.entry.program, $0.entry.tryExec].compactMap { $0 } })
        for program in named.sorted() {
            if .now >= deadline {
                result.late += 1
                if let earlier = before.located[program] { result.located[program] = earlier }
                continue
            }
            if let found = Self.locate(program) { result.located[program] = found }
        }
        return result
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
