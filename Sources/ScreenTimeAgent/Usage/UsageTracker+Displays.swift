import FoundationEssentials
import LinuxSupport

/// X servers found from their sockets: a display an authorized user's own server listens on is
/// read even when no program of theirs names it in its environment (a game given `-display :N`,
/// a server started with a bare command line). inotify on `/tmp/.X11-unix` tells when a socket
/// appears; each new one is asked who serves it (the kernel's `SO_PEERCRED`, nothing sent), and
/// one an authorized user serves becomes that user's session. Root's servers are not taken this
/// way: whose session they are is told by the programs on them (hints and logind).
extension UsageTracker {
    static let displaySockets = "/tmp/.X11-unix"
    /// New sockets asked about in one look, at most (each costs a connection).
    static let socketsPerLook = 64

    func watchDisplaySockets(_ stop: StopSignal) {
        // Made as systemd's tmpfiles makes it (root's, sticky, writable by all), if missing: a
        // directory of the child's there would be the child's to fill.
        if !Files.exists(Self.displaySockets) {
            try? Files.makeDirectory(Self.displaySockets, mode: 0o1777)
            Files.setMode(Self.displaySockets, 0o1777)
        }
        var seen: [String: UInt64] = [:]
        var delay: Duration = .seconds(1)
        while !stop.isRaised {
            do throws(SystemError) {
                let watch = try FileWatch(directory: Self.displaySockets)
                lookAtDisplaySockets(&seen)
                try watch.run(until: stop) { lookAtDisplaySockets(&seen) }
                return
            } catch {
                logger.notice(
                    "cannot watch the X11 sockets",
                    metadata: ["directory": "\(Self.displaySockets)", "error": "\(error.message)"])
                stop.wait(for: delay)
                delay = min(delay * 2, .seconds(60))
            }
        }
    }

    /// Asks who serves each display socket not seen before (by name and inode).
    private func lookAtDisplaySockets(_ seen: inout [String: UInt64]) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: Self.displaySockets) else { return }
        var present: [String: UInt64] = [:]
        var asked = 0
        for name in names where name.hasPrefix("X") {
            guard let display = X11Display(":" + name.dropFirst()),
                let status = FileStatus.of(path: Self.displaySockets + "/" + name), status.isSocket
            else { continue }
            if seen[name] == status.key.inode {
                present[name] = status.key.inode
                continue
            }
            // Past the bound, left for the next look.
            guard asked < Self.socketsPerLook else { continue }
            asked += 1
            present[name] = status.key.inode
            guard let server = try? X11FocusWatch.server(of: display, timeout: .seconds(1)), server.uid != 0,
                let owner = processes.currentPolicy().owner(ofKernelUID: server.uid),
                owners.withLock({ $0.contains(owner) })
            else { continue }
            noteX11(display, owner: owner, authority: nil)
        }
        seen = present
    }
}
