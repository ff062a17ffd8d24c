import CLauncher
import CLinuxShim
import Foundation
import Glibc
import Synchronization

/// What the launcher is asked to start, one of exactly two kinds: a session program (the shield
/// window, a focus helper) as a person's account inside that person's session, or an extension
/// as the extension account, in an empty network namespace, within time and memory limits. Either
/// with exactly this environment and these groups, never as root.
///
/// The agent drops the capabilities that starting a process as someone else needs (`setuid`,
/// `setgid`, and `sys_admin` for a network namespace) for good. Before it does, it starts the
/// launcher — `screentimed --launcher 3`, a process of its own that keeps only those, `kill`, and
/// `net_admin` for the namespace's loopback — which takes these requests from the agent alone, over a socket pair, and does
/// nothing else.
public struct LaunchRequest: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable {
        /// A program in a person's graphical session, as that person (a uid from `UID_MIN`).
        case session
        /// A guardian app's extension, as the extension account only: no network, a wall-time
        /// and a memory limit always.
        case `extension`
    }

    public enum Network: String, Codable, Sendable, Hashable {
        /// The launcher's (the machine's) network.
        case inherit
        /// A new, empty network namespace: loopback (up, so a program can talk to itself) and no
        /// route out.
        case none
    }

    /// Limits on what it may use; nil leaves the launcher's (the system's defaults).
    public struct Limits: Codable, Sendable, Hashable {
        /// CPU time (`RLIMIT_CPU`): SIGKILL when used up.
        public var cpuSeconds: Int?
        /// Address space (`RLIMIT_AS`).
        public var memoryBytes: Int?
        /// Processes of its uid (`RLIMIT_NPROC`).
        public var processes: Int?
        /// Open descriptors (`RLIMIT_NOFILE`).
        public var openFiles: Int?
        /// Time since it started: the launcher kills it (SIGKILL) after that.
        public var wallSeconds: Int?

        public init(
            cpuSeconds: Int? = nil, memoryBytes: Int? = nil, processes: Int? = nil, openFiles: Int? = nil,
            wallSeconds: Int? = nil
        ) {
            self.cpuSeconds = cpuSeconds
            self.memoryBytes = memoryBytes
            self.processes = processes
            self.openFiles = openFiles
            self.wallSeconds = wallSeconds
        }
    }

    public var kind: Kind
    /// An absolute path.
    public var program: String
    /// The arguments after the program (its `argv[0]` is the program).
    public var arguments: [String]
    /// Exactly the environment it gets; nothing of the launcher's.
    public var environment: [String: String]
    /// Its working directory, absolute.
    public var directory: String
    public var uid: UInt32
    public var gid: UInt32
    /// Its supplementary groups, exactly.
    public var groups: [UInt32]
    public var network: Network
    public var limits: Limits
    /// The numbers (0 to 9) the descriptors sent with the request get in the program, in order:
    /// `[0, 1, 3]` makes the first its standard input, the second its output, the third its fd 3.
    /// Standard input, output and error not given are /dev/null.
    public var descriptors: [Int32]

    public init(
        kind: Kind, program: String, arguments: [String] = [], environment: [String: String] = [:],
        directory: String = "/", uid: UInt32, gid: UInt32, groups: [UInt32] = [], network: Network = .none,
        limits: Limits = Limits(), descriptors: [Int32] = []
    ) {
        self.kind = kind
        self.program = program
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.network = network
        self.limits = limits
        self.descriptors = descriptors
    }

    private enum CodingKeys: String, CodingKey {
        case kind, program, arguments, environment, directory, uid, gid, groups, network, limits, descriptors
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(Kind.self, forKey: .kind)
        program = try container.decode(String.self, forKey: .program)
        arguments = try container.decode([String].self, forKey: .arguments)
        environment = try container.decode([String: String].self, forKey: .environment)
        directory = try container.decode(String.self, forKey: .directory)
        uid = try container.decode(UInt32.self, forKey: .uid)
        gid = try container.decode(UInt32.self, forKey: .gid)
        groups = try container.decode([UInt32].self, forKey: .groups)
        network = try container.decode(Network.self, forKey: .network)
        limits = try container.decode(Limits.self, forKey: .limits)
        descriptors = try container.decodeIfPresent([Int32].self, forKey: .descriptors) ?? []
    }

    public static let maximumArguments = 256
    /// The most descriptors a program is handed.
    public static let maximumDescriptors = 8
    public static let maximumVariables = 256
    public static let maximumLength = 16_384
    public static let maximumGroups = 64

    /// The first uid of people's accounts (Debian's `UID_MIN`).
    public static let firstPersonUID: UInt32 = 1000

    /// Throws what is wrong with the request, in words; the launcher starts nothing then.
    /// `extensionUID` is the extension account's (nil: there is none, and no extension starts).
    public func validate(extensionUID: UInt32?) throws(SystemError) {
        func refuse(_ why: String) -> SystemError { SystemError(.launch, why) }
        switch kind {
        case .extension:
            guard let extensionUID else { throw refuse("there is no extension account: extensions cannot start") }
            guard uid == extensionUID else {
                throw refuse("an extension runs as the extension account (uid \(extensionUID)) only, not uid \(uid)")
            }
            guard network == .none else { throw refuse("an extension runs without network") }
            guard limits.wallSeconds != nil, limits.memoryBytes != nil else {
                throw refuse("an extension runs with a wall-time and a memory limit")
            }
        case .session:
            guard uid >= Self.firstPersonUID, uid != extensionUID, uid < 60_000 else {
                throw refuse(
                    "a session program runs as a person's account (uid \(Self.firstPersonUID)–59999), not uid \(uid)")
            }
        }
        guard program.hasPrefix("/"), program.utf8.count <= 4096 else {
            throw refuse("the program must be an absolute path, not '\(program.prefix(200))'")
        }
        guard directory.hasPrefix("/"), directory.utf8.count <= 4096 else {
            throw refuse("the directory must be an absolute path, not '\(directory.prefix(200))'")
        }
        guard uid != 0, gid != 0, !groups.contains(0) else {
            throw refuse("the launcher starts nothing as root (uid, gid or a group 0)")
        }
        guard uid != UInt32.max, gid != UInt32.max, !groups.contains(UInt32.max) else {
            throw refuse("uid, gid and groups must be real ids, not -1")
        }
        guard groups.count <= Self.maximumGroups else { throw refuse("at most \(Self.maximumGroups) groups") }
        guard descriptors.count <= Self.maximumDescriptors, Set(descriptors).count == descriptors.count,
            descriptors.allSatisfy({ (0...9).contains($0) })
        else {
            throw refuse("descriptors are at most \(Self.maximumDescriptors) distinct numbers from 0 to 9")
        }
        guard arguments.count <= Self.maximumArguments, environment.count <= Self.maximumVariables else {
            throw refuse("at most \(Self.maximumArguments) arguments and \(Self.maximumVariables) variables")
        }
        let strings = [program, directory] + arguments + environment.keys + environment.values
        guard strings.allSatisfy({ !$0.utf8.contains(0) && $0.utf8.count <= Self.maximumLength }) else {
            throw refuse("a string holds a NUL byte or is longer than \(Self.maximumLength) bytes")
        }
        for name in environment.keys {
            let bytes = Array(name.utf8)
            let valid =
                !bytes.isEmpty && !(bytes[0] >= UInt8(ascii: "0") && bytes[0] <= UInt8(ascii: "9"))
                && bytes.allSatisfy { byte in
                    byte == UInt8(ascii: "_") || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                        || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                }
            guard valid else { throw refuse("'\(name.prefix(100))' is not an environment variable name") }
        }
        let bounds: [(String, Int?, ClosedRange<Int>)] = [
            ("cpuSeconds", limits.cpuSeconds, 1...86_400), ("memoryBytes", limits.memoryBytes, (16 << 20)...(1 << 40)),
            ("processes", limits.processes, 1...65_536), ("openFiles", limits.openFiles, 3...1_048_576),
            ("wallSeconds", limits.wallSeconds, 1...2_592_000),
        ]
        for (name, value, range) in bounds {
            if let value, !range.contains(value) {
                throw refuse("\(name) is from \(range.lowerBound) to \(range.upperBound), not \(value)")
            }
        }
    }
}

