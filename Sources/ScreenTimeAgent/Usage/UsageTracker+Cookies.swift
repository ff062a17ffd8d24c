import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// X11 cookies.
extension UsageTracker {
    /// The cookies to try, in order: those of the server's own `-auth` file (read as root when
    /// the server is root's; when it is the user's, only a file of theirs), then those of the
    /// Xauthority files the hints name that are the session user's (a file of anyone else's is
    /// never read, so no other user's cookie goes to a server of the child's making), then none.
    func cookies(
        for display: X11Display, server: PeerCredentials, files: [String], owner: UInt32
    ) -> [[UInt8]?] {
        let policy = processes.currentPolicy()
        var found: [[UInt8]?] = []
        func add(_ path: String, anyOwner: Bool) {
            guard let (bytes, status) = try? UntrustedFile.readWithStatus(path, limit: 65_536),
                anyOwner || policy.owner(ofKernelUID: status.owner) == owner
            else { return }
            for cookie in XAuthority.cookies(in: bytes, display: display.number)
            where !found.contains(where: { $0 == cookie }) {
                found.append(cookie)
            }
        }
        let arguments = inspector.commandLine(pid: server.pid)
        if let index = arguments.firstIndex(of: "-auth"), index + 1 < arguments.count,
            arguments[index + 1].hasPrefix("/")
        {
            add(arguments[index + 1], anyOwner: server.uid == 0)
        }
        for path in files { add(path, anyOwner: false) }
        return Array(found.prefix(16)) + [nil]
    }

    static func source(readsFocus: Bool, readsIdle: Bool) -> String {
        var source =
            readsFocus
            ? "X11 _NET_ACTIVE_WINDOW, window owners from X-Resource"
            : "X11, no window manager telling focus yet (_NET_ACTIVE_WINDOW)"
        if !readsIdle { source += "; no idle counter: idle time counts" }
        return source
    }
}
