/// The name of a store (Apple's `ManagedSettingsStore.Name`): 1 to 64 letters, digits and `. _ -`.
public struct StoreName: ValidatedString {
    /// The store a client uses when it names none.
    public static let `default` = StoreName(validRawValue: "default")

    public let rawValue: String

    public init(_ rawValue: String) throws(ScreenTimeCoreError) {
        guard isIdentifierText(rawValue, maximumLength: 64) else {
            throw ScreenTimeCoreError(
                .invalidStoreName,
                "'\(rawValue.prefix(80))' is not a store name (1 to 64 letters, digits and . _ -)"
            )
        }
        self.rawValue = rawValue
    }

    private init(validRawValue: String) { rawValue = validRawValue }

    /// For the names this module itself gives (all valid).
    init(validatedLiteral: String) { rawValue = validatedLiteral }
}

/// Who owns a set of stores: a guardian app (`screentime` for the CLI, `org.example.Guardian`).
/// Apple's limits (50 stores, 20 monitored activities) apply per client.
public struct ClientID: ValidatedString {
    /// The command-line tool's own client.
    public static let commandLine = ClientID(validRawValue: "screentime")
    /// The agent's own limits and downtime: a client of their own, so that no other client's
    /// extension (the command line's included) can clear their stores or stop their monitors.
    public static let agent = ClientID(validRawValue: "screentime.agent")

    public let rawValue: String

    public init(_ rawValue: String) throws(ScreenTimeCoreError) {
        guard isIdentifierText(rawValue, maximumLength: 128) else {
            throw ScreenTimeCoreError(
                .invalidClient,
                "'\(rawValue.prefix(80))' is not a client ID (1 to 128 letters, digits and . _ -, like org.example.Guardian)"
            )
        }
        self.rawValue = rawValue
    }

    private init(validRawValue: String) { rawValue = validRawValue }
}

/// One store of one client: what a shield is attributed to in the shield message.
public struct StoreKey: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var client: ClientID
    public var name: StoreName

    public init(client: ClientID, name: StoreName) {
        self.client = client
        self.name = name
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.client, lhs.name) < (rhs.client, rhs.name) }
    public var description: String { "\(client)/\(name)" }
}

/// Letters, digits and `. _ -`, not starting with `.` or `-`.
func isIdentifierText(_ text: String, maximumLength: Int) -> Bool {
    (1...maximumLength).contains(text.utf8.count) && !text.hasPrefix(".") && !text.hasPrefix("-")
        && text.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39)
                || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D
        }
}
