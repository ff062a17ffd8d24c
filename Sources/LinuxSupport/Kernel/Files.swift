import Crypto
import Glibc

/// Small file operations the agent needs, done with care for crashes and permissions.
public enum Files {
    /// Reads a whole file. With `followingSymlinks` false, a symbolic link is refused (ELOOP):
    /// for files in a user's own directories, which root must not be tricked into reading.
    public static func read(
        _ path: String, limit: Int = 64 << 20, followingSymlinks: Bool = true
    ) throws(SystemError)
        -> [UInt8]
    {
        let flags = O_RDONLY | O_CLOEXEC | (followingSymlinks ? 0 : O_NOFOLLOW)
        let fd = try systemCall("open(\(path))") { open(path, flags) }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let got = try systemCall("read(\(path))") { Glibc.read(fd, &chunk, chunk.count) }
            if got == 0 { return contents }
            contents += chunk.prefix(got)
            guard contents.count <= limit else {
                throw SystemError(.badFile, "\(path) is larger than \(limit) bytes")
            }
        }
    }

    /// Writes a file atomically: a temporary file in the same directory with `mode`, fsync,
    /// rename over the target, fsync the directory. A crash leaves the old file or the new one.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt32) throws(SystemError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = try systemCall("open(\(temporary))") {
            open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        }
        do {
            try systemCall("fchmod(\(temporary))") { fchmod(fd, mode) }
            var written = 0
            while written < bytes.count {
                written += try systemCall("write(\(temporary))") {
                    bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
                }
            }
            try systemCall("fsync(\(temporary))") { fsync(fd) }
            close(fd)
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        try systemCall("rename(\(temporary), \(path))") { rename(temporary, path) }
        syncDirectory(of: path)
    }

    /// Creates a directory (and its parents) if missing; the directory made gets `mode`. One
    /// that exists keeps its own (a state directory given as `/tmp` must not make `/tmp` 0700).
    public static func makeDirectory(_ path: String, mode: UInt32) throws(SystemError) {
        var partial = path.hasPrefix("/") ? "" : "."
        var made = false
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o755) == 0 {
                made = true
            } else if errno != EEXIST {
                throw SystemError.call("mkdir(\(partial))", errno)
            } else {
                made = false
            }
        }
        if made { try systemCall("chmod(\(path))") { chmod(path, mode) } }
    }

    /// Whether a path exists.
    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Removes a file (not a directory); whether there was one to remove.
    @discardableResult
    public static func remove(_ path: String) -> Bool { unlink(path) == 0 }

    /// Whether `path` is a regular file itself (a symbolic link is not followed).
    public static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Sets a file's mode bits; whether it could.
    @discardableResult
    public static func setMode(_ path: String, _ mode: UInt32) -> Bool { chmod(path, mode) == 0 }

    /// The path with every symbolic link, `.` and `..` resolved (`realpath`); nil when some part
    /// does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// What changes when a file is replaced or rewritten — device, inode, size, modification
    /// time — as text to compare; "missing" when there is no file.
    public static func signature(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "missing" }
        return "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }

    /// Where a symbolic link points (nil if it is none, or unreadable).
    public static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let length = readlink(path, &buffer, 4096)
        guard length > 0 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The mode bits of a file.
    public static func mode(of path: String) throws(SystemError) -> UInt32 {
        var info = stat()
        try systemCall("stat(\(path))") { stat(path, &info) }
        return info.st_mode & 0o7777
    }

    /// The SHA-256 of a file's contents as 64 hex digits, read in chunks.
    public static func sha256(of path: String) throws(SystemError) -> String {
        let fd = try systemCall("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        return try sha256(descriptor: fd, path: path)
    }

    /// The SHA-256 of what is left to read from an open file (all of it, `fromStart`), as hex;
    /// `path` names it in errors.
    public static func sha256(
        descriptor fd: Int32, path: String, fromStart: Bool = false
    ) throws(SystemError)
        -> String
    {
        if fromStart { _ = try systemCall("lseek(\(path))") { lseek(fd, 0, SEEK_SET) } }
        var hasher = SHA256()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = try systemCall("read(\(path))") { Glibc.read(fd, &chunk, chunk.count) }
            if got == 0 { break }
            hasher.update(data: chunk.prefix(got))
        }
        return hasher.finalize().map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    private static func syncDirectory(of path: String) {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
