import ArgumentParser
import Foundation
import ScreenTimeIPC

struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The guardians' dashboard: pair a phone, list and end its sessions (guardians).",
        discussion: """
            screentime web pair                 (a one-time code for a phone, 10 minutes)
            screentime web devices              (your signed-in browsers and paired phones)
            screentime web devices --revoke ID  (or --revoke all)
            The dashboard (screentime-web) has no authority of its own: every request it makes \
            is made in a guardian's session, which the agent checks. A password sign-in lasts 12 \
            hours, a paired phone 90 days; wrong passwords and codes wait and lock out as \
            'authorize' does ('screentime unlock --user screentime-web' lifts it).
            """,
        // Not listed until screentime-web itself is installed (issue 35): a code nothing can use
        // yet would only puzzle a guardian reading --help.
        shouldDisplay: false,
        subcommands: [WebPair.self, WebDevices.self])
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
