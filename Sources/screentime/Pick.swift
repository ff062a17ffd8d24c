import ArgumentParser
import FamilyControls
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

/// `screentime pick`: choose applications, categories and domains; prints a
/// FamilyActivitySelection (JSON) for `screentime shield --selection` or a guardian app.
///
/// On a terminal with nothing given, an interactive picker (filter as you type) draws on standard
/// error, so that only the JSON goes to standard output. With --app, --category or --domain it
/// needs no terminal.
struct Pick: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pick apps, categories and domains; prints a FamilyActivitySelection as JSON.",
        discussion: """
            Interactive on a terminal: type to filter, Up/Down to move, Space or Enter to select, \
            type a domain (with a dot) and press Enter to add it, Ctrl-D to finish, Esc to cancel. \
            Started from a desktop without a terminal, it opens a window (Ctrl-Enter for Done, Esc to \
            cancel). \
            Or non-interactively: screentime pick --user alice --app org.gnome.Chess --category Game \
            --domain youtube.com > selection.json
            """)

    @OptionGroup var connection: ConnectionOptions
    @Option(help: "Whose applications to pick from (default: you).") var user: String?
    @Option(name: .customLong("app"), help: "An application's desktop-entry ID.") var applications: [String] = []
    @Option(name: .customLong("category"), help: "An app or web category.") var categories: [String] = []
    @Option(name: .customLong("domain"), help: "A web domain.") var domains: [String] = []
    @Flag(help: "Include every item of a picked category, also those installed later.")
    var includeEntireCategory = false

    func run() throws {
        let interactive = applications.isEmpty && categories.isEmpty && domains.isEmpty
        let environment = ProcessInfo.processInfo.environment
        let desktop = environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil
        if interactive && isatty(0) != 1 && !desktop {
            throw ValidationError("not on a terminal nor on a desktop: give --app, --category or --domain")
        }
        let picker = FamilyActivityPicker(
            user: user, socket: connection.socket, includeEntireCategory: includeEntireCategory)
        let selection: FamilyActivitySelection
        do {
            if interactive {
                guard let picked = try picker.present() else {
                    Terminal.error("screentime: nothing picked (cancelled)")
                    throw ExitCode(1)
                }
                selection = picked
            } else {
                selection = try picker.selection(applications: applications, categories: categories, domains: domains)
            }
        } catch let error as ScreenTimeIPCError {
            Terminal.error("screentime: \(error.message) [\(error.code)]")
            throw ExitCode(exitStatus(for: error.code))
        }
        try printJSON(selection)
    }
}
