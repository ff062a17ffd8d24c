import Glibc
import Synchronization

/// What `/proc` tells about a process that can say which application it is: its owner, its
/// cgroup (the systemd unit its desktop started it in), the desktop file GIO launched it from,
/// its Flatpak ID, its executable and its command line.
///
/// Reads a `/proc` given by its root, so tests point it at a fixture tree; the agent reads the
/// real one (as root: another user's `environ` and `exe` need CAP_SYS_PTRACE). A process that is
/// gone, or a file that cannot be read, gives what could be read; nothing here throws.
///
/// Two kinds of reads: what the kernel answers from its own records (`status`, `stat`,
/// `cgroup`, where `exe` and `root` point, their `stat`) takes microseconds whatever the process
/// does, and may be made on the real-time thread; what comes from the process's memory or its
/// files (`cmdline`, `environ`, `.flatpak-info` in its root, a script it names) is the child's to
/// shape, and is read only by the agent's judges, off every lock, with a deadline.
public struct ProcessInspector: Sendable {
    public struct Evidence: Sendable, Hashable {
        public var pid: Int32
        /// The real uid (`Uid:` in status).
        public var uid: UInt32?
        /// The parent's pid (`PPid:` in status).
        public var parent: Int32?
        /// The unified hierarchy's line of `cgroup` (`0::/user.slice/…`), or the first line.
        public var cgroup: String?
        /// `GIO_LAUNCHED_DESKTOP_FILE` from the environment: the desktop file it was launched from.
        public var launchedDesktopFile: String?
        /// The `Application` `name=` of `root/.flatpak-info`, for a Flatpak sandbox.
        public var flatpakID: String?
        /// Where `exe` points (` (deleted)` kept when the file is gone).
        public var executable: String?
        public var commandLine: [String]
    }

    public let root: String

    /// This process's pid.
    public static var currentProcess: Int32 { getpid() }

    public init(root: String = "/proc") { self.root = root }

    /// Every process's pid, as listed now.
    public func pids() -> [Int32] {
        Self.numberedEntries(of: root).filter { $0 > 0 }.sorted()
    }

    /// The entries of a directory whose names are numbers (`/proc`'s processes, a process's
    /// `task` threads); empty when it cannot be opened.
    static func numberedEntries(of path: String) -> [Int32] {
        var numbers: [Int32] = []
        eachNumberedEntry(of: path) { number in
            numbers.append(number)
            return false
        }
        return numbers
    }

