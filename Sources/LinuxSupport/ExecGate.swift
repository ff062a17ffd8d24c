import CLinuxShim
import Glibc

/// The kernel asks before a marked program runs: fanotify's `FAN_OPEN_EXEC_PERM` on the files
/// (inodes) of blocked applications, answered allow or deny on the caller's thread by `run(_:)`.
/// A denied exec fails with EPERM in the caller, before the program's first instruction.
///
/// Making the gate needs CAP_SYS_ADMIN (a fanotify group of the content class); marking a file
/// later needs only read access to it, so marks change after the agent dropped its capabilities.
/// Marks are on inodes, never on mounts: if the agent hangs, only the marked programs wait, not
/// every exec of the machine; if it dies, the kernel lets them all run (the copy-and-kill at exec
/// of the process watcher does not depend on this gate).
public final class ExecGate: @unchecked Sendable {
    /// One exec waiting for an answer.
    public struct Request {
        /// The process calling execve (its old program still runs).
        public var pid: Int32
        /// The file it is about to run, open read-only for the time of the decision.
        public var file: Int32
    }

    private let fd: Int32
    private let stopSignal: StopSignal

    public init() throws(SystemError) {
        stopSignal = try StopSignal()
        // The events' files open read-only; the kernel adds O_LARGEFILE itself on 64-bit.
        fd = fanotify_init(UInt32(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK), UInt32(O_RDONLY | O_CLOEXEC))
        guard fd >= 0 else {
            let error = errno
            let hint =
                error == EPERM ? " (needs CAP_SYS_ADMIN)" : error == ENOSYS ? " (no fanotify in this kernel)" : ""
            throw SystemError(
                .systemCall, "fanotify_init: \(String(cString: strerror(error)))\(hint)", errno: error)
        }
    }

    deinit { close(fd) }

    /// Asks for every later exec of this file (by any path or hard link to it).
    public func mark(_ path: String) throws(SystemError) {
        _ = try systemCall("fanotify_mark(\(path))") {
            fanotify_mark(fd, UInt32(FAN_MARK_ADD), UInt64(FAN_OPEN_EXEC_PERM), AT_FDCWD, path)
        }
    }

    /// Removes every mark.
    public func clear() throws(SystemError) {
        _ = try systemCall("fanotify_mark(flush)") { fanotify_mark(fd, UInt32(FAN_MARK_FLUSH), 0, AT_FDCWD, nil) }
    }

    /// Answers requests with `decide` (true: the program may run) until `stop()`.
    public func run(_ decide: (Request) -> Bool) throws(SystemError) {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
        ]
        let headerSize = MemoryLayout<fanotify_event_metadata>.size
        while !stopSignal.isRaised {
            _ = try systemCall("poll(fanotify)") { poll(&fds, 2, -1) }
            if fds[1].revents != 0 { return }
            let length = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if length < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw SystemError.call("read(fanotify)", errno)
            }
            var offset = 0
            while offset + headerSize <= length {
                let event = buffer.withUnsafeBytes {
                    $0.loadUnaligned(fromByteOffset: offset, as: fanotify_event_metadata.self)
                }
                guard event.event_len >= headerSize, offset + Int(event.event_len) <= length else { break }
                offset += Int(event.event_len)
                guard event.vers == FANOTIFY_METADATA_VERSION, event.fd >= 0 else { continue }
                let allow =
                    event.mask & UInt64(FAN_OPEN_EXEC_PERM) == 0 || decide(Request(pid: event.pid, file: event.fd))
                var response = fanotify_response(fd: event.fd, response: UInt32(allow ? FAN_ALLOW : FAN_DENY))
                // An answer that cannot be written leaves the exec waiting until the gate closes
                // (which allows it); there is nothing better to do with it here.
                _ = write(fd, &response, MemoryLayout<fanotify_response>.size)
                close(event.fd)
            }
        }
    }

    /// Makes `run(_:)` return; safe from any thread.
    public func stop() {
        stopSignal.raise()
    }
}
