import ArgumentParser
import Foundation
import ScreenTimeIPC

struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The guardians' dashboard: pair a phone, list and end its sessions (guardians).",
        discussion: """
            screentime web status               (where the dashboard listens, its certificate)
            screentime web pair                 (a one-time code for a phone, 10 minutes)
            screentime web devices              (your signed-in browsers and paired phones)
            screentime web devices --revoke ID  (or --revoke all)
            The dashboard is not started at install: 'sudo systemctl enable --now \
            screentime-web' starts it (on this PC's home-network addresses and loopback, port \
            8443).
            The dashboard (screentime-web) has no authority of its own: every request it makes \
            is made in a guardian's session, which the agent checks. A password sign-in lasts 12 \
            hours, a paired phone 90 days; wrong passwords and codes wait and lock out as \
            'authorize' does ('screentime unlock --user screentime-web' lifts it).
            """,
        subcommands: [WebStatus.self, WebPair.self, WebDevices.self])
}

/// What `screentime-web` wrote at its start (its state directory lets anyone reach this file by
/// name, and nothing else in it).
struct DashboardStatus: Decodable {
    static let path = "/var/lib/screentime-web/status.json"
    var urls: [String]
    var fingerprint: String
    var pid: Int32

    /// The status of a dashboard that runs now; nil when none does.
    static func read(_ path: String = Self.path) -> DashboardStatus? {
        guard let data = FileManager.default.contents(atPath: path),
            let status = try? JSONDecoder().decode(DashboardStatus.self, from: data),
            (try? String(contentsOfFile: "/proc/\(status.pid)/comm", encoding: .utf8))?.hasPrefix("screentime-web")
                == true
        else { return nil }
        return status
    }
}

struct WebStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Where the dashboard listens, and its certificate's fingerprint.")

    func run() throws {
        guard let status = DashboardStatus.read() else {
            print("the dashboard is not running ('sudo systemctl enable --now screentime-web' starts it)")
            throw ExitCode(3)
        }
        print("the dashboard runs (pid \(status.pid)) at:")
        for url in status.urls { print("  \(url)") }
        print("its certificate's SHA-256 fingerprint (check it on the phone): \(status.fingerprint)")
    }
}

struct WebPair: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair", abstract: "Make a one-time code that signs a phone in as a paired device of yours.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let reply = try perform(connection, WebPairRequest())
        if output.json { return try printJSON(reply) }
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm"
        let code = reply.code.prefix(4) + "-" + reply.code.suffix(4)
        print("pairing code for \(reply.user.name): \(code) (once, until \(formatter.string(from: reply.expires)))")
        guard let status = DashboardStatus.read() else {
            return print("the dashboard is not running yet: 'sudo systemctl enable --now screentime-web' starts it")
        }
        // The home network's address first: that is the one a phone reaches.
        let urls = status.urls.sorted { !$0.contains("127.0.0.1") && $1.contains("127.0.0.1") }
        print("on the phone, open \(urls.first ?? "")signin?code=\(reply.code)")
        print("and check that its certificate's SHA-256 fingerprint is \(status.fingerprint)")
    }
}

struct WebDevices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List your dashboard sessions, or end one (--revoke ID, or all).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "End this session (its id as listed), or all of them.") var revoke: String?

    func run() throws {
        let reply = try perform(connection, WebSessionsRequest(revoke: revoke))
        if output.json { return try printJSON(reply) }
        if revoke != nil { print("ended \(reply.ended) session\(reply.ended == 1 ? "" : "s")") }
        guard !reply.sessions.isEmpty else { return print("no dashboard sessions") }
        let formatter = DateFormatter()
        formatter.dateFormat = "EEE d MMM HH:mm"
        formatter.locale = Locale(identifier: "en_GB")
        for session in reply.sessions {
            print(
                "\(session.id)  \(session.device)  \(session.paired ? "paired" : "signed in")  last used \(formatter.string(from: session.lastUsed))  until \(formatter.string(from: session.expires))"
            )
        }
    }
}
