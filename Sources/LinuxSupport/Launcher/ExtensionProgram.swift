import Glibc

/// Whether a program may run as a guardian app's extension: only what root installed and no one
/// else can change — named by its real path (no symbolic link on the way), the file and every
/// directory above it owned by root, none writable by its group or others, and the file a regular
/// one others may execute. A path a child could write
/// (a home directory, /tmp) would let the child choose what runs with the guardian's authority.
public enum ExtensionProgram {
    /// Nil if the program may run; else why not, in words.
    public static func problem(with path: String) -> String? {
        guard path.hasPrefix("/"), path.utf8.count <= 4096, !path.utf8.contains(0) else {
            return "an extension is named by an absolute path, not '\(path.prefix(200))'"
        }
        // The path itself must be the real one: a symbolic link anywhere on it (in a directory a
        // child controls, say) could be pointed elsewhere between this check and the exec.
        guard let real = Files.realPath(path) else { return "\(path) does not exist" }
        guard real == path else {
            return "\(path) goes through a symbolic link (to \(real)); name the program by its real path"
        }
        var info = stat()
        guard stat(real, &info) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(path) is not a regular file" }
        guard info.st_uid == 0 else { return "\(path) is not owned by root (uid \(info.st_uid) owns it)" }
        guard info.st_mode & 0o022 == 0 else {
            return
                "\(path) may be changed by others (mode \(String(info.st_mode & 0o7777, radix: 8))); it must not be group- or world-writable"
        }
        guard info.st_mode & 0o001 != 0 else {
            return
                "\(path) may not be run by the extension account (mode \(String(info.st_mode & 0o7777, radix: 8)); give it o+x)"
        }
        var directory = real
        while let slash = directory.lastIndex(of: "/") {
            directory = slash == directory.startIndex ? "/" : String(directory[..<slash])
            var parent = stat()
            guard stat(directory, &parent) == 0 else { return "\(directory): \(String(cString: strerror(errno)))" }
            guard parent.st_uid == 0, parent.st_mode & 0o022 == 0 else {
                return
                    "\(path) lies in \(directory), which someone other than root may change (owner uid \(parent.st_uid), mode \(String(parent.st_mode & 0o7777, radix: 8)))"
            }
            if directory == "/" { break }
        }
        return nil
    }
}
