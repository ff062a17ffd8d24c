import Foundation
import Glibc
import LinuxSupport

/// Focus told by the compositor itself: GNOME Shell runs the screentime-focus extension
/// (packaging/gnome-shell) inside the compositor process, which connects to `focusSocket` and
/// writes a line of JSON at each change of the window in front, and when the session goes idle
/// and comes back. A connection is listened to only while the kernel says its peer is the
/// compositor of a Wayland session the agent reads (the process serving the session's socket,
/// the session user's); anyone else's is closed at once. What it says is still the compositor's
/// claim: the pid it names counts only if that process is the session user's (else no one's),
/// and when it goes quiet (the extension disabled, the shell restarted) the session is counted
/// the conservative way again.
extension UsageTracker {
    /// What a compositor's extension told, by the compositor's pid.
    struct ShellReport: Sendable {
        var uid: UInt32
        var startTime: UInt64?
        /// nil until the first focus line; then the pid in front, or nil (`.some(nil)`) for none.
        var focus: Int32??
        var idle = false
        var lines = 0
    }

    /// Lines longer than this end the connection.
    static let reportLineLimit = 4096

    /// The listener's thread: accepts connections while the tracker runs.
    func serveShellReports(_ path: String, _ stop: StopSignal) {
        let listener: UnixSocket
        do throws(SystemError) {
            let directory = (path as NSString).deletingLastPathComponent
            if !Files.exists(directory) { try Files.makeDirectory(directory, mode: 0o755) }
            listener = try UnixSocket.listen(at: path, mode: 0o666)
        } catch {
            logger.error("cannot listen for compositors' focus", metadata: ["error": "\(error.message)"])
            return
        }
        logger.info("listening for compositors' focus", metadata: ["socket": "\(path)"])
        while !stop.isRaised {
            guard let connection = try? listener.accept(unless: stop) else {
                if stop.isRaised { break }
                stop.wait(for: .milliseconds(50))
                continue
            }
            guard let peer = try? connection.peerCredentials(), let key = waylandSession(servedBy: peer) else {
                continue  // not a compositor the agent reads: closed (the extension tries again)
            }
            let started = inspector.startTime(pid: peer.pid)
            let admitted = shellReports.withLock { reports in
                guard reports[peer.pid] == nil else { return false }
                reports[peer.pid] = ShellReport(uid: peer.uid, startTime: started)
                return true
            }
            guard admitted else { continue }
            startThread("screentime.shell") { [self] in readShellReports(connection, peer, key, stop) }
        }
        unlink(path)
    }

    /// The Wayland session (counted the conservative way) whose compositor `peer` is, if any.
    private func waylandSession(servedBy peer: PeerCredentials) -> String? {
        let policy = processes.currentPolicy()
        return state.withLock { state in
            state.sessions.first { _, session in
                session.kind == "wayland" && session.server?.pid == peer.pid
                    && policy.owner(ofKernelUID: peer.uid) == session.owner
            }?.key
        }
    }

    private func readShellReports(_ connection: UnixSocket, _ peer: PeerCredentials, _ key: String, _ stop: StopSignal)
    {
        defer {
            shellReports.withLock { $0[peer.pid] = nil }
            nudgeSession(key)
        }
        let greeting = "{\"idleTimeoutMilliseconds\":\(configuration.idleTimeout * 1000)}\n"
        guard (try? connection.write(Array(greeting.utf8), until: .now + .seconds(2))) != nil else { return }
        logger.info("a compositor tells its focus", metadata: ["session": "\(key)", "compositor": "pid \(peer.pid)"])
        var buffer: [UInt8] = []
        while !stop.isRaised {
            let got: [UInt8]
            do throws(SystemError) {
                got = try connection.receive(upTo: Self.reportLineLimit, until: .now + .seconds(30)).bytes
            } catch {
                if error.code == .timedOut { continue }
                break
            }
            if got.isEmpty { break }
            buffer += got
            while let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                guard let message = try? JSONDecoder().decode(ShellMessage.self, from: Data(line)) else {
                    logger.notice(
                        "a compositor's line is not understood",
                        metadata: [
                            "compositor": "pid \(peer.pid)",
                            "line": "\(String(decoding: line.prefix(80), as: UTF8.self))",
                        ])
                    continue
                }
                shellReports.withLock { reports in
                    if let focus = message.focus { reports[peer.pid]?.focus = .some(focus?.pid) }
                    if let idle = message.idle { reports[peer.pid]?.idle = idle }
                    reports[peer.pid]?.lines += 1
                }
                nudgeSession(key)
            }
            if buffer.count > Self.reportLineLimit {
                logger.notice(
                    "a compositor's line is too long: its connection is closed",
                    metadata: ["compositor": "pid \(peer.pid)"])
                break
            }
        }
    }

    /// Wakes a Wayland session's watch (a report came, or its reporter went).
    private func nudgeSession(_ key: String) {
        let nudge = nudges.withLock { nudges in nudges.values.lazy.compactMap { $0[key] }.first }
        nudge?.signal()
    }

    /// What the compositor `pid` (started at `startTime`) told of its focus and idle, once it
    /// told its focus at all.
    func shellReport(compositor pid: Int32, startTime: UInt64?) -> ShellReport? {
        shellReports.withLock { reports in
            guard let report = reports[pid], report.startTime == startTime, report.focus != nil else { return nil }
            return report
        }
    }
}

/// A compositor's line: `{"focus": {"pid": N, "appId": "…"}}`, `{"focus": null}`,
/// `{"idle": true}`; anything else in it is ignored.
struct ShellMessage: Decodable {
    struct Focus: Decodable {
        var pid: Int32?
    }

    /// nil: no focus in the line; `.some(nil)`: no window in front.
    var focus: Focus??
    var idle: Bool?

    enum CodingKeys: String, CodingKey { case focus, idle }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if container.contains(.focus) {
            focus = .some(
                try container.decodeNil(forKey: .focus) ? nil : try container.decode(Focus.self, forKey: .focus))
        }
        idle = try container.decodeIfPresent(Bool.self, forKey: .idle)
    }
}
