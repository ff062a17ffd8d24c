import Glibc

/// Tells when some files change (written, replaced by a rename, created, removed): inotify on the
/// directories that hold them, since tools like `usermod` replace `/etc/subuid` by renaming a
/// new file over it. `run(_:)` calls back, with the changes of a short burst gathered into one,
/// until `stop()`; it sleeps while nothing changes.
public final class FileWatch: @unchecked Sendable {
    private let fd: Int32
    /// The names that matter (nil: every name in the directory).
    private let names: Set<String>?
    private let stopSignal: StopSignal

    /// Every file created, removed or renamed in `directory`.
    public init(directory: String) throws(SystemError) {
        stopSignal = try StopSignal()
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw SystemError.call("inotify_init1", errno) }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let error = errno
            close(fd)
            throw SystemError.call("inotify_add_watch(\(directory))", error)
        }
        names = nil
    }

    /// Every file created, removed, renamed or written in each of `directories` that exists (at
    /// least one must).
    public init(directories: [String]) throws(SystemError) {
        stopSignal = try StopSignal()
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw SystemError.call("inotify_init1", errno) }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE)
        var watched = 0
        var failure: SystemError?
        for directory in directories {
            if inotify_add_watch(fd, directory, mask) >= 0 {
                watched += 1
            } else if errno != ENOENT && errno != ENOTDIR {
                failure = SystemError.call("inotify_add_watch(\(directory))", errno)
            }
        }
        guard watched > 0 else {
            close(fd)
            throw failure ?? SystemError(.badFile, "none of \(directories) is a folder to watch")
        }
        names = nil
    }

    public init(files: [String]) throws(SystemError) {
        stopSignal = try StopSignal()
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw SystemError.call("inotify_init1", errno) }
        var names: Set<String> = []
        for file in files {
            let parts = file.split(separator: "/", omittingEmptySubsequences: false)
            let directory = parts.dropLast().joined(separator: "/")
            names.insert(String(parts.last ?? ""))
            let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM)
            guard inotify_add_watch(fd, directory.isEmpty ? "/" : directory, mask) >= 0 else {
                let error = errno
                close(fd)
                throw SystemError.call("inotify_add_watch(\(directory))", error)
            }
        }
        self.names = names
    }

    deinit { close(fd) }

    /// Calls `changed` after each burst of changes to the files, until `stop()` (or `until` is
    /// raised).
    public func run(until other: StopSignal? = nil, _ changed: () -> Void) throws(SystemError) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: other?.fd ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        while !stopSignal.isRaised, other?.isRaised != true {
            _ = try systemCall("poll(inotify)") { poll(&fds, 3, -1) }
            if fds[1].revents != 0 || fds[2].revents != 0 { return }
            var relevant = false
            // Gather the burst: read until nothing more comes for 100 ms.
            repeat {
                while true {
                    let length = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if length <= 0 { break }
                    var offset = 0
                    let header = MemoryLayout<inotify_event>.size
                    while offset + header <= length {
                        let event = buffer.withUnsafeBytes {
                            $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                        }
                        let nameLength = Int(event.len)
                        if nameLength > 0, offset + header + nameLength <= length {
                            let name = String(
                                decoding: buffer[(offset + header)..<(offset + header + nameLength)].prefix { $0 != 0 },
                                as: UTF8.self)
                            if names?.contains(name) ?? true { relevant = true }
                        }
                        offset += header + nameLength
                    }
                }
            } while poll(&fds, 1, 100) > 0 && !stopSignal.isRaised
            if relevant { changed() }
        }
    }

    public func stop() { stopSignal.raise() }
}
