import CLauncher
import CLinuxShim
import FoundationEssentials
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
        /// The guardians' dashboard (`screentime-web`), as the dashboard's account only, on the
        /// machine's network, for as long as a guardian keeps it on.
        case dashboard
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
    /// `extensionUID` is the extension account's (nil: there is none, and no extension starts);
    /// `dashboardUID` the dashboard's (nil: the dashboard cannot start).
    public func validate(extensionUID: UInt32?, dashboardUID: UInt32? = nil) throws(SystemError) {
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
        case .dashboard:
            guard let dashboardUID, dashboardUID != extensionUID else {
                throw refuse("there is no dashboard account: the dashboard cannot start")
            }
            guard uid == dashboardUID, gid != 0, groups.isEmpty else {
                throw refuse(
                    "the dashboard runs as its own account (uid \(dashboardUID)) with no other group, not uid \(uid)")
            }
            guard network == .inherit else { throw refuse("the dashboard runs on the machine's network") }
        case .session:
            guard uid >= Self.firstPersonUID, uid != extensionUID, uid != dashboardUID, uid < 60_000 else {
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
