import FoundationEssentials

/// Any JSON document, for the files and messages whose shape is not the agent's own (a browser's
/// policies, sway's replies, the launcher's messages): read and written by FoundationEssentials'
/// JSON coders, with objects' keys sorted when written.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The document in `bytes`; throws what the decoder said of a document that is not JSON, and
    /// refuses one nested deeper than `maximumDepth` arrays and objects before decoding it (a
    /// child's program writes some of what is read here: its depth must not exhaust a stack).
    public init(parsing bytes: some Sequence<UInt8>, maximumDepth: Int = 256) throws {
        let data = Data(bytes)
        try Self.check(data, maximumDepth: maximumDepth)
        self = try JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// Refuses, before any decoding, a document nested deeper than `maximumDepth` arrays and
    /// objects or holding more than `maximumValues` values (counted as its arrays, objects and
    /// commas outside strings): what decoding it would cost is then bounded by its size and by
    /// these, whoever wrote it.
    public static func check(_ bytes: some Sequence<UInt8>, maximumDepth: Int = 256, maximumValues: Int = .max) throws {
        var depth = 0
        var values = 1
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                values += 1
                guard depth <= maximumDepth else { throw TooDeep(limit: maximumDepth) }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            case UInt8(ascii: ","): values += 1
            default: continue
            }
            guard values <= maximumValues else { throw TooMany(limit: maximumValues) }
        }
    }

    /// A document of more values than the reader takes.
    public struct TooMany: Error, CustomStringConvertible {
        public let limit: Int
        public var description: String { "JSON of more than \(limit) values" }
    }

    /// A document nested deeper than the reader takes.
    public struct TooDeep: Error, CustomStringConvertible {
        public let limit: Int
        public var description: String { "JSON nested deeper than \(limit) arrays and objects" }
    }

    /// The document as UTF-8, keys sorted; indented with `pretty`.
    public func serialized(pretty: Bool = false) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        // Every case encodes (a number that is not finite is written as null).
        return Array((try? encoder.encode(self)) ?? Data("null".utf8))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): value.isFinite ? try container.encode(value) : try container.encodeNil()
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as Swift's own types: nil as `JSONValue.null`, Bool, Int (Double where it has a
    /// fraction or does not fit), String, `[Any]` and `[String: Any]`.
    public var any: Any {
        switch self {
        case .null: JSONValue.null
        case .bool(let value): value
        case .integer(let value): Int(exactly: value).map { $0 as Any } ?? Double(value)
        case .number(let value): value
        case .string(let value): value
        case .array(let value): value.map(\.any)
        case .object(let value): value.mapValues(\.any)
        }
    }

    /// A value of Swift's own types as JSON (see `any`); nil for anything else.
    public init?(_ any: Any) {
        switch any {
        case let value as JSONValue: self = value
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Int64: self = .integer(value)
        case let value as Double: self = .number(value)
        case let value as String: self = .string(value)
        case let value as [Any]:
            var items: [JSONValue] = []
            for item in value {
                guard let json = JSONValue(item) else { return nil }
                items.append(json)
            }
            self = .array(items)
        case let value as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (key, item) in value {
                guard let json = JSONValue(item) else { return nil }
                members[key] = json
            }
            self = .object(members)
        default: return nil
        }
    }

    /// An object's members; nil for anything else.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// A string; nil for anything else.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// An integer (or a number with no fraction that fits); nil for anything else.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int64(exactly: value)
        default: nil
        }
    }
}
