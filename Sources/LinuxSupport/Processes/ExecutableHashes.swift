import Glibc
import Synchronization

/// What names one version of one file: device, inode number and generation (a reused number is
/// another file), size, and the change time (`ctime`), which every write and every `utime` moves
/// forward and which nobody but the kernel sets: a file changed and its `mtime` put back still
/// has a new key.
public struct FileKey: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public var generation: UInt32
    public var size: Int64
    public var changed: Int64
    public var changedNanoseconds: Int

    init(_ info: stat, generation: UInt32) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        self.generation = generation
        size = Int64(info.st_size)
        changed = Int64(info.st_ctim.tv_sec)
        changedNanoseconds = info.st_ctim.tv_nsec
    }

    /// The key of an open file.
    public static func of(descriptor fd: Int32) -> FileKey? { FileStatus.of(descriptor: fd)?.key }
}

/// SHA-256 of executables by content, cached by `FileKey`, so a program is hashed once however
/// often it starts, and a copy or a rename hashes the same.
///
/// The files hashed may be a child's own (a script in its home, a copied program): they are
/// opened as `UntrustedFile`s (regular files only, no FIFO, no FUSE, at most `sizeLimit`). A hash
/// is kept only when the file's change time is old enough that a later change must show in it:
/// change times move in clock ticks, and a file written again within the tick it was hashed in
/// would keep its key. Such a young file is hashed again at every ask.
public final class ExecutableHashes: Sendable {
    public static let defaultSizeLimit: Int64 = 512 << 20
    private let cache = Mutex<[FileKey: String]>([:])
    private let capacity: Int
    public let sizeLimit: Int64
    /// How many seconds old a file's last change must be for its hash to be kept.
    public let settledAfter: Int64

    public init(
        capacity: Int = 4096, sizeLimit: Int64 = ExecutableHashes.defaultSizeLimit, settledAfter: Int64 = 2
    ) {
        self.capacity = capacity
        self.sizeLimit = sizeLimit
        self.settledAfter = settledAfter
    }

    /// The hash of the file at `path` (for a running process, `/proc/PID/exe`, which reaches the
    /// file even when it was deleted or replaced since).
    public func sha256(of path: String) throws(SystemError) -> String {
        let (fd, _) = try UntrustedFile.open(path, limit: sizeLimit)
        defer { close(fd) }
        return try sha256(descriptor: fd, name: path)
    }

    /// The hash of an open file, read from its start.
    public func sha256(descriptor fd: Int32, name: String) throws(SystemError) -> String {
        let key = try UntrustedFile.check(descriptor: fd, limit: sizeLimit, name: name).key
        if let known = cached(key) { return known }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw SystemError.call("lseek(\(name))", errno) }
        let hash = try Files.sha256(descriptor: fd, path: name)
        // Unchanged while it was read, and settled: kept.
        if let after = FileKey.of(descriptor: fd), after == key, Int64(now.tv_sec) - key.changed >= settledAfter {
            cache.withLock { cache in
                if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
                cache[key] = hash
            }
        }
        return hash
    }

    /// The hash of a file version, if it was hashed already.
    public func cached(_ key: FileKey) -> String? { cache.withLock { $0[key] } }

    /// How many hashes are cached.
    public var count: Int { cache.withLock { $0.count } }
}
