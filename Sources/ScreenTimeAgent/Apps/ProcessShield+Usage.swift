import FoundationEssentials
import LinuxSupport
import ScreenTimeCore

/// An application in front, as the usage tracker counts it.
struct ForegroundApplication: Hashable, Sendable {
    /// The authorized user whose process it is.
    var owner: UInt32
    var identity: ApplicationIdentity
    var token: ApplicationToken
    var name: String
    var categories: [String]

    /// How reports name it: the desktop ID as guardians write it, else the canonical form.
    var reportID: String {
        if case .desktopEntry(let id) = identity { return id }
        return identity.canonical
    }
}

extension ProcessShield {
    /// The applications a process of an authorized user can be taken for: those of its
    /// identities with a desktop entry, the best evidence first (or its first identity when none
    /// has one); empty for anyone else's process, or one not known.
    func foregroundApplications(pid: Int32) -> [ForegroundApplication] {
        let found = table.withLock { table -> (UInt32, [ApplicationIdentity], UInt64)? in
            guard let tracked = table.processes[pid] else { return nil }
            return (
                tracked.owner, tracked.identities.isEmpty ? tracked.inherited : tracked.identities, tracked.startTime
            )
        }
        // The pid is still that process (not one that took its number since).
        guard let (owner, identities, startTime) = found, inspector.startTime(pid: pid) == startTime else {
            return []
        }
        let index = indexes.withLock { $0[owner]?.index } ?? ApplicationIndex()
        var chosen = identities.filter { index.application($0) != nil }
        if chosen.isEmpty, let first = identities.first { chosen = [first] }
        // A program with no desktop entry is named by its file (the kernel's word), beside its hash;
        // the agent's own shield window, by what it is.
        let file = inspector.executable(pid: pid).map { $0.split(separator: "/").last.map(String.init) ?? $0 }
        let isShield = file == "screentime-shield" && isShieldWindow(pid: pid)
        return chosen.map { identity in
            let application = index.application(identity)
            var name = application?.name ?? Self.displayName(identity)
            if application == nil, let file, !file.isEmpty { name = isShield ? Self.shieldName : "\(file) (\(name))" }
            return ForegroundApplication(
                owner: owner, identity: identity, token: minter.token(for: identity),
                name: name,
                categories: (application?.categories ?? []).map(\.rawValue).sorted())
        }
    }

    /// How reports name the time the shield window was in front.
    static let shieldName = "Screen Time (shield window)"

    /// The shield window's program, as the agent runs it.
    static let shieldProgram = ShieldProgram.defaultPath()

    /// Whether a process runs the very file the agent runs as the shield window (not a copy).
    func isShieldWindow(pid: Int32) -> Bool {
        guard let running = inspector.executableStatus(pid: pid), let program = FileStatus.of(path: Self.shieldProgram)
        else { return false }
        return running.key.device == program.key.device && running.key.inode == program.key.inode
    }

    /// Whether a process is one of the system's helpers rather than an app (a portal, an input
    /// method): its program is in `/usr/lib` or `/usr/libexec`, is not a dynamic loader, and
    /// the process is no application with a desktop entry (`/usr/lib/firefox/firefox` is one).
    func isSystemHelper(pid: Int32) -> Bool {
        guard let executable = inspector.executable(pid: pid),
            executable.hasPrefix("/usr/libexec/") || executable.hasPrefix("/usr/lib/")
        else { return false }
        if let status = inspector.executableStatus(pid: pid),
            loaders.withLock({ $0.files.contains(FileIdentity(status.key)) })
        {
            return false
        }
        return !foregroundApplications(pid: pid).contains { application in
            if case .desktopEntry = application.identity { return true }
            return false
        }
    }

    /// Every process of an authorized user now known, with its owner.
    func trackedProcesses() -> [(pid: Int32, owner: UInt32)] {
        table.withLock { table in table.processes.map { ($0.key, $0.value.owner) } }
    }
}
