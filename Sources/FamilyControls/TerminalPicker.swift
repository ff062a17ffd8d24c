import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

/// The interactive picker: raw terminal input on standard input, drawing on standard error.
struct TerminalPicker {
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

    func run() -> (apps: [String], categories: [String], domains: [String])? {
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
                "\(pointer) \(mark) \(padded(item.kind.rawValue, to: 8)) \(item.label)\n"
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
