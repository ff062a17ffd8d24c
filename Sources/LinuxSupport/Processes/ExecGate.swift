import CLinuxShim
import FoundationEssentials
import Glibc
import Synchronization

/// The kernel asks before a marked file is executed or opened: fanotify permission events,
/// answered allow or deny by `run(decide:fallback:)`. A denied exec fails with EPERM in the
/// caller before the program's first instruction; a denied open fails with EPERM too.
///
/// Two groups:
/// - *files*: marks on single files (inodes) — the programs of shielded and blocked apps — for
///   their execs (`FAN_OPEN_EXEC_PERM`) and their opens (`FAN_OPEN_PERM`: the loader opens a
///   program to map it, `cp` to copy it). Marks are added and cleared at any time: a mark needs
///   only read access to the file, so they change after the agent dropped its capabilities. If
///   the agent hangs, only these files wait; if it dies, the kernel lets them all through.
/// - *filesystems*: marks on whole file systems, for every exec on them (a child allowed only
///   installed programs, `denyAppInstallation`). These need CAP_SYS_ADMIN, so they are made
///   before the drop, and only when asked for: every exec of the machine then waits for an
///   answer. They can be dropped later, not made again.
///
/// Events carry the calling thread (`FAN_REPORT_TID`). If an answer takes longer than
/// `stallAfter` (a bug; deciding never waits on anything), a watchdog thread answers what is
/// waiting with `fallback`, which reads nothing but the kernel's records, until the gate is back.
public final class ExecGate: @unchecked Sendable {
    public enum Kind: Sendable {
        /// The file is being executed (`execve`, or the kernel loading a script's interpreter).
        case exec
        /// The file is being opened (for reading, or as the second half of an exec).
        case open
    }

    /// One exec or open waiting for an answer.
    public struct Request: Sendable {
        /// The thread asking (its process may have other threads).
        public var tid: Int32
        /// The file, open read-only for the time of the decision.
        public var file: Int32
        public var kind: Kind
        /// Asked through a file system mark (any exec there), not a mark on the file itself.
        public var throughFilesystem: Bool
    }

    private let files: Int32
    private let filesystems = Mutex<Int32>(-1)
    private let stopSignal: StopSignal
    private let dropFilesystemsSignal: StopSignal
    private let timer: Int32
    /// Set while `run` decides, with when it started.
    private let deciding = Mutex<Bool>(false)
    private let recentAnswers = Mutex<(times: [UInt32], count: Int)>(([], 0))
    private let stalled = Atomic<Bool>(false)

    public init() throws(SystemError) {
        stopSignal = try StopSignal()
        dropFilesystemsSignal = try StopSignal()
        files = try Self.makeGroup()
        timer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        guard timer >= 0 else {
            close(files)
            throw SystemError.call("timerfd_create", errno)
        }
    }

    deinit {
        close(files)
        close(timer)
        let fs = filesystems.withLock { $0 }
        if fs >= 0 { close(fs) }
    }

    private static func makeGroup() throws(SystemError) -> Int32 {
        // The events' files open read-only; the kernel adds O_LARGEFILE itself on 64-bit.
        let fd = fanotify_init(
            UInt32(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_TID), UInt32(O_RDONLY | O_CLOEXEC))
        guard fd >= 0 else {
            let error = errno
            let hint =
                error == EPERM ? " (needs CAP_SYS_ADMIN)" : error == ENOSYS ? " (no fanotify in this kernel)" : ""
            throw SystemError(.systemCall, "fanotify_init: \(String(cString: strerror(error)))\(hint)", errno: error)
        }
        return fd
    }

    /// File systems whose files are not marked (`f_type`): opening one of their files runs more
    /// than the kernel's own code. To hand the gate an event's file, the kernel opens it inside
    /// the gate's `read`: an overlay (or eCryptfs) file opens the file underneath, whose open asks
    /// the same group again while the gate's thread waits in that very read (seen with a child's
    /// overlay in a user namespace of hers, 2026-12-02: the gate waited on itself for good); a
    /// FUSE file's open waits on the process serving it, which may be the child's.
    static let unmarkable: [Int: String] = [
        0x794c_7630: "overlayfs", 0xf15f: "eCryptfs", UntrustedFile.fuseMagic: "FUSE",
    ]

