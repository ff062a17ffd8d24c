/// A string value that is checked when made and coded as a plain JSON string, so that a value read
/// from outside (a socket request, a file) is as valid as one made in code.
///
/// Conforming types give the validating `init(_:)` and `rawValue`; coding, ordering, description and
/// `init?(rawValue:)` come from here.
public protocol ValidatedString: RawRepresentable<String>, Hashable, Comparable, Sendable, Codable,
    CustomStringConvertible
{
    init(_ text: String) throws(ScreenTimeCoreError)
}

extension ValidatedString {
    /// For `RawRepresentable`: nil where `init(_:)` would throw.
    public init?(rawValue: String) {
        guard let value = try? Self(rawValue) else { return nil }
        self = value
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
