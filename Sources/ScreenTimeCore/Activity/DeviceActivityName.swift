/// The name of a monitored activity (Apple's `DeviceActivityName`): 1 to 128 characters, no
/// control characters. Made in code it is taken as written, as Apple's is; the agent checks it
/// (`validated(_:)`) when monitoring starts, and a decoded one is checked as it is read.
public struct DeviceActivityName: CheckedName {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// A name made freely in code (Apple's initializers do not throw) and checked where it comes from
/// outside: by `validated(_:)`, and when decoded.
public protocol CheckedName: RawRepresentable<String>, Hashable, Comparable, Sendable, Codable,
    CustomStringConvertible
{
    init(rawValue: String)
}

extension CheckedName {
    public init(_ rawValue: String) { self.init(rawValue: rawValue) }

    /// The name, if it is 1 to 128 characters with no control characters.
    public static func validated(_ text: String) throws(ScreenTimeCoreError) -> Self {
        guard isNameText(text) else {
            let (what, code) =
                Self.self == DeviceActivityName.self
                ? ("an activity name", ScreenTimeCoreError.Code.invalidActivityName)
                : ("an event name", ScreenTimeCoreError.Code.invalidEventName)
            throw ScreenTimeCoreError(
                code, "'\(text.prefix(80))' is not \(what) (1 to 128 characters, no control characters)")
        }
        return Self(rawValue: text)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try Self.validated(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// 1 to 128 characters, none of them control characters.
func isNameText(_ text: String) -> Bool {
    (1...128).contains(text.count)
        && text.unicodeScalars.allSatisfy { !$0.properties.generalCategory.isControlOrFormat || $0 == "\u{200D}" }
}

extension Unicode.GeneralCategory {
    fileprivate var isControlOrFormat: Bool { self == .control || self == .format }
}