/// One message on the launcher's socket pair (a datagram of JSON): the launcher says `ready`
/// once it kept only its capabilities; the agent sends `launch`; the launcher answers `started`
/// or `refused`, and says `exited` when a program it started ends.
struct LauncherMessage: Codable, Sendable {
    struct Exit: Codable, Sendable {
        var pid: Int32
        /// The exit status, or 128 + the signal that ended it.
        var status: Int32
    }

    var ready: Int32?
    var launch: LaunchRequest?
    var started: Int32?
    var refused: String?
    var exited: Exit?
    /// The agent asks that a program the launcher started be killed now (no answer; its `exited`
    /// follows).
    var stop: Int32?
    /// The request a `launch` is, and a `started` or `refused` answers.
    var id: UInt64?

    /// Larger is refused (a datagram must fit the socket's buffer anyway).
    static let maximumSize = 65_536

    /// Exactly one of the known keys, or an error that says what was wrong.
    static func decode(_ bytes: [UInt8]) throws(SystemError) -> LauncherMessage {
        let object = try? JSONSerialization.jsonObject(with: Data(bytes))
        let known = ["ready", "launch", "started", "refused", "exited", "stop"]
        guard let keys = (object as? [String: Any])?.keys.filter({ $0 != "id" }), keys.count == 1,
            let key = keys.first, known.contains(key)
        else {
            throw SystemError(.launch, "not a launcher message (one of launch, started, refused, exited)")
        }
        do {
            return try JSONDecoder().decode(LauncherMessage.self, from: Data(bytes))
        } catch {
            throw SystemError(.launch, "a malformed '\(key)' message: \(error)")
        }
    }

