import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

struct Browsers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What the browsers on this PC may do while a child is authorized: private windows, extensions.",
        discussion: """
            screentime browsers --private-windows off          (no incognito or private window)
            screentime browsers --allow-extension ID ...       (only the listed extensions install)
            screentime browsers --extensions any               (any again; the list is kept)
            Managed policies of Chromium, Chrome and Firefox, for every user of the PC, in force while \
            any child is authorized (and DNS over HTTPS, ECH and QUIC off, always). An ID is a Chromium \
            extension's (32 letters a to p) or a Firefox add-on's (name@example.org or {GUID}).
            """)

    enum Switch: String, ExpressibleByArgument, CaseIterable { case on, off }
    enum Extensions: String, ExpressibleByArgument, CaseIterable { case any, listed }

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(name: .customLong("private-windows"), help: "on or off.") var privateWindows: Switch?
    @Option(help: "any, or listed (only the --allow-extension ones).") var extensions: Extensions?
    @Option(name: .customLong("allow-extension"), help: "An extension that may be installed; repeat for more.")
    var allowed: [String] = []
    @Option(name: .customLong("remove-extension"), help: "Take an extension off the list.")
    var removed: [String] = []

    func run() throws {
        let request = BrowsersRequest(
            privateWindows: privateWindows.map { $0 == .on }, anyExtensions: extensions.map { $0 == .any },
            allowExtensions: allowed, removeExtensions: removed)
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print("private windows: \(reply.settings.privateWindows ? "allowed" : "off")")
        if let list = reply.settings.extensions {
            print("extensions: only these may be installed\(list.isEmpty ? " (none)" : ":")")
            for id in list { print("  \(id)") }
        } else {
            print("extensions: any")
        }
        print(
            reply.inForce
                ? "in force: a child is authorized" : "not in force now: no child is authorized (they apply from then)")
        if let by = reply.changedBy, let at = reply.changedAt {
            print("changed by \(by) at \(at.formatted(.iso8601))")
        }
    }
}