    /// Asks for every later exec and open of this file (by any path or hard link to it). Refused
    /// (`badFile`) for a file on a file system in `unmarkable`: such a program is held by the
    /// process watcher after its exec instead, as an unmarked copy is.
    public func mark(_ path: String) throws(SystemError) {
        // Looked at and marked through one descriptor: the file looked at is the file marked.
        let look = try systemCall("open(\(path), O_PATH)") { screentime_open_path(path, 1) }
        defer { close(look) }
        var type = 0
        _ = try systemCall("fstatfs(\(path))") { screentime_filesystem_type(look, &type) }
        if let name = Self.unmarkable[type] {
            throw SystemError(.badFile, "\(path) is on \(name), whose opens the gate cannot be asked about")
        }
        _ = try systemCall("fanotify_mark(\(path))") {
            fanotify_mark(
                files, UInt32(FAN_MARK_ADD), UInt64(FAN_OPEN_EXEC_PERM | FAN_OPEN_PERM), AT_FDCWD,
                "/proc/self/fd/\(look)")
        }
    }

    /// Removes every file mark.
    public func clear() throws(SystemError) {
        _ = try systemCall("fanotify_mark(flush)") { fanotify_mark(files, UInt32(FAN_MARK_FLUSH), 0, AT_FDCWD, nil) }
    }

    /// Asks for every exec on the file systems of these paths (needs CAP_SYS_ADMIN). Returns the
    /// paths whose file system is marked; the rest failed (and are logged by the caller).
    public func markFilesystems(_ paths: [String]) -> (marked: [String], failed: [(String, SystemError)]) {
        var group = filesystems.withLock { $0 }
        if group < 0 {
            do {
                group = try Self.makeGroup()
            } catch {
                return ([], paths.map { ($0, error) })
            }
            filesystems.withLock { $0 = group }
        }
        var marked: [String] = []
        var failed: [(String, SystemError)] = []
        for path in paths {
            do {
                _ = try systemCall("fanotify_mark(\(path), filesystem)") {
                    fanotify_mark(
                        group, UInt32(FAN_MARK_ADD | FAN_MARK_FILESYSTEM), UInt64(FAN_OPEN_EXEC_PERM), AT_FDCWD, path)
                }
                marked.append(path)
            } catch {
                failed.append((path, error))
            }
        }
        return (marked, failed)
    }

    /// Whether file systems are marked now.
    public var marksFilesystems: Bool { filesystems.withLock { $0 } >= 0 }

    /// Drops the file system marks (for good: they cannot be made again without CAP_SYS_ADMIN).
    /// Done by the thread in `run`, which may be polling the group; safe from any thread.
    public func dropFilesystemMarks() {
        dropFilesystemsSignal.raise()
    }

    /// Whether the watchdog had to answer for the gate since it started.
    public var hasStalled: Bool { stalled.load(ordering: .relaxed) }

    /// Answers requests with `decide` (true: let it happen) until `stop()`. A decision that has
    /// not come after `stallAfter` makes the watchdog answer with `fallback`, which must read
    /// nothing but what the kernel answers at once.
    /// How long the gate's decisions took, from reading the kernel's ask to answering it: how many
    /// there were in all, and the median, 99th percentile and slowest of the latest
    /// `answerTimeWindow` (microseconds). Nil before the first.
    public var answerTimes: (count: Int, p50: Int, p99: Int, slowest: Int)? {
        let (times, count) = recentAnswers.withLock { ($0.times, $0.count) }
        guard !times.isEmpty else { return nil }
        let sorted = times.sorted()
        return (
            count, Int(sorted[(sorted.count - 1) / 2]), Int(sorted[(sorted.count - 1) * 99 / 100]), Int(sorted.last!)
        )
    }

    public static let answerTimeWindow = 4096

