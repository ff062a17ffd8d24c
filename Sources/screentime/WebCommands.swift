import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The guardians' dashboard: turn it on, pair a phone, list and end its sessions (guardians).",
        discussion: """
            screentime web enable [--port 8443] [--listen ADDR]...  (turn it on; the agent runs it)
            screentime web disable              (turn it off)
            screentime web status               (whether it runs, where, and its certificate)
            screentime web pair                 (a one-time code for a phone, 10 minutes)
            screentime web devices              (your signed-in browsers and paired phones)
            screentime web devices --revoke ID  (or --revoke all)
            The dashboard is off at install. Turned on, it listens on this PC's home-network \
            addresses and loopback (or the addresses given), never a public address unless named; \
            the agent runs it as its own account (screentime-web) with no privilege, starts it \
            again if it ends, and after every restart of the PC until it is turned off.
            The dashboard (screentime-web) has no authority of its own: every request it makes \
            is made in a guardian's session, which the agent checks. A password sign-in lasts 12 \
            hours, a paired phone 90 days; wrong passwords and codes wait and lock out as \
            'authorize' does ('screentime unlock --user screentime-web' lifts it).
            """,
        subcommands: [WebEnable.self, WebDisable.self, WebStatus.self, WebPair.self, WebDevices.self])
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

extension WebServiceReply {
    var statusPath: String { (directory ?? "/var/lib/screentime-web") + "/status.json" }
}

struct WebEnable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable", abstract: "Turn the dashboard on (or change where it listens).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The port (1024 to 65535; first 8443).") var port: Int?
    @Option(
        name: .customLong("listen"),
        help: "An address to listen on (repeatable); 'home' for this PC's home-network addresses and loopback.")
    var addresses: [String] = []

    func run() throws {
        let listen: [String]? = addresses.isEmpty ? nil : addresses == ["home"] ? [] : addresses
        let reply = try perform(connection, WebServiceRequest(enable: true, port: port, listen: listen))
        if output.json { return try printJSON(reply) }
        print("the dashboard is on, port \(reply.port)")
        // It takes a moment to make its certificate the first time and to listen.
        var now = reply
        for _ in 0..<50 where now.pid == nil || DashboardStatus.read(now.statusPath)?.pid != now.pid {
            usleep(100_000)
            now = try perform(connection, WebServiceRequest())
        }
        WebStatus.describe(now)
    }
}

struct WebDisable: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Turn the dashboard off.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let reply = try perform(connection, WebServiceRequest(enable: false))
        if output.json { return try printJSON(reply) }
        print("the dashboard is off (paired phones keep their sessions for when it is on again)")
    }
}

struct WebStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Whether the dashboard is on, where it listens, its certificate's fingerprint."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let reply = try perform(connection, WebServiceRequest())
        if output.json { return try printJSON(reply) }
        guard reply.enabled else {
            print("the dashboard is off ('screentime web enable' turns it on)")
            throw ExitCode(3)
        }
        guard Self.describe(reply) else { throw ExitCode(3) }
    }

    /// What runs, where, with which certificate; whether it runs.
    @discardableResult
    static func describe(_ reply: WebServiceReply) -> Bool {
        let listening = reply.listen.isEmpty ? "the home network and loopback" : reply.listen.joined(separator: ", ")
        guard let pid = reply.pid, let status = DashboardStatus.read(reply.statusPath), status.pid == pid else {
            print("the dashboard is on (port \(reply.port), \(listening)) but not running now")
            if let problem = reply.problem { print("  \(problem)") }
            return false
        }
        print("the dashboard runs (pid \(pid)) at:")
        for url in status.urls { print("  \(url)") }
        print("its certificate's SHA-256 fingerprint (check it on the phone): \(status.fingerprint)")
        if reply.restarts > 0 { print("it was started again \(reply.restarts) times: \(reply.problem ?? "")") }
        return true
    }
}

struct WebPair: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair", abstract: "Make a one-time code that signs a phone in as a paired device of yours.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Flag(name: .customLong("no-qr"), help: "Print the link alone, without a QR code.") var noQR = false

    func run() throws {
        let reply = try perform(connection, WebPairRequest())
        if output.json { return try printJSON(reply) }
        let code = reply.code.prefix(4) + "-" + reply.code.suffix(4)
        print(
            "pairing code for \(reply.user.name): \(code) (once, until \(WallClock.current().format(reply.expires, "HH:mm")))"
        )
        let service = try? perform(connection, WebServiceRequest())
        guard let status = DashboardStatus.read(service?.statusPath ?? DashboardStatus.path) else {
            return print("the dashboard is not running: 'screentime web enable' turns it on")
        }
        // The home network's address first: that is the one a phone reaches.
        func loopback(_ url: String) -> Bool { url.contains("//127.") || url.contains("//[::1]") }
        let urls = status.urls.filter { !loopback($0) } + status.urls.filter(loopback)
        let link = "\(urls.first ?? "")signin?code=\(reply.code)"
        // The code to scan, in a terminal (not into a file or a pipe, where it would be noise).
        if isatty(1) == 1, !noQR, let code = QRCode(link) {
            print("scan this with the phone's camera:")
            print(code.terminal(), terminator: "")
        }
        print("on the phone, open \(link)")
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
        let clock = WallClock.current()
        func when(_ date: Date) -> String { clock.format(date, "EEE d MMM HH:mm") }
        for session in reply.sessions {
            print(
                "\(session.id)  \(session.device)  \(session.paired ? "paired" : "signed in")  last used \(when(session.lastUsed))  until \(when(session.expires))"
            )
        }
    }
}
