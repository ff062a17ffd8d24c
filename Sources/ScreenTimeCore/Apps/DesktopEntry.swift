/// A freedesktop desktop entry (`.desktop` file), as far as screentime needs it: what the
/// application is called, its categories, and how it is started.
///
/// Parsed from text; the file system is the caller's business. Only the `[Desktop Entry]` group is
/// read; localised keys (`Name[de]`) are skipped; values are unescaped (`\s \n \t \r \\`, and `\;`
/// in lists).
public struct DesktopEntry: Hashable, Sendable {
    /// The desktop-entry ID (`org.gnome.Chess`): the file's path below `applications/`, with `/`
    /// turned into `-` and without `.desktop`.
    public var id: String
    public var name: String
    public var categories: [String]
    public var exec: String?
    public var tryExec: String?
    /// Hidden from menus (helpers, handlers); still an application a child could start.
    public var noDisplay: Bool
    /// `Hidden=true`: the entry is deleted, and hides entries of the same ID further down the path.
    public var hidden: Bool
    public var type: String
    /// `Icon=`: an icon name of the theme, or an absolute path.
    public var icon: String?

    /// Parses an entry. Nil when the text has no `[Desktop Entry]` group.
    public init?(id: String, parsing text: String) {
        var values: [String: String] = [:]
        var inMainGroup = false
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inMainGroup = line == "[Desktop Entry]"
                continue
            }
            guard inMainGroup, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingWhitespace()
            guard !key.contains("["), values[key] == nil else { continue }
            values[key] = String(line[line.index(after: equals)...]).trimmingWhitespace()
        }
        guard !values.isEmpty else { return nil }
        self.id = id
        self.type = values["Type"] ?? ""
        // A name is shown to people (the shield, a guardian's window, reports): a child's own entry
        // may not make it long, or turn text around with control or direction characters.
        self.name = Self.shown(Self.unescape(values["Name"] ?? id), limit: Self.nameLimit)
        self.categories = Array(Self.list(values["Categories"] ?? "").prefix(64).map { String($0.prefix(64)) })
        self.exec = values["Exec"].map(Self.unescape)
        self.tryExec = values["TryExec"].map(Self.unescape)
        self.noDisplay = values["NoDisplay"] == "true"
        self.hidden = values["Hidden"] == "true"
        self.icon = values["Icon"].map(Self.unescape)
    }

    /// The longest name kept, in characters.
    public static let nameLimit = 120

    /// Text without control or format characters (direction overrides), at most `limit` long.
    public static func shown(_ text: String, limit: Int) -> String {
        let kept = text.unicodeScalars.filter {
            $0.properties.generalCategory != .control && $0.properties.generalCategory != .format
        }
        return String(String(String.UnicodeScalarView(kept)).prefix(limit))
    }

    /// The entry's application identity.
    public var identity: ApplicationIdentity { .desktopEntry(id) }

    /// Whether the entry is an application a person could start from a menu.
    public var isListedApplication: Bool { type == "Application" && !hidden && !noDisplay }

    /// The words of `Exec=`: quotes removed, field codes (`%f`, `%U`, …) and a leading `env` with
    /// its `NAME=value` assignments left out.
    public var commandWords: [String] {
        guard let exec else { return [] }
        var words: [String] = []
        var word = ""
        var quoted = false
        var inWord = false
        for character in exec {
            if character == "\"" {
                quoted.toggle()
                inWord = true
            } else if character == " " && !quoted {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(character)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        words.removeAll { $0.count == 2 && $0.hasPrefix("%") }
        // Dropped as a prefix, once (a child's entry of 250,000 assignments made a word-by-word
        // removal quadratic), and no more words than `maximumCommandWords` kept.
        let start =
            words.firstIndex { word in
                !(word == "env" || word.hasSuffix("/env") || (word.contains("=") && !word.hasPrefix("/")))
            } ?? words.endIndex
        return Array(words[start...].prefix(Self.maximumCommandWords))
    }

    /// The words of `Exec=` looked at (a program and its arguments; no launcher needs more).
    public static let maximumCommandWords = 256

    /// The program `Exec=` starts: its first word, field codes and quotes aside.
    public var executable: String? { commandWords.first }

    /// The file a process of this application runs, by which it is known: the executable, or,
    /// when `Exec=` starts an interpreter (`python3 /usr/share/game/main.py`), the script.
    public var program: String? {
        let words = commandWords
        guard let first = words.first else { return nil }
        if Interpreter.isInterpreter(first) { return Interpreter.script(in: words) }
        return first
    }

    /// The desktop-entry ID of a file at `relativePath` below an `applications` directory.
    public static func id(forRelativePath relativePath: String) -> String {
        var id = relativePath.replacingOccurrences(of: "/", with: "-")
        if id.hasSuffix(".desktop") { id.removeLast(".desktop".count) }
        return id
    }

    private static func unescape(_ value: String) -> String {
        var result = ""
        var escaping = false
        for character in value {
            if escaping {
                switch character {
                case "s": result.append(" ")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                default: result.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    private static func list(_ value: String) -> [String] {
        var items: [String] = []
        var current = ""
        var escaping = false
        for character in value {
            if escaping {
                current.append(character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else if character == ";" {
                if !current.isEmpty { items.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { items.append(current) }
        return items
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: Character(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
