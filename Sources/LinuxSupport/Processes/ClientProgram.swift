import Glibc

/// The program a caller runs, as the kernel tells it (`/proc/PID/exe`), which names the caller's
/// client: a guardian app is known by its executable, not by what it says of itself.
public struct ClientProgram: Sendable, Hashable {
    /// The executable's real path.
    public var path: String
    /// The client's name: the executable's file name (letters, digits and `. _ -`, at most 64).
    public var name: String
    /// Installed by root: the file and every directory above it root's and writable by no one
    /// else (a program a user could change cannot speak for a client).
    public var installed: Bool

    /// The program process `pid` runs (under `proc`), or nil when it cannot be told.
    public static func of(pid: Int32, proc: String = "/proc") -> ClientProgram? {
        guard pid > 0, var path = Files.readLink("\(proc)/\(pid)/exe") else { return nil }
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        let file = path.split(separator: "/").last.map(String.init) ?? ""
        var name = String(
            String.UnicodeScalarView(
                file.unicodeScalars.filter { scalar in
                    scalar.isASCII
                        && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                            || "._-".unicodeScalars.contains(scalar))
                }
            ).prefix(64))
        while name.hasPrefix(".") || name.hasPrefix("-") { name.removeFirst() }
        guard !name.isEmpty else { return nil }
        return ClientProgram(path: path, name: name, installed: ExtensionProgram.isRootsAlone(path))
    }
}

extension ExtensionProgram {
    /// Whether a file and every directory above it are root's and writable by no one else.
    public static func isRootsAlone(_ path: String) -> Bool {
        var info = stat()
        guard path.hasPrefix("/"), stat(path, &info) == 0, info.st_uid == 0, info.st_mode & 0o022 == 0 else {
            return false
        }
        var directory = path
        while let slash = directory.lastIndex(of: "/"), directory != "/" {
            directory = slash == directory.startIndex ? "/" : String(directory[..<slash])
            var parent = stat()
            guard stat(directory, &parent) == 0, parent.st_uid == 0, parent.st_mode & 0o022 == 0 else { return false }
        }
        return true
    }
}
