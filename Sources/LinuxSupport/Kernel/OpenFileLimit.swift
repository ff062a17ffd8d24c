import Glibc

/// The agent's own limit on open descriptors (`RLIMIT_NOFILE`). It keeps one for each process it
/// holds (a pidfd), and a child who starts a shielded program again and again makes as many held
/// processes as she likes: at systemd's default soft limit (1,024), about a thousand of them
/// left the agent unable to open anything, its exec gate first (a child's attack on the installed
/// agent, 2026-12-02, at a limit of 20,000: the gate stopped answering and every exec of a
/// shielded program hung). Raised, soft and hard, to the kernel's most (`fs.nr_open`).
public enum OpenFileLimit {
    /// Raises the limit to `fs.nr_open` (needs CAP_SYS_RESOURCE to pass the hard limit; without
    /// it, the soft limit to the hard one). Returns the soft limit before and after.
    public static func raise() throws(SystemError) -> (before: UInt, after: UInt) {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        _ = try systemCall("getrlimit(RLIMIT_NOFILE)") { getrlimit(resource, &limit) }
        let before = UInt(limit.rlim_cur)
        let text = (try? Files.read("/proc/sys/fs/nr_open", limit: 64)).map { String(decoding: $0, as: UTF8.self) }
        guard let most = text.flatMap({ UInt($0.split(separator: "\n").first ?? "") }), most > before else {
            return (before, before)
        }
        var raised = rlimit(rlim_cur: rlim_t(most), rlim_max: rlim_t(max(most, UInt(limit.rlim_max))))
        if setrlimit(resource, &raised) == 0 { return (before, most) }
        // Without CAP_SYS_RESOURCE (systemd's unit bounds it away; its LimitNOFILE raises the hard
        // limit instead): the soft limit up to the hard one.
        guard errno == EPERM else { throw SystemError.call("setrlimit(RLIMIT_NOFILE, \(most))", errno) }
        if limit.rlim_max <= limit.rlim_cur { return (before, before) }
        var soft = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
        _ = try systemCall("setrlimit(RLIMIT_NOFILE, \(limit.rlim_max))") { setrlimit(resource, &soft) }
        return (before, UInt(limit.rlim_max))
    }
}
