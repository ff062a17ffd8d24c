/// The name of a monitored activity (Apple's `DeviceActivityName`): 1 to 128 characters, no
/// control characters.
public struct DeviceActivityName: RawRepresentable, Hashable, Comparable, Sendable, Codable,
    CustomStringConvertible
{
    public let rawValue: String

    public init(_ rawValue: String) throws(ScreenTimeCoreError) {
        guard isNameText(rawValue) else {
            throw ScreenTimeCoreError(
                .invalidActivityName,
                "'\(rawValue.prefix(80))' is not an activity name (1 to 128 characters, no control characters)"
            )
        }
        self.rawValue = rawValue
    }

    public init?(rawValue: String) {
        guard let name = try? Self(rawValue) else { return nil }
        self = name
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        do {
            self = try Self(try container.decode(String.self))
        } catch let error as ScreenTimeCoreError {
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