    func encoded() -> [UInt8] { Array((try? JSONEncoder().encode(self)) ?? Data()) }
}

/// The launcher process: `screentimed --launcher FD` runs `Launcher.serve(socket: FD)`.
public enum Launcher {
    /// All it keeps: start a process as someone else, in a network namespace of its own (whose
    /// loopback it brings up: `net_admin`), and kill it when its time is up.
    public static let capabilities: Set<Capabilities.Name> = [.setUID, .setGID, .sysAdmin, .netAdmin, .kill]

    /// Serves the agent's requests until the agent closes its end (or dies); returns the exit
    /// status for the process. What it started dies with it.
    public static func serve(socket fd: Int32, extensionUID: UInt32?) -> Int32 {
        func say(_ text: String) { _ = "screentimed launcher: \(text)\n".withCString { write(2, $0, strlen($0)) } }
        guard screentime_die_with_parent() == 0 else {
            say("cannot tie itself to the agent: \(String(cString: strerror(errno)))")
            return 71
        }
        do {
            try Capabilities.restrict(to: capabilities)
        } catch {
            say("cannot keep only its capabilities: \(error.message)")
            return 71
        }
        var server = LauncherServer(socket: fd, extensionUID: extensionUID)
        server.send(LauncherMessage(ready: getpid()))
        server.run()
        return 0
    }
}

/// The launcher's loop: one thread, no Dispatch (it forks), polling the socket and a pidfd per
/// program it started.
struct LauncherServer {
    struct Child {
        var pidfd: Int32
        var deadline: ContinuousClock.Instant?
    }

    let socket: Int32
    let extensionUID: UInt32?
    var children: [Int32: Child] = [:]

    init(socket: Int32, extensionUID: UInt32?) {
        self.socket = socket
        self.extensionUID = extensionUID
    }

    mutating func run() {
        var buffer = [UInt8](repeating: 0, count: LauncherMessage.maximumSize + 1)
        while true {
            let pids = Array(children.keys)
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            fds += pids.map { pollfd(fd: children[$0]!.pidfd, events: Int16(POLLIN), revents: 0) }
            let now = ContinuousClock.now
            let nearest = children.values.compactMap(\.deadline).min()
            let timeout =
                nearest.map { deadline -> Int32 in
                    let (seconds, attoseconds) = now.duration(to: deadline).components
                    return max(0, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
                } ?? -1
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            for (index, pid) in pids.enumerated() where fds[index + 1].revents != 0 { reap(pid) }
            let after = ContinuousClock.now
            for (pid, child) in children where child.deadline.map({ $0 <= after }) ?? false {
                _ = screentime_pidfd_send_signal(child.pidfd, SIGKILL)
                children[pid]?.deadline = nil
            }
            if fds[0].revents & Int16(POLLIN) != 0 {
                var files = [Int32](repeating: -1, count: LaunchRequest.maximumDescriptors + 1)
                var count: Int32 = 0
                let got = buffer.withUnsafeMutableBytes { bytes in
                    files.withUnsafeMutableBufferPointer { slots in
                        screentime_receive_with_descriptors(
                            socket, bytes.baseAddress, UInt(bytes.count), slots.baseAddress, Int32(slots.count), &count,
                            0)
                    }
                }
                let received = Array(files.prefix(Int(max(0, count))))
                defer { for fd in received { close(fd) } }
                if got == 0 { break }
                if got < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    break
                }
                answer(got > LauncherMessage.maximumSize ? nil : Array(buffer[..<got]), files: received)
            } else if fds[0].revents != 0 {
                break  // the agent's end is closed
            }
        }
        for child in children.values { _ = screentime_pidfd_send_signal(child.pidfd, SIGKILL) }
    }

