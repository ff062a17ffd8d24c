import CLinuxShim
import Glibc

/// What `fstat` says of a file, as far as the agent needs it.
public struct FileStatus: Sendable, Hashable {
    public var key: FileKey
    /// The type and permission bits (`st_mode`).
    public var mode: UInt32
    public var owner: UInt32
    public var group: UInt32
    public var size: Int64 { key.size }

    public var isRegular: Bool { mode & S_IFMT == S_IFREG }
    public var isDirectory: Bool { mode & S_IFMT == S_IFDIR }
    public var isCharacterDevice: Bool { mode & S_IFMT == S_IFCHR }
    public var isSocket: Bool { mode & S_IFMT == S_IFSOCK }

    init(_ info: stat, generation: UInt32) {
        key = FileKey(info, generation: generation)
        mode = info.st_mode
        owner = info.st_uid
        group = info.st_gid
    }

    /// The status of an open file.
    public static func of(descriptor fd: Int32) -> FileStatus? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        var generation: UInt32 = 0
        _ = screentime_inode_generation(fd, &generation)
        return FileStatus(info, generation: generation)
    }

    /// The status of a path, its last symbolic link not followed (`lstat`); no generation.
    public static func of(path: String, followingSymlinks: Bool = true) -> FileStatus? {
        var info = stat()
        guard (followingSymlinks ? stat(path, &info) : lstat(path, &info)) == 0 else { return nil }
        return FileStatus(info, generation: 0)
    }
}

/// Reading files that someone other than root controls — a child's desktop entries, a script in
/// its home, `.flatpak-info` in a sandbox it made, a program a caller passed — without letting
/// the file hold the agent up.
///
/// Opened with `O_NONBLOCK` (a FIFO does not wait for a writer), `O_NOCTTY`, and optionally
/// `O_NOFOLLOW`; then only a regular file is accepted (no FIFO, device or socket: `/dev/zero`
/// would never end), no larger than a limit, and not on a FUSE file system, whose contents come
/// from a process that can stall every read. What is left — a regular file on a kernel file
/// system — reads in bounded time.
public enum UntrustedFile {
    /// FUSE's `f_type`.
    static let fuseMagic = 0x6573_5546

    /// Opens a file for reading; throws unless it is a regular file of at most `limit` bytes on a
    /// file system whose reads the kernel answers. The caller closes the descriptor.
    public static func open(
        _ path: String, limit: Int64, followingSymlinks: Bool = true
    ) throws(SystemError) -> (descriptor: Int32, status: FileStatus) {
        // Looked at before it is opened: opening a device runs its driver's open (a watchdog
        // starts counting, a tape rewinds), and a child names paths that lead to devices.
        let look = try systemCall("open(\(path), O_PATH)") { screentime_open_path(path, followingSymlinks ? 1 : 0) }
        defer { close(look) }
        guard let seen = FileStatus.of(descriptor: look) else { throw SystemError.call("fstat(\(path))", errno) }
        guard seen.isRegular else { throw SystemError(.badFile, "\(path) is not a regular file") }
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY
        let fd = try systemCall("open(\(path))") { Glibc.open("/proc/self/fd/\(look)", flags) }
        do throws(SystemError) {
            let status = try check(descriptor: fd, limit: limit, name: path)
            guard status.key.device == seen.key.device, status.key.inode == seen.key.inode else {
                throw SystemError(.badFile, "\(path) changed while it was opened")
            }
            return (fd, status)
        } catch {
            close(fd)
            throw error
        }
    }

    /// Checks an open file (one a caller passed, or one opened above): regular, at most `limit`
    /// bytes, not FUSE. Returns its status.
    @discardableResult
    public static func check(descriptor fd: Int32, limit: Int64, name: String) throws(SystemError) -> FileStatus {
        guard let status = FileStatus.of(descriptor: fd) else { throw SystemError.call("fstat(\(name))", errno) }
        guard status.isRegular else { throw SystemError(.badFile, "\(name) is not a regular file") }
        guard status.size <= limit else { throw SystemError(.badFile, "\(name) is larger than \(limit) bytes") }
        var type = 0
        _ = try systemCall("fstatfs(\(name))") { screentime_filesystem_type(fd, &type) }
        guard type != fuseMagic else {
            throw SystemError(.badFile, "\(name) is on a FUSE file system, whose reads a process answers")
        }
        return status
    }

    /// The whole contents of a file a user controls, at most `limit` bytes.
    public static func read(
        _ path: String, limit: Int = 1 << 20, followingSymlinks: Bool = true
    ) throws(SystemError) -> [UInt8] {
        let (fd, _) = try open(path, limit: Int64(limit), followingSymlinks: followingSymlinks)
        defer { close(fd) }
        return try readAll(fd, limit: limit, name: path)
    }

    /// The whole contents of a file a user controls, at most `limit` bytes, with what it was when
    /// opened (its owner, say).
    public static func readWithStatus(
        _ path: String, limit: Int = 1 << 20
    ) throws(SystemError) -> (contents: [UInt8], status: FileStatus) {
        let (fd, status) = try open(path, limit: Int64(limit))
        defer { close(fd) }
        return (try readAll(fd, limit: limit, name: path), status)
    }

    /// Reads an open descriptor to its end, refusing more than `limit` bytes (a file may grow
    /// between the check and the read).
    public static func readAll(_ fd: Int32, limit: Int, name: String) throws(SystemError) -> [UInt8] {
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let got = try systemCall("read(\(name))") { Glibc.read(fd, &chunk, chunk.count) }
            if got == 0 { return contents }
            contents += chunk.prefix(got)
            guard contents.count <= limit else { throw SystemError(.badFile, "\(name) is larger than \(limit) bytes") }
        }
    }
}
