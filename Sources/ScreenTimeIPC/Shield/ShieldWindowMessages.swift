/// Apple's `ShieldConfiguration` as JSON, as a configuration extension answers it: every field
/// optional, a missing one meaning the default. Colours are `#rrggbb`; `icon` is an icon name of
/// the desktop's theme or an absolute path to an image.
public struct ShieldConfigurationData: Codable, Sendable, Hashable {
    /// Text and its colour (Apple's `ShieldConfiguration.Label`).
    public struct Label: Codable, Sendable, Hashable {
        public var text: String
        public var color: String?

        public init(text: String, color: String? = nil) {
            self.text = text
            self.color = color
        }
    }

    public var backgroundColor: String?
    public var icon: String?
    public var title: Label?
    public var subtitle: Label?
    public var primaryButtonLabel: Label?
    public var primaryButtonBackgroundColor: String?
    public var secondaryButtonLabel: Label?

    public init(
        backgroundColor: String? = nil, icon: String? = nil, title: Label? = nil, subtitle: Label? = nil,
        primaryButtonLabel: Label? = nil, primaryButtonBackgroundColor: String? = nil,
        secondaryButtonLabel: Label? = nil
    ) {
        self.backgroundColor = backgroundColor
        self.icon = icon
        self.title = title
        self.subtitle = subtitle
        self.primaryButtonLabel = primaryButtonLabel
        self.primaryButtonBackgroundColor = primaryButtonBackgroundColor
        self.secondaryButtonLabel = secondaryButtonLabel
    }

    /// The longest text kept of a label; the rest is cut.
    public static let maximumText = 200

    /// What of it can be shown: a colour that is not `#rrggbb`, an icon that is neither a plain
    /// icon name nor an absolute path, text with control characters or past `maximumText`, each
    /// dropped (its default shows instead). Returns the problems, for the log and `status`.
    public func sanitized() -> (configuration: ShieldConfigurationData, problems: [String]) {
        var problems: [String] = []
        func color(_ value: String?, _ field: String) -> String? {
            guard let value else { return nil }
            let hex = value.utf8.dropFirst()
            guard value.hasPrefix("#"), hex.count == 6,
                hex.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) })
            else {
                problems.append("\(field) is not a colour (#rrggbb)")
                return nil
            }
            return value
        }
        func label(_ value: Label?, _ field: String) -> Label? {
            guard let value else { return nil }
            let cleaned = String(
                String.UnicodeScalarView(
                    value.text.unicodeScalars.filter { $0 == "\n" || $0.properties.generalCategory != .control }
                ).prefix(Self.maximumText))
            if cleaned.unicodeScalars.count != value.text.unicodeScalars.count {
                problems.append("\(field) had control characters or was too long: cut")
            }
            guard cleaned.contains(where: { !$0.isWhitespace }) else {
                problems.append("\(field) is empty")
                return nil
            }
            return Label(text: cleaned, color: color(value.color, "\(field).color"))
        }
        var icon = self.icon
        if let name = icon {
            let plain =
                !name.isEmpty && name.utf8.count <= 255
                && name.utf8.allSatisfy {
                    ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x2E
                        || $0 == 0x5F
                }
            let path =
                name.hasPrefix("/") && name.utf8.count <= 4096 && !name.contains("/../") && !name.utf8.contains(0)
            if !plain && !path {
                problems.append("icon is neither an icon name nor an absolute path")
                icon = nil
            }
        }
        let result = ShieldConfigurationData(
            backgroundColor: color(backgroundColor, "backgroundColor"), icon: icon, title: label(title, "title"),
            subtitle: label(subtitle, "subtitle"), primaryButtonLabel: label(primaryButtonLabel, "primaryButtonLabel"),
            primaryButtonBackgroundColor: color(primaryButtonBackgroundColor, "primaryButtonBackgroundColor"),
            secondaryButtonLabel: label(secondaryButtonLabel, "secondaryButtonLabel"))
        return (result, problems)
    }
}

/// What the shield window shows: the first line of its standard input.
public struct ShieldWindowContent: Codable, Sendable, Hashable {
    /// `application` (an app was started or brought to the front and is frozen), `webDomain` (a
    /// shielded site was looked up: a small notice that closes by itself).
    public var kind: String
    /// The name of what is shielded, as the child may see it (the app's name, the domain).
    public var name: String
    /// The look, resolved: the configuration extension's answer over the defaults.
    public var configuration: ShieldConfigurationData
    /// Whether it is a notice that closes by itself after `seconds`.
    public var closesAfter: Int?
    /// Whether the primary button closes the window by itself (else the agent says whether to:
    /// an action extension answers it).
    public var primaryCloses: Bool

    public init(
        kind: String, name: String, configuration: ShieldConfigurationData, closesAfter: Int? = nil,
        primaryCloses: Bool = true
    ) {
        self.kind = kind
        self.name = name
        self.configuration = configuration
        self.closesAfter = closesAfter
        self.primaryCloses = primaryCloses
    }

    private enum CodingKeys: String, CodingKey { case kind, name, configuration, closesAfter, primaryCloses }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(String.self, forKey: .kind)
        name = try container.decode(String.self, forKey: .name)
        configuration = try container.decode(ShieldConfigurationData.self, forKey: .configuration)
        closesAfter = try container.decodeIfPresent(Int.self, forKey: .closesAfter)
        primaryCloses = try container.decodeIfPresent(Bool.self, forKey: .primaryCloses) ?? true
    }
}

/// A later line the agent writes to the shield window: a message to show (what a guardian
/// decided), or `close`.
public struct ShieldWindowUpdate: Codable, Sendable, Hashable {
    public var message: String?
    public var close: Bool?

    public init(message: String? = nil, close: Bool? = nil) {
        self.message = message
        self.close = close
    }
}

/// What the shield window tells the agent, one JSON line on its standard output each: which
/// button was pressed. The window runs as the child: the agent treats every line as the child's.
public struct ShieldWindowEvent: Codable, Sendable, Hashable {
    /// `primary` or `secondary`.
    public var pressed: String

    public init(pressed: String) { self.pressed = pressed }
}

/// What the picker dialog (`screentime-shield --pick`) lists: its first line of standard input.
public struct PickerItems: Codable, Sendable, Hashable {
    public struct Application: Codable, Sendable, Hashable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    public struct Category: Codable, Sendable, Hashable {
        public var name: String
        /// `app` or `web`.
        public var kind: String
        public init(name: String, kind: String) {
            self.name = name
            self.kind = kind
        }
    }

    public var title: String?
    public var applications: [Application]
    public var categories: [Category]

    public init(title: String? = nil, applications: [Application], categories: [Category]) {
        self.title = title
        self.applications = applications
        self.categories = categories
    }
}

/// What the picker dialog answers: desktop-entry IDs, category names and domains, as picked.
public struct PickerAnswer: Codable, Sendable, Hashable {
    public var applications: [String]
    public var categories: [String]
    public var domains: [String]

    public init(applications: [String], categories: [String], domains: [String]) {
        self.applications = applications
        self.categories = categories
        self.domains = domains
    }
}

/// What the guardian dialog (`screentime-shield --guardian`) says: its first line of standard input.
public struct GuardianDialogRequest: Codable, Sendable, Hashable {
    public var title: String?
    public var text: String?
    /// A guardian's name already given (the password is then asked alone).
    public var guardian: String?

    public init(title: String? = nil, text: String? = nil, guardian: String? = nil) {
        self.title = title
        self.text = text
        self.guardian = guardian
    }
}