    private mutating func answer(_ bytes: [UInt8]?, files: [Int32]) {
        guard let bytes else {
            send(LauncherMessage(refused: "a message larger than \(LauncherMessage.maximumSize) bytes"))
            return
        }
        let request: LaunchRequest
        var id: UInt64?
        do throws(SystemError) {
            let message = try LauncherMessage.decode(bytes)
            id = message.id
            if let pid = message.stop {
                // Only a program of its own, by the pidfd it holds: a pid reused since is not it.
                if let child = children[pid] { _ = screentime_pidfd_send_signal(child.pidfd, SIGKILL) }
                return
            }
            guard let launch = message.launch else {
                throw SystemError(.launch, "the launcher takes 'launch' messages only")
            }
            try launch.validate(extensionUID: extensionUID)
            guard launch.descriptors.count == files.count else {
                throw SystemError(
                    .launch, "\(launch.descriptors.count) descriptors named, \(files.count) sent with the request")
            }
            request = launch
        } catch {
            send(LauncherMessage(refused: error.message, id: id))
            return
        }
        switch start(request, files: files) {
        case .success(let pid): send(LauncherMessage(started: pid, id: id))
        case .failure(let error): send(LauncherMessage(refused: error.message, id: id))
        }
    }

    private mutating func start(_ request: LaunchRequest, files: [Int32]) -> Result<Int32, SystemError> {
        let argv = ([request.program] + request.arguments).map { strdup($0) } + [nil]
        let envp = request.environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var step: Int32 = 0
        var failure: Int32 = 0
        let groups = request.groups.map { gid_t($0) }
        let targets = request.descriptors
        let pid = request.program.withCString { program in
            request.directory.withCString { directory in
                groups.withUnsafeBufferPointer { groupList in
                    argv.withUnsafeBufferPointer { arguments in
                        envp.withUnsafeBufferPointer { environment in
                            files.withUnsafeBufferPointer { sources in
                                targets.withUnsafeBufferPointer { targets in
                                    var spec = screentime_launch_spec(
                                        program: program, arguments: arguments.baseAddress,
                                        environment: environment.baseAddress,
                                        directory: directory, uid: request.uid, gid: request.gid,
                                        groups: groupList.baseAddress, group_count: Int32(groupList.count),
                                        new_network: request.network == .none ? 1 : 0,
                                        cpu_seconds: Int64(request.limits.cpuSeconds ?? -1),
                                        memory_bytes: Int64(request.limits.memoryBytes ?? -1),
                                        processes: Int64(request.limits.processes ?? -1),
                                        open_files: Int64(request.limits.openFiles ?? -1),
                                        new_pid: request.kind == .extension ? 1 : 0,
                                        sources: sources.baseAddress, targets: targets.baseAddress,
                                        descriptor_count: Int32(targets.count))
                                    return screentime_launch(&spec, &step, &failure)
                                }
                            }
                        }
                    }
                }
            }
        }
        guard pid > 0 else {
            let steps = [
                "a pipe", "fork", "signals", "its parent", "a session", "a network namespace",
                "the loopback interface", "the limits",
                "/dev/null", "the groups", "the gid", "the uid", "the directory \(request.directory)",
                "exec \(request.program)", "its own /proc and /tmp", "the descriptors handed over",
            ]
            let what = step >= 1 && Int(step) <= steps.count ? steps[Int(step) - 1] : "step \(step)"
            return .failure(
                SystemError(.launch, "cannot start \(request.program): \(what): \(String(cString: strerror(failure)))"))
        }
        let pidfd = screentime_pidfd_open(pid)
        let deadline = request.limits.wallSeconds.map { ContinuousClock.now + .seconds($0) }
        if pidfd < 0 {
            // Too old a kernel for pidfds: it is the launcher's child, so its pid is its own
            // until reaped; kill it now rather than lose track of it.
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            return .failure(
                SystemError(.launch, "cannot watch \(request.program): pidfd_open: \(String(cString: strerror(errno)))")
            )
        }
        children[pid] = Child(pidfd: pidfd, deadline: deadline)
        return .success(pid)
    }

