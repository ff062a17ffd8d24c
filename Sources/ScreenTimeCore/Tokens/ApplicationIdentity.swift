/// What an application is, in the canonical form its token is minted from.
///
/// Best evidence first: a desktop-entry ID (`org.mozilla.firefox`; a Flatpak's app ID is its
/// desktop-entry ID by Flatpak's own rules, so both give one identity), a Snap name, or — for a
/// program with neither — the SHA-256 of the executable's contents, so that a copied or renamed
/// binary is still the same application.
public enum ApplicationIdentity: Hashable, Sendable, Codable, CustomStringConvertible {
    case desktopEntry(String)
    case snap(String)
    case executable(String)

    /// A desktop-entry ID, with or without the `.desktop` suffix.
    public static func desktopEntry(id: String) throws(ScreenTimeCoreError) -> Self {
        var id = id
        if id.hasSuffix(".desktop") { id.removeLast(".desktop".count) }
        guard (1...255).contains(id.utf8.count), !id.hasPrefix("."),
            id.unicodeScalars.allSatisfy(Self.isDesktopIDScalar)
        else {
            throw ScreenTimeCoreError(
                .invalidApplicationIdentity,
                "'\(id.prefix(80))' is not a desktop-entry ID (letters, digits and . _ - + @, like org.mozilla.firefox)"
            )
        }
        return .desktopEntry(id)
    }

    /// A Flatpak application ID (`org.gnome.Chess`): the same identity as its desktop entry.
    public static func flatpak(id: String) throws(ScreenTimeCoreError) -> Self {
        guard id.split(separator: ".", omittingEmptySubsequences: false).count >= 3 else {
            throw ScreenTimeCoreError(
                .invalidApplicationIdentity,
                "'\(id.prefix(80))' is not a Flatpak ID (at least three dot-separated parts, like org.gnome.Chess)"
            )
        }
        return try desktopEntry(id: id)
    }

    /// A Snap name (`firefox`).
    public static func snap(name: String) throws(ScreenTimeCoreError) -> Self {
        let valid =
            (1...40).contains(name.utf8.count) && !name.hasPrefix("-") && !name.hasSuffix("-")
            && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        guard valid else {
            throw ScreenTimeCoreError(
                .invalidApplicationIdentity,
                "'\(name.prefix(80))' is not a Snap name (1 to 40 lower-case letters, digits and -)"
            )
        }
        return .snap(name)
    }

    /// An executable known by the SHA-256 of its contents, as 64 hex digits.
    public static func executable(sha256 hex: String) throws(ScreenTimeCoreError) -> Self {
        let lower = hex.lowercased()
        guard lower.utf8.count == 64,
            lower.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
        else {
            throw ScreenTimeCoreError(
                .invalidApplicationIdentity,
                "an executable's identity is the SHA-256 of its contents as 64 hex digits, not '\(hex.prefix(80))'"
            )
        }
        return .executable(lower)
    }

    /// The text a token is minted from: `desktop:ID`, `snap:NAME` or `exe:sha256:HEX`.
    public var canonical: String {
        switch self {
        case .desktopEntry(let id): "desktop:\(id)"
        case .snap(let name): "snap:\(name)"
        case .executable(let hex): "exe:sha256:\(hex)"
        }
    }

    /// Parses the canonical text back (`desktop:…`, `snap:…`, `exe:sha256:…`), validating it.
    public init(canonical text: String) throws(ScreenTimeCoreError) {
        if text.hasPrefix("desktop:") {
            self = try .desktopEntry(id: String(text.dropFirst("desktop:".count)))
        } else if text.hasPrefix("snap:") {
            self = try .snap(name: String(text.dropFirst("snap:".count)))
        } else if text.hasPrefix("exe:sha256:") {
            self = try Self.executable(sha256: String(text.dropFirst("exe:sha256:".count)))
        } else {
            throw ScreenTimeCoreError(
                .invalidApplicationIdentity,
                "'\(text.prefix(80))' is not an application identity (desktop:ID, snap:NAME or exe:sha256:HEX)"
            )
        }
    }

    public var description: String { canonical }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(canonical: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(canonical)
    }

    private static func isDesktopIDScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-", "+", "@": true
        default: false
        }
    }
}
