import ArgumentParser
import Foundation
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
        var picked = (apps: applications, categories: categories, domains: domains)
        // The agent's categories, with their tokens: fetched once, for the picker and the check.
        var known: [CategoryReport] = []
        let interactive = applications.isEmpty && categories.isEmpty && domains.isEmpty
        if interactive && isatty(0) != 1 {
            throw ValidationError("not on a terminal: give --app, --category or --domain")
        }
        if interactive || !categories.isEmpty {
            known = try perform(connection, CategoriesRequest(user: user)).categories
        }
        if interactive {
            let apps = try perform(connection, ApplicationsRequest(user: user))
            guard let chosen = try Picker(applications: apps.applications, categories: known).run() else {
                Terminal.error("screentime: nothing picked (cancelled)")
                throw ExitCode(1)
            }
            picked = chosen
        }
        var selection = FamilyActivitySelection(includeEntireCategory: includeEntireCategory)
        for app in picked.apps {
            selection.applicationTokens.insert(try ApplicationToken(base64: try mint(.app, app)))
        }
        for category in picked.categories {
            guard let report = known.first(where: { $0.name.lowercased() == category.lowercased() }) else {
                Terminal.error(
                    "screentime: '\(category)' is not a category; 'screentime categories' lists them [unknownCategory]")
                throw ExitCode(65)
            }
            selection.categoryTokens.insert(try ActivityCategoryToken(base64: report.token))
        }
        for domain in picked.domains {
            selection.webDomainTokens.insert(try WebDomainToken(base64: try mint(.domain, domain)))
        }
        try printJSON(selection)
    }

    private func mint(_ kind: TokenKindName, _ identity: String) throws -> String {
        try perform(connection, TokenRequest(kind: kind, identity: identity, user: user)).token
    }
}

/// The interactive picker: raw terminal input on standard input, drawing on standard error.
struct Picker {
    struct Item: Hashable {
        enum Kind: String { case app, category, domain }
        var kind: Kind
        var key: String
        var label: String
    }

    let items: [Item]

    init(applications: [ApplicationReport], categories: [CategoryReport]) {
        items =
            applications.map { Item(kind: .app, key: $0.id, label: "\($0.name) (\($0.id))") }
            + categories.map { Item(kind: .category, key: $0.name, label: "\($0.name) [\($0.kind)]") }
    }

    func run() throws -> (apps: [String], categories: [String], domains: [String])? {
        var original = termios()
        guard tcgetattr(0, &original) == 0 else { return nil }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
        defer {
            tcsetattr(0, TCSANOW, &original)
            draw("\u{1B}[H\u{1B}[J")
        }
        var filter = ""
        var cursor = 0
        var selected: [Item] = []
        while true {
            let visible = matches(filter)
            cursor = min(cursor, max(0, visible.count - 1))
            render(filter: filter, visible: visible, cursor: cursor, selected: selected)
            guard let key = readKey() else { return nil }
            switch key {
            case .character(let character):
                filter.append(character)
                cursor = 0
            case .backspace:
                if !filter.isEmpty { filter.removeLast() }
            case .up:
                cursor = max(0, cursor - 1)
            case .down:
                cursor += 1
            case .toggle:
                guard cursor < visible.count else { continue }
                let item = visible[cursor]
                if let index = selected.firstIndex(of: item) {
                    selected.remove(at: index)
                } else {
                    selected.append(item)
                }
                if item.kind == .domain { filter = "" }
            case .space:
                if visible.indices.contains(cursor) {
                    let item = visible[cursor]
                    if let index = selected.firstIndex(of: item) {
                        selected.remove(at: index)
                    } else {
                        selected.append(item)
                    }
                }
            case .done:
                return (
                    selected.filter { $0.kind == .app }.map(\.key), selected.filter { $0.kind == .category }.map(\.key),
                    selected.filter { $0.kind == .domain }.map(\.key)
                )
            case .cancel:
                return nil
            }
        }
    }

    private func matches(_ filter: String) -> [Item] {
        let needle = filter.lowercased()
        var found = items.filter { needle.isEmpty || $0.label.lowercased().contains(needle) }
        if filter.contains("."), !filter.contains(" "), (try? DomainName(filter)) != nil {
            found.insert(Item(kind: .domain, key: filter, label: filter), at: 0)
        }
        return found
    }

    private func render(filter: String, visible: [Item], cursor: Int, selected: [Item]) {
        var screen = "\u{1B}[H\u{1B}[J"
        screen +=
            "Pick: type to filter, ↑/↓ move, space/enter select, a domain + enter adds it, ctrl-d done, esc cancel\n"
        screen += "selected: \(selected.isEmpty ? "nothing" : selected.map(\.label).joined(separator: ", "))\n"
        screen += "> \(filter)\n"
        let window = 15
        let start = max(0, min(cursor - window / 2, visible.count - window))
        for (index, item) in visible.enumerated().dropFirst(start).prefix(window) {
            let mark = selected.contains(item) ? "[x]" : "[ ]"
            let pointer = index == cursor ? "›" : " "
            screen +=
                "\(pointer) \(mark) \(item.kind.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(item.label)\n"
        }
        if visible.isEmpty { screen += "  (no match)\n" }
        draw(screen)
    }

    private func draw(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    private enum Key {
        case character(Character), backspace, up, down, toggle, space, done, cancel
    }

    private func readKey() -> Key? {
        guard let byte = readByte() else { return nil }
        switch byte {
        case 4: return .done  // Ctrl-D
        case 3: return .cancel  // Ctrl-C
        case 10, 13: return .toggle
        case 32: return .space
        case 127, 8: return .backspace
        case 27:
            // An arrow key is ESC [ A/B; a lone ESC (nothing follows at once) cancels.
            var poller = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0, readByte() == UInt8(ascii: "[") else { return .cancel }
            switch readByte() {
            case UInt8(ascii: "A"): return .up
            case UInt8(ascii: "B"): return .down
            default: return readKey()
            }
        default:
            // A UTF-8 sequence: gather its continuation bytes.
            var bytes = [byte]
            let extra = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : 0
            for _ in 0..<extra { if let next = readByte() { bytes.append(next) } }
            guard let text = String(validating: bytes, as: UTF8.self), let character = text.first, byte >= 32 else {
                return readKey()
            }
            return .character(character)
        }
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let got = read(0, &byte, 1)
            if got == 1 { return byte }
            if got < 0 && errno == EINTR { continue }
            return nil
        }
    }
}