    private func answered(in duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let microseconds = UInt32(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        recentAnswers.withLock { recent in
            if recent.times.count < Self.answerTimeWindow {
                recent.times.append(microseconds)
            } else {
                recent.times[recent.count % Self.answerTimeWindow] = microseconds
            }
            recent.count += 1
        }
    }

    public func run(
        decide: (Request) -> Bool, fallback: @escaping @Sendable (Request) -> Bool, stallAfter: Duration = .seconds(1),
        started: () -> Void = {}
    ) throws(SystemError) {
        Threads.start("screentime.gatewatch") { [self] in watch(fallback: fallback) }
        started()
        defer { stopSignal.raise() }
        let (seconds, attoseconds) = stallAfter.components
        var arm = itimerspec(
            it_interval: timespec(),
            it_value: timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000)))
        var disarm = itimerspec()
        // A few events per read: those read with one that stalls wait for it too.
        var buffer = [UInt8](repeating: 0, count: 256)
        while !stopSignal.isRaised {
            let fsGroup = filesystems.withLock { $0 }
            var fds = [
                pollfd(fd: files, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: dropFilesystemsSignal.fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: fsGroup, events: Int16(POLLIN), revents: 0),
            ]
            _ = try systemCall("poll(fanotify)") { poll(&fds, fsGroup >= 0 ? 4 : 3, -1) }
            if fds[1].revents != 0 { return }
            if fds[2].revents != 0 {
                var count: UInt64 = 0
                _ = read(dropFilesystemsSignal.fd, &count, 8)
                filesystems.withLock { group in
                    // Closing the group lets every pending exec through and removes its marks.
                    if group >= 0 { close(group) }
                    group = -1
                }
                continue
            }
            for (index, group) in [(0, files), (3, fsGroup)] where group >= 0 && fds[index].revents != 0 {
                try drain(group, throughFilesystem: index == 3, buffer: &buffer) { request in
                    deciding.withLock { $0 = true }
                    timerfd_settime(timer, 0, &arm, nil)
                    let started = ContinuousClock.now
                    let answer = decide(request)
                    answered(in: ContinuousClock.now - started)
                    timerfd_settime(timer, 0, &disarm, nil)
                    deciding.withLock { $0 = false }
                    return answer
                }
            }
        }
    }

    /// Reads what a group has waiting and answers each event.
    private func drain(
        _ group: Int32, throughFilesystem: Bool, buffer: inout [UInt8], _ decide: (Request) -> Bool
    ) throws(SystemError) {
        let headerSize = MemoryLayout<fanotify_event_metadata>.size
        let length = retryingInterrupts { buffer.withUnsafeMutableBytes { read(group, $0.baseAddress, $0.count) } }
        if length < 0 {
            if errno == EAGAIN { return }
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
            let kind: Kind? =
                event.mask & UInt64(FAN_OPEN_EXEC_PERM) != 0
                ? .exec : event.mask & UInt64(FAN_OPEN_PERM) != 0 ? .open : nil
            let allow =
                kind.map {
                    decide(Request(tid: event.pid, file: event.fd, kind: $0, throughFilesystem: throughFilesystem))
                } ?? true
            var response = fanotify_response(fd: event.fd, response: UInt32(allow ? FAN_ALLOW : FAN_DENY))
            // An answer the watchdog gave already makes this one fail (ENOENT): nothing to do.
            _ = write(group, &response, MemoryLayout<fanotify_response>.size)
            close(event.fd)
        }
    }

    /// Waits for the timer the gate arms around each decision; when it fires, answers what is
    /// waiting with `fallback` until the gate's decision is done.
    private func watch(fallback: @Sendable (Request) -> Bool) {
        var buffer = [UInt8](repeating: 0, count: 8192)
        while !stopSignal.isRaised {
            var fds = [
                pollfd(fd: timer, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
            ]
            guard retryingInterrupts({ poll(&fds, 2, -1) }) >= 0 else { return }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            var expirations: UInt64 = 0
            _ = read(timer, &expirations, 8)
            stalled.store(true, ordering: .relaxed)
            // Answer for the gate while its decision lasts.
            while deciding.withLock({ $0 }), !stopSignal.isRaised {
                let fsGroup = filesystems.withLock { $0 }
                for (group, throughFilesystem) in [(files, false), (fsGroup, true)] where group >= 0 {
                    try? drain(group, throughFilesystem: throughFilesystem, buffer: &buffer, fallback)
                }
                usleep(20_000)
            }
        }
    }

    /// Makes `run` return; safe from any thread.
    public func stop() {
        stopSignal.raise()
    }
}
