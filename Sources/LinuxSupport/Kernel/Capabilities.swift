import CCapability
import Glibc
import ScreenTimeCore

/// The agent's capabilities: what it keeps once its setup is done, and the drop of the rest.
///
/// Capabilities belong to threads, not processes: a drop made while other threads run leaves
/// them every capability. So the drop is refused unless the caller is the only thread, and every
/// thread started after it inherits the reduced sets (and the bounding set, which also bounds
/// what a program run as root, such as iptables, can get back).
public enum Capabilities {
    /// The capabilities the agent may keep, by their names in capabilities(7).
    public enum Name: String, CaseIterable, Sendable, Hashable {
        /// Write the cgroup files of the users' own (delegated) groups; read their desktop entries.
        case dacOverride = "cap_dac_override"
        /// Stop, continue and kill other users' processes.
        case kill = "cap_kill"
        /// Give verdicts on the netfilter queue; what iptables, run as a child, needs.
        case netAdmin = "cap_net_admin"
        /// Read other users' `/proc/PID/exe`, `environ`, `root`, `cwd` and `fd`.
        case sysPtrace = "cap_sys_ptrace"
        /// Run the process watcher at real-time priority.
        case sysNice = "cap_sys_nice"
        /// What iptables, run as a child, needs to look up a kernel address set its rules name
        /// (the set match opens a raw socket for it); the agent itself opens its raw sockets (the
        /// block page's) before the drop. Beside `netAdmin`, which can already send any packet of
        /// the machine's through the agent's queue, it gives the agent no new sight.
        case netRaw = "cap_net_raw"
        /// The launcher: start a program as another user (its uid, then its gid and groups).
        case setUID = "cap_setuid"
        case setGID = "cap_setgid"
        /// The launcher: give an extension an empty network namespace of its own.
        case sysAdmin = "cap_sys_admin"

        var value: cap_value_t {
            switch self {
            case .dacOverride: CAP_DAC_OVERRIDE
            case .kill: CAP_KILL
            case .netAdmin: CAP_NET_ADMIN
            case .sysPtrace: CAP_SYS_PTRACE
            case .sysNice: CAP_SYS_NICE
            case .netRaw: CAP_NET_RAW
            case .setUID: CAP_SETUID
            case .setGID: CAP_SETGID
            case .sysAdmin: CAP_SYS_ADMIN
            }
        }

        /// The bit of this capability in the masks `/proc/PID/status` shows.
        public var bit: UInt64 { 1 << UInt64(value) }
    }

    /// The mask of a set of names, as `/proc/PID/status` shows masks.
    public static func mask(_ names: Set<Name>) -> UInt64 { names.reduce(0) { $0 | $1.bit } }

    /// The threads of this process now.
    public static func threads(proc: String = "/proc") -> Int {
        guard let directory = opendir(proc + "/self/task") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return count
    }

    /// Keeps only `kept`: the bounding set, permitted and effective sets hold them alone, the
    /// inheritable and ambient sets nothing, and `no_new_privs` is set (no program run later
    /// gains anything by set-user-ID bits or file capabilities). Applies to the calling thread:
    /// it must be the only thread, but for `selfDropping` threads that make this same call
    /// themselves (a thread that needs a capability for a moment longer, then drops it).
    public static func restrict(to kept: Set<Name>, selfDropping: Int = 0) throws(SystemError) {
        let running = threads()
        // Fewer is fine: a self-dropping thread may have ended already.
        guard running <= 1 + selfDropping else {
            throw SystemError(
                .capabilities,
                "\(running) threads run; capabilities are per thread, so the others would keep all of theirs")
        }
        let keptValues = Set(kept.map(\.value))
        // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
        for value in 0..<cap_value_t(cap_max_bits()) where !keptValues.contains(value) && cap_get_bound(value) == 1 {
            try systemCall("cap_drop_bound(\(value))") { cap_drop_bound(value) }
        }
        try systemCall("cap_reset_ambient") { cap_reset_ambient() }
        guard let sets = cap_init() else { throw SystemError.call("cap_init", errno) }
        defer { cap_free(UnsafeMutableRawPointer(sets)) }
        var values = kept.map(\.value)
        if !values.isEmpty {
            try systemCall("cap_set_flag(permitted)") {
                cap_set_flag(sets, CAP_PERMITTED, Int32(values.count), &values, CAP_SET)
            }
            try systemCall("cap_set_flag(effective)") {
                cap_set_flag(sets, CAP_EFFECTIVE, Int32(values.count), &values, CAP_SET)
            }
        }
        try systemCall("cap_set_proc") { cap_set_proc(sets) }
        try systemCall("prctl(PR_SET_NO_NEW_PRIVS)") { screentime_set_no_new_privs() }
    }

    /// The masks of a thread's sets as `/proc/…/status` shows them (`CapEff`, `CapBnd`, …).
    public static func masks(status path: String) -> [String: UInt64] {
        guard let bytes = try? Files.read(path) else { return [:] }
        var masks: [String: UInt64] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("Cap") {
            let fields = line.split(separator: ":", maxSplits: 1)
            guard fields.count == 2, let mask = UInt64(fields[1].trimmingSpaces(), radix: 16)
            else { continue }
            masks[String(fields[0])] = mask
        }
        return masks
    }
}
