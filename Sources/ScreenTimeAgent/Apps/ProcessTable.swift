import FoundationEssentials
import LinuxSupport
import ScreenTimeCore

/// Why a process is held in the frozen group.
enum HoldReason: Sendable, Equatable {
    /// A shield on one of its applications.
    case shield(ApplicationToken?)
    /// It is being judged: what it runs needs a read the real-time thread must not make (a
    /// script, a file not hashed yet, a sandbox), or its judgement ran past its deadline.
    case judging
    /// Its judgement could not be made (the reads did not come back); it waits until they do.
    case unjudged
    /// Its user's sessions are locked (downtime or the day's screen time, with `--no-login`).
    case locked

    var token: ApplicationToken? {
        if case .shield(let token) = self { return token }
        return nil
    }

    var label: String {
        switch self {
        case .shield: "shielded"
        case .judging: "being judged"
        case .unjudged: "could not be judged"
        case .locked: "locked: sessions held (downtime, screen time used up, or a guardian's lock)"
        }
    }
}

/// A process held in the frozen group (or stopped, without a freezer).
struct Hold: Sendable {
    var reason: HoldReason
    /// The cgroup (in the freezer's hierarchy) it came from, where it goes back; nil when it was
    /// found in the frozen group already (and nothing says where it came from: it goes to the
    /// hierarchy's root).
    var origin: String?
    var since: Date
    /// The process itself: every signal and every move goes through it.
    var handle: ProcessHandle? = nil
}

/// What the kernel says of a process the moment it runs a program: read on the real-time
/// thread, in microseconds, whatever the process does.
struct KernelEvidence: Sendable {
    var cgroup: String?
    /// Where `exe` points (` (deleted)` cut off).
    var executablePath: String?
    var executableDeleted = false
    var executable: FileStatus?
    /// Whether the process's root is the agent's (else a sandbox or a chroot).
    var rootIsHost = true
}

/// One process of an authorized user, as the process shield knows it.
struct Tracked: Sendable {
    /// Its real uid, and the authorized user that uid is (itself, or its owner by subordinate ids).
    var uid: UInt32
    var owner: UInt32
    var startTime: UInt64
    /// The process it was forked from, when that was tracked: what the parent turns out to be
    /// once judged, its children inherit too.
    var parent: Int32?
    /// Counts the process's execs: a judgement made for an earlier program is dropped.
    var execSerial: UInt64 = 0
    var kernel = KernelEvidence()
    /// Everything known, the judges' reads included.
    var evidence = ProcessEvidence()
    /// What the parent was (at fork) and what this process ran before its last exec.
    var inherited: [ApplicationIdentity] = []
    var identities: [ApplicationIdentity] = []
    /// Whether the judges' reads for the current program are in (or none were needed).
    var judged = false
    /// Whether its environment loaded code of its own into the program (`LD_PRELOAD`, …), and
    /// its mount namespace: what a lock's exemption asks (nil until judged).
    var loadsOwnCode: Bool?
    var mountNamespace: String?
    /// Whether code from outside the system's directories is mapped into it (see
    /// `ProcessInspector.runsForeignCode`): read when a lock is put in force, for the programs
    /// that may run through it (nil until then).
    var runsForeignCode: Bool?
    /// Why the program may not run as a guardian installed it, when `denyAppInstallation` holds.
    var installRefusal: String?
    /// What the last verdict said (nil: let it run).
    var action: ApplicationFilter.Action?
    var verdict: ApplicationFilter.Verdict?
    var hold: Hold?

    init(uid: UInt32, owner: UInt32, startTime: UInt64) {
        self.uid = uid
        self.owner = owner
        self.startTime = startTime
    }
}