    /// Gives `body` each entry of a directory whose name is a number, in the directory's order,
    /// until it says stop (true).
    static func eachNumberedEntry(of path: String, _ body: (Int32) -> Bool) {
        guard let directory = opendir(path) else { return }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if let number = Int32(name), body(number) { return }
        }
    }

    /// A process's real uid and parent (`Uid:` and `PPid:` of `status`): the one read made for
    /// every exec on the machine. Nil when the process is gone.
    public func status(pid: Int32) -> (uid: UInt32, parent: Int32?)? {
        guard let status = KernelRecord.read("\(root)/\(pid)/status"),
            let uid = KernelRecord.number(KernelRecord.field(status, "Uid:"), as: UInt32.self)
        else { return nil }
        return (uid, KernelRecord.number(KernelRecord.field(status, "PPid:"), as: Int32.self))
    }

    /// A task's thread group (the process a thread belongs to) and real uid, from one read of
    /// `status`: what the exec gate asks of every exec. Nil when the task is gone.
    public func task(_ tid: Int32) -> (threadGroup: Int32, uid: UInt32)? {
        guard let status = KernelRecord.read("\(root)/\(tid)/status"),
            let group = KernelRecord.number(KernelRecord.field(status, "Tgid:"), as: Int32.self),
            let uid = KernelRecord.number(KernelRecord.field(status, "Uid:"), as: UInt32.self)
        else { return nil }
        return (group, uid)
    }

    /// What can be read of a process now; nil when it is gone. `status` is what `status(pid:)`
    /// gave, when the caller has read it already.
    public func evidence(pid: Int32, status known: (uid: UInt32, parent: Int32?)? = nil) -> Evidence? {
        guard let status = known ?? status(pid: pid) else { return nil }
        var evidence = Evidence(pid: pid, uid: status.uid, parent: status.parent, commandLine: [])
        evidence.cgroup = cgroup(pid: pid)
        evidence.launchedDesktopFile = launchedDesktopFile(pid: pid)
        evidence.flatpakID = flatpakID(pid: pid)
        evidence.executable = executable(pid: pid)
        evidence.commandLine = commandLine(pid: pid)
        return evidence
    }

    /// The thread group (process) a thread belongs to (`Tgid:` of `status`); `/proc/TID` exists
    /// for every thread, listed or not.
    public func threadGroup(of tid: Int32) -> Int32? {
        guard let status = KernelRecord.read("\(root)/\(tid)/status") else { return nil }
        return KernelRecord.number(KernelRecord.field(status, "Tgid:"), as: Int32.self)
    }

    /// The unified line of `cgroup` (`0::/user.slice/…`), or the first line. Kernel-made.
    public func cgroup(pid: Int32) -> String? {
        guard let cgroup = KernelRecord.read("\(root)/\(pid)/cgroup") else { return nil }
        let lines = cgroup.split(separator: UInt8(ascii: "\n"))
        let unified = Array("0::".utf8)
        return (lines.first { $0.starts(with: unified) } ?? lines.first).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Where `exe` points (` (deleted)` kept when the file is gone). Kernel-made.
    public func executable(pid: Int32) -> String? {
        link("\(root)/\(pid)/exe") ?? leaderGone(pid).flatMap { link($0 + "/exe") }
    }

    /// The status of the process's executable file (`stat` through `exe`, which reaches it even
    /// when renamed or deleted). The file was executed, so it is no FIFO; on FUSE, root is refused.
    public func executableStatus(pid: Int32) -> FileStatus? {
        FileStatus.of(path: "\(root)/\(pid)/exe") ?? leaderGone(pid).flatMap { FileStatus.of(path: $0 + "/exe") }
    }

    /// The status of the process's root directory: another than the agent's means a sandbox or a
    /// chroot, whose files (`.flatpak-info`) are worth reading.
    public func rootStatus(pid: Int32) -> FileStatus? {
        FileStatus.of(path: "\(root)/\(pid)/root") ?? leaderGone(pid).flatMap { FileStatus.of(path: $0 + "/root") }
    }

    /// The command line (the process's own memory: the judges' read).
    public func commandLine(pid: Int32) -> [String] {
        guard let arguments = memory("cmdline", of: pid) else { return [] }
        return arguments.split(separator: 0, omittingEmptySubsequences: false).dropLast().map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// `GIO_LAUNCHED_DESKTOP_FILE` of the environment (the process's own memory).
    public func launchedDesktopFile(pid: Int32) -> String? {
        guard let environment = memory("environ", of: pid) else { return nil }
        var found: String?
        for entry in environment.split(separator: 0) where entry.starts(with: Self.desktopFileKey) {
            found = String(decoding: entry.dropFirst(Self.desktopFileKey.count), as: UTF8.self)
        }
        return found
    }

    /// Whether the environment asks the dynamic loader, or a library the program uses, to load
    /// code of the caller's choosing into it (`LD_PRELOAD`, `LD_AUDIT`, `LD_LIBRARY_PATH`; GIO,
    /// GTK, GStreamer, Qt and Mesa module paths); nil when it cannot be read.
    public func loadsOwnCode(pid: Int32) -> Bool? {
        guard let environment = memory("environ", of: pid) else { return nil }
        return environment.split(separator: 0).contains { entry in
            Self.loaderKeys.contains { entry.starts(with: $0) }
        }
    }

    static let loaderKeys = [
        "LD_PRELOAD=", "LD_AUDIT=", "LD_LIBRARY_PATH=", "GIO_EXTRA_MODULES=", "GIO_MODULE_DIR=", "GTK_MODULES=",
        "GTK3_MODULES=", "GTK_PATH=", "GTK_EXE_PREFIX=", "GTK_IM_MODULE_FILE=", "GDK_PIXBUF_MODULE_FILE=",
        "GDK_PIXBUF_MODULEDIR=", "GST_PLUGIN_PATH=", "GST_PLUGIN_PATH_1_0=", "GST_PLUGIN_SYSTEM_PATH=",
        "GST_PLUGIN_SYSTEM_PATH_1_0=", "QT_PLUGIN_PATH=", "QT_QPA_PLATFORM_PLUGIN_PATH=", "LIBGL_DRIVERS_PATH=",
        "LIBVA_DRIVERS_PATH=", "VDPAU_DRIVER_PATH=", "GBM_BACKENDS_PATH=", "__EGL_VENDOR_LIBRARY_DIRS=",
        "__EGL_VENDOR_LIBRARY_FILENAMES=", "VK_ICD_FILENAMES=", "VK_DRIVER_FILES=", "VK_ADD_DRIVER_FILES=",
        "VK_LAYER_PATH=", "VK_INSTANCE_LAYERS=", "GCONV_PATH=", "GI_TYPELIB_PATH=", "PYTHONPATH=", "PYTHONHOME=",
        "PYTHONSTARTUP=", "PERL5LIB=", "PERL5OPT=", "NODE_OPTIONS=", "LUA_CPATH=",
    ].map { Array($0.utf8) }

    /// Whether code not from `directories` is mapped into the process: an executable mapping of
    /// `/proc/PID/maps` of a file elsewhere (a library of the caller's, loaded by `dlopen`, a GTK
    /// or X module). Code of no file (a JIT's, or written into memory by a debugger) is not told
    /// apart. nil when the maps cannot be read.
    public func runsForeignCode(pid: Int32, directories: [String]) -> Bool? {
        guard let maps = memory("maps", of: pid, limit: 4 << 20) else { return nil }
        for line in maps.split(separator: 0x0A) {
            // address perms offset device inode [path]
            let fields = line.split(separator: 0x20, maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[1].count == 4, fields[1][fields[1].startIndex + 2] == UInt8(ascii: "x")
            else { continue }
            // No file, or the kernel's own (`[vdso]`, `[vsyscall]`).
            guard fields.count == 6 else { continue }
            var path = String(decoding: fields[5].drop { $0 == 0x20 }, as: UTF8.self)
            if path.hasPrefix("[") { continue }
            // A system file replaced under a running program (an upgrade) is still the system's.
            if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
            guard !path.contains("/../"), directories.contains(where: path.hasPrefix) else { return true }
        }
        return false
    }

    /// The mount namespace a process is in (`mnt:[4026531841]`), as its `ns/mnt` link names it.
    public func mountNamespace(pid: Int32) -> String? { link("\(root)/\(pid)/ns/mnt") }

    /// The pid of the process tracing it (`TracerPid:` in status), 0 when none.
    public func tracer(pid: Int32) -> Int32? {
        guard let status = KernelRecord.read("\(root)/\(pid)/status") else { return nil }
        return KernelRecord.number(KernelRecord.field(status, "TracerPid:"), as: Int32.self)
    }

    /// The variables of the environment that name a graphical session (`DISPLAY`, `XAUTHORITY`,
    /// `WAYLAND_DISPLAY`, `SWAYSOCK`, `XDG_RUNTIME_DIR`): hints the process's own memory gives,
    /// to be checked before they are believed.
    public func sessionEnvironment(pid: Int32) -> [String: String] {
        guard let environment = memory("environ", of: pid) else { return [:] }
        var found: [String: String] = [:]
        for entry in environment.split(separator: 0) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")), equals - entry.startIndex <= 24 else {
                continue
            }
            let key = String(decoding: entry[..<equals], as: UTF8.self)
            guard Self.sessionKeys.contains(key) else { continue }
            found[key] = String(decoding: entry[(equals + 1)...].prefix(4096), as: UTF8.self)
        }
        return found
    }

    static let sessionKeys: Set<String> = [
        "DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "SWAYSOCK", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
    ]

    /// The `Application` `name=` of `.flatpak-info` in the process's root: a file of a sandbox the
    /// child may have made itself, so read as an `UntrustedFile`, its last component not followed.
    public func flatpakID(pid: Int32) -> String? {
        guard
            let bytes = try? UntrustedFile.read(
                file("root", of: pid) + "/.flatpak-info", limit: 64 << 10, followingSymlinks: false)
        else { return nil }
        var inApplication = false
        var found: String?
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("[") { inApplication = line == "[Application]" }
            if inApplication, line.hasPrefix("name=") { found = String(line.dropFirst(5)) }
        }
        return found
    }

    /// When the process started, in clock ticks since boot (field 22 of `stat`): with the pid, it
    /// names one process even after the pid is reused.
    public func startTime(pid: Int32) -> UInt64? {
        guard let stat = KernelRecord.read("\(root)/\(pid)/stat"), let fields = KernelRecord.statFields(stat),
            fields.count > 19
        else { return nil }
        return KernelRecord.number(fields[19], as: UInt64.self)
    }

    /// Kernel functions a task sleeps in only on its way back to user space, its system call
    /// over: frozen (cgroup v2's trap, which the compiler may fold into `get_signal`; the v1
    /// freezer's refrigerator), stopped, or stopped for a tracer.
    static let parkedOnTheWayOut: Set<String> = [
        "do_freezer_trap", "get_signal", "arch_do_signal_or_restart", "__refrigerator", "do_signal_stop",
        "ptrace_stop",
    ]

    /// Whether no thread of a process is inside a system call any more: each of its threads is
    /// parked on its way back to user space (`parkedOnTheWayOut`, read from
    /// `/proc/PID/task/TID/wchan`) or has ended, and so has the process when none is left. False
    /// while any thread runs or sleeps anywhere else (an exec from a second thread waits in the
    /// kernel for its siblings to end, the first one already a zombie: the attack of 2026-12-02
    /// ptraced a sibling so that it waited for seconds), and when the kernel does not say.
    public func isPastItsSystemCall(pid: Int32) -> Bool {
        for thread in threads(pid: pid) {
            let task = "\(root)/\(pid)/task/\(thread)"
            guard let state = Self.stateLetter(task + "/stat") else { continue }
            if state == UInt8(ascii: "Z") || state == UInt8(ascii: "X") { continue }
            guard let bytes = KernelRecord.read(task + "/wchan", limit: 128) else { return false }
            let symbol = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            if !Self.parkedOnTheWayOut.contains(symbol) { return false }
        }
        return true
    }

    /// The threads of a process (`/proc/PID/task`); empty when it is gone.
    func threads(pid: Int32) -> [Int32] { Self.numberedEntries(of: "\(root)/\(pid)/task") }

    /// The scheduler state letter of a process (`R`, `S`, `D`, `T` stopped, `t` traced, `Z`…).
    public func state(pid: Int32) -> Character? {
        Self.stateLetter("\(root)/\(pid)/stat").map { Character(Unicode.Scalar($0)) }
    }

    /// The state letter of a `stat` record (a process's, or one thread's under `task`).
    static func stateLetter(_ path: String) -> UInt8? {
        KernelRecord.read(path).flatMap { KernelRecord.statFields($0)?.first?.first }
    }

    /// Where a file of the process's is read: `/proc/PID/NAME`, or, when its leader thread ended
    /// first (a zombie whose other threads run on, its `exe`, `root`, `environ` and `maps` gone
    /// with it), the same file of a live thread of it.
    /// (One `access` more than the direct path: for callers handed a path, hashing and the gate.)
    public func file(_ name: String, of pid: Int32) -> String {
        let direct = "\(root)/\(pid)/" + name
        guard access(direct, F_OK) != 0, let thread = leaderGone(pid) else { return direct }
        return thread + "/" + name
    }

    /// A live thread's directory of a process whose leader thread ended first; nil otherwise.
    /// (Also where `FreezerCgroup.group` reads such a process's group.)
    func leaderGone(_ pid: Int32) -> String? {
        guard state(pid: pid) == "Z", let other = otherThread(pid: pid) else { return nil }
        return "\(root)/\(pid)/task/\(other)"
    }

    /// A file of the process's memory (`environ`, `cmdline`, `maps`): a zombie leader's are
    /// there and empty, so an empty read is read again through a live thread.
    private func memory(_ name: String, of pid: Int32, limit: Int = 1 << 20) -> [UInt8]? {
        let direct = bytes("\(root)/\(pid)/" + name, limit: limit)
        guard direct?.isEmpty != false, let thread = leaderGone(pid) else { return direct }
        return bytes(thread + "/" + name, limit: limit)
    }

    /// Whether the process has a thread besides its leader (`/proc/PID/task`): when the leader
    /// thread ends first (`pthread_exit` in main) the process runs on, its leader a zombie.
    public func hasOtherThreads(pid: Int32) -> Bool { otherThread(pid: pid) != nil }

    /// A thread of the process other than its leader, if any.
    public func otherThread(pid: Int32) -> Int32? {
        var other: Int32?
        // (The first found is enough: this runs at each exit of a tracked process.)
        Self.eachNumberedEntry(of: "\(root)/\(pid)/task") { thread in
            if thread != pid { other = thread }
            return other != nil
        }
        return other
    }

    /// Whether the process is in the foreground process group of its controlling terminal (a
    /// job a shell waits for: stopping it with SIGSTOP would make the shell take the terminal
    /// back). Fields 5 (`pgrp`), 7 (`tty_nr`) and 8 (`tpgid`) of `stat`.
    public func isTerminalForeground(pid: Int32) -> Bool {
        guard let stat = KernelRecord.read("\(root)/\(pid)/stat"), let fields = KernelRecord.statFields(stat),
            fields.count > 5, let group = KernelRecord.number(fields[2], as: Int32.self),
            let terminal = KernelRecord.number(fields[4], as: Int32.self),
            let foreground = KernelRecord.number(fields[5], as: Int32.self)
        else { return false }
        return terminal != 0 && foreground == group
    }

    /// A path as the process sees it (its root, its working directory, its descriptors), for
    /// root to open: `/proc/PID/root/usr/games/x`, `/proc/PID/cwd/x`, `/proc/PID/fd/3`.
    public func pathSeen(by pid: Int32, _ path: String) -> String {
        let directory = "\(root)/\(pid)"
        for prefix in ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/proc/\(pid)/fd/"]
        where path.hasPrefix(prefix) {
            return directory + "/fd/" + path.dropFirst(prefix.count)
        }
        return path.hasPrefix("/") ? directory + "/root" + path : directory + "/cwd/" + path
    }

    private static let desktopFileKey = Array("GIO_LAUNCHED_DESKTOP_FILE=".utf8)

    private func bytes(_ path: String, limit: Int = 1 << 20) -> [UInt8]? { try? Files.read(path, limit: limit) }

    private func text(_ path: String) -> String? { bytes(path).map { String(decoding: $0, as: UTF8.self) } }

    private func link(_ path: String) -> String? { Files.readLink(path) }
}