    private mutating func reap(_ pid: Int32) {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid, let child = children.removeValue(forKey: pid) else { return }
        close(child.pidfd)
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        send(LauncherMessage(exited: LauncherMessage.Exit(pid: pid, status: code)))
    }

    func send(_ message: LauncherMessage) {
        let bytes = message.encoded()
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, screentime_msg_nosignal()) }
    }
}

/// The agent's end of the launcher: starts it (before the capability drop) and asks it to start
/// programs. A thread of its own reads what the launcher says: answers go to the request they
/// answer (by id), and `exited` reports to whoever waits for that program — so a caller waiting
/// for one program to end holds up no other launch.
public final class LauncherClient: Sendable {
    /// The launcher's pid.
    public let pid: Int32
    /// The extension account's uid, as the launcher was told.
    public let extensionUID: UInt32?
    private let socket: Int32
    private let ended = Mutex(false)
    private let inbox = Inbox()
    private let readerStarted = Mutex(false)

    /// What the reader thread received, under one condition.
    private final class Inbox: @unchecked Sendable {
        let condition = NSCondition()
        // Guarded by `condition`.
        var answers: [UInt64: (pid: Int32?, refused: String?)] = [:]
        var exits: [Int32: Int32] = [:]
        var gone = false
        var nextID: UInt64 = 1
    }

