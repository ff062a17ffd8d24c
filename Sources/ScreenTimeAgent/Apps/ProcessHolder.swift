import LinuxSupport

/// How held processes are held: moved into the root-owned frozen group (cgroup v2 or v1
/// freezer), where the child's SIGCONT, writes and moves do nothing; or, where there is no
/// freezer, stopped with SIGSTOP (sent again when the child continues them, by the restop loop).
///
/// Every operation goes through a `ProcessHandle`: a signal reaches that process or nobody, and
/// a cgroup move (which only takes a pid number) is made only while the handle's process is alive,
/// microseconds before, so that a reused number is never moved.
struct ProcessHolder: Sendable {
    let freezer: FreezerCgroup?

    var method: String { freezer.map { "cgroup \($0.version.rawValue) freezer" } ?? "SIGSTOP" }

    /// Holds a process; returns the group it came from (nil when it was in the frozen group
    /// already: another hold of it knows), or nil when it could not be held (gone). `stopFirst`
    /// stops it before the move (microseconds, against the move's tens or hundreds): for a
    /// shield found on a running program, under the v1 freezer only. A stop is what its parent
    /// sees (`waitpid` with WUNTRACED): su and sudo then stop themselves and were never
    /// continued, a shell takes its terminal back and makes the program a stopped job; the v2
    /// freezer's hold is seen by no one, so there the move alone holds (a fork in between is
    /// held by its fork event). `waiting` returns only once the group is frozen.
    func hold(_ handle: ProcessHandle, stopFirst: Bool, waiting: Bool = true) -> (origin: String?, frozen: Bool)? {
        guard let freezer else {
            return handle.stop() ? ("/", false) : nil
        }
        if stopFirst, freezer.version != .v2, !handle.stop() { return nil }
        let origin = freezer.group(of: handle.pid) ?? "/"
        if origin == "/" + freezer.name { return (nil, true) }
        guard handle.isAlive else { return nil }
        do {
            try freezer.freeze(handle.pid, waiting: waiting)
            return (origin, true)
        } catch {
            // Not moved (gone, or the group refused): stopped is the best there is.
            return handle.stop() ? (origin, false) : nil
        }
    }

    /// Holds a process that is inside `execve`, waiting for the exec gate's answer, so that it
    /// stops before its new program's first instruction. The v2 freezer traps it on its way back
    /// to user space. The v1 freezer would freeze it in place, inside the kernel's wait for the
    /// answer — and if the agent then died, the kernel would wait for that frozen task forever
    /// before letting the gate go — so it is stopped instead (SIGSTOP, taken on the way back to
    /// user space) and moved into the v1 group once its exec is done (`moveLater`; the group it
    /// came from, nil here, is known then).
    func holdInsideExec(_ handle: ProcessHandle) -> (origin: String?, moveLater: Bool)? {
        if let freezer, freezer.version == .v2 {
            return hold(handle, stopFirst: false, waiting: false).map { ($0.origin, false) }
        }
        guard handle.stop() else { return nil }
        // Its group is read when it is moved: reading `/proc/PID/cgroup` waits on the kernel's
        // cgroup lock, which other moves hold for milliseconds, and the exec waits for this.
        return (freezer == nil ? "/" : nil, freezer != nil)
    }

    /// Lets a held process go: back to the group it came from (or the nearest that still
    /// exists), continued.
    func release(_ handle: ProcessHandle, origin: String) throws(SystemError) {
        defer { handle.resume() }
        guard let freezer, handle.isAlive, freezer.group(of: handle.pid) == "/" + freezer.name else { return }
        try freezer.release(handle.pid, toNearest: origin)
    }

    /// Whether a process is in the frozen group now.
    func isInFrozenGroup(_ pid: Int32) -> Bool {
        guard let freezer else { return false }
        return freezer.group(of: pid) == "/" + freezer.name
    }

    func members() -> [Int32] { freezer?.members() ?? [] }

    /// The group a process is in now (nil without a freezer, or when it is gone).
    func group(of pid: Int32) -> String? { freezer?.group(of: pid) }
}