    /// Starts `executable` with `arguments` and the launcher's end of a new socket pair as fd 3
    /// (`screentimed --launcher 3 [--extension-uid UID]`), its standard error the caller's.
    public static func start(
        executable: String, arguments: [String], extensionUID: UInt32?
    ) throws(SystemError) -> LauncherClient {
        var pair: [Int32] = [-1, -1]
        try systemCall("socketpair") {
            socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        }
        defer { close(pair[1]) }
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let pid: Int32
        do throws(SystemError) {
            pid = try ChildProcess.spawn(
                executable, arguments, environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], stdio: (null, null, 2),
                descriptors: [(pair[1], 3)])
        } catch {
            close(pair[0])
            throw SystemError(.launch, "cannot start the launcher: \(error.message)")
        }
        // Ready once it kept only its capabilities; one that cannot says so on standard error and ends.
        do throws(SystemError) {
            guard try Self.receive(pair[0], until: .now + .seconds(10)).ready == pid else {
                throw SystemError(.launch, "the launcher did not say it was ready")
            }
        } catch {
            close(pair[0])
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw error
        }
        // Its reader thread starts at the first request: the agent starts the launcher while it
        // has one thread, before it drops its capabilities (which belong to threads).
        return LauncherClient(pid: pid, socket: pair[0], extensionUID: extensionUID)
    }

    /// Starts the reader thread once.
    private func startReading() {
        let first = readerStarted.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let reader = Thread { [inbox, socket] in Self.read(socket, into: inbox) }
        reader.name = "screentime.launcher"
        reader.start()
    }

    private init(pid: Int32, socket: Int32, extensionUID: UInt32?) {
        self.pid = pid
        self.socket = socket
        self.extensionUID = extensionUID
    }

    deinit {
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }

    /// Whether the launcher has ended (it is reaped here, once: it is the caller's child).
    public var hasEnded: Bool {
        ended.withLock { ended in
            if !ended {
                var status: Int32 = 0
                ended = waitpid(pid, &status, WNOHANG) == pid
            }
            return ended
        }
    }

    /// Closes the agent's end: the launcher ends, and what it started dies with it.
    public func shutDown() { _ = Glibc.shutdown(socket, Int32(SHUT_RDWR)) }

    /// Asks the launcher to start a program, handing it `files` as `request.descriptors` say (they
    /// stay the caller's to close); returns its pid, or throws the launcher's refusal (or that it
    /// did not answer in time).
    public func launch(
        _ request: LaunchRequest, files: [Int32] = [], timeout: Duration = .seconds(10)
    ) throws(SystemError) -> Int32 {
        try request.validate(extensionUID: extensionUID)
        guard files.count == request.descriptors.count else {
            throw SystemError(.launch, "\(request.descriptors.count) descriptors named, \(files.count) given")
        }
        inbox.condition.lock()
        let id = inbox.nextID
        inbox.nextID += 1
        inbox.condition.unlock()
        let bytes = LauncherMessage(launch: request, id: id).encoded()
        guard bytes.count <= LauncherMessage.maximumSize else {
            throw SystemError(.launch, "the request is larger than \(LauncherMessage.maximumSize) bytes")
        }
        let answer = try exchange(bytes, id: id, files: files, timeout: timeout)
        if let started = answer.pid { return started }
        throw SystemError(.launch, answer.refused ?? "the launcher gave no answer")
    }

    /// Asks the launcher to kill a program it started (one that floods its output, say); a
    /// program that already ended is left alone. Its end is reported as usual.
    public func stop(_ pid: Int32) {
        let bytes = LauncherMessage(stop: pid).encoded()
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, screentime_msg_nosignal()) }
    }

    /// Sends raw bytes as one message and returns the launcher's answer to it (tests send what the
    /// agent never would; such an answer carries no id).
    public func sendRaw(
        _ bytes: [UInt8], timeout: Duration = .seconds(10)
    ) throws(SystemError) -> (pid: Int32?, refused: String?) {
        try exchange(bytes, id: 0, files: [], timeout: timeout)
    }

    /// Waits up to `timeout` for the program `pid` to end; its status (128 + signal when a
    /// signal ended it), or nil if it still runs.
    public func waitForExit(of pid: Int32, timeout: Duration) throws(SystemError) -> Int32? {
        startReading()
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        while true {
            if let status = inbox.exits.removeValue(forKey: pid) { return status }
            if inbox.gone { throw SystemError(.launch, "the launcher is gone") }
            guard inbox.condition.wait(until: deadline) else { return inbox.exits.removeValue(forKey: pid) }
        }
    }

    private func exchange(
        _ bytes: [UInt8], id: UInt64, files: [Int32], timeout: Duration
    ) throws(SystemError) -> (pid: Int32?, refused: String?) {
        startReading()
        let sent = bytes.withUnsafeBytes { raw in
            files.withUnsafeBufferPointer {
                screentime_send_with_descriptors(
                    socket, raw.baseAddress, UInt(raw.count), $0.baseAddress, Int32($0.count))
            }
        }
        guard sent == bytes.count else { throw SystemError.call("send(launcher)", errno) }
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        while true {
            if let answer = inbox.answers.removeValue(forKey: id) { return answer }
            if inbox.gone { throw SystemError(.launch, "the launcher is gone") }
            guard inbox.condition.wait(until: deadline) else {
                throw SystemError(.timedOut, "the launcher did not answer in time")
            }
        }
    }

    /// The reader thread: until the launcher is gone.
    private static func read(_ socket: Int32, into inbox: Inbox) {
        while true {
            let message: LauncherMessage
            do throws(SystemError) {
                message = try receive(socket, until: nil)
            } catch {
                if error.code == .launch, error.message.hasPrefix("the launcher is gone") { break }
                continue  // a message it could not read: not one this agent sent for
            }
            inbox.condition.lock()
            if let exited = message.exited {
                // Ends nobody waits for (a session program's) are not kept without bound.
                if inbox.exits.count >= 4_096, let any = inbox.exits.keys.first { inbox.exits[any] = nil }
                inbox.exits[exited.pid] = exited.status
            }
            if message.started != nil || message.refused != nil {
                inbox.answers[message.id ?? 0] = (message.started, message.refused)
            }
            inbox.condition.broadcast()
            inbox.condition.unlock()
        }
        inbox.condition.lock()
        inbox.gone = true
        inbox.condition.broadcast()
        inbox.condition.unlock()
    }

    private static func receive(
        _ socket: Int32, until deadline: ContinuousClock.Instant?
    ) throws(SystemError)
        -> LauncherMessage
    {
        var buffer = [UInt8](repeating: 0, count: LauncherMessage.maximumSize)
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
                milliseconds = max(0, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
            }
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw SystemError.call("poll(launcher)", errno)
            }
            guard ready > 0 else { throw SystemError(.timedOut, "the launcher did not answer in time") }
            let got = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw SystemError(.launch, "the launcher is gone") }
            return try LauncherMessage.decode(Array(buffer[..<got]))
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
