import FoundationEssentials

/// The wire form of a request: `{"version":1,"kind":"shield","body":{...}}`, and from the
/// dashboard (`screentime-web`) the guardian's session it acts in: `"session":"…"`.
///
/// Decoding reports each way a request can be wrong with its own code: not JSON or not the right
/// shape (`malformedRequest`), another version (`unsupportedVersion`), a kind this agent does not
/// know (`unknownRequest`, given by the router).
public enum RequestEnvelope {
    public struct Header: Decodable, Sendable {
        public var version: Int
        public var kind: String
        /// The dashboard's session the request is made in (its sign-in token), if any.
        public var session: String?
    }

    private struct Body<T: Decodable>: Decodable { var body: T }
    private struct Envelope<T: Encodable>: Encodable {
        var version: Int
        var kind: String
        var session: String?
        var body: T
    }

    /// The bytes of a request, made in `session` (the dashboard's) if one is given.
    public static func encode<R: ControlRequest>(_ request: R, session: String? = nil) throws -> [UInt8] {
        Array(try encoder.encode(Envelope(version: protocolVersion, kind: R.kind, session: session, body: request)))
    }

    /// The kind a message names, once its version is checked.
    public static func kind(of bytes: [UInt8]) throws(ScreenTimeIPCError) -> String {
        try header(of: bytes).kind
    }

    /// The kind and session a message names, once its version is checked.
    public static func header(of bytes: [UInt8]) throws(ScreenTimeIPCError) -> Header {
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(bytes))
        } catch {
            throw ScreenTimeIPCError(
                .malformedRequest, "a request is a JSON object with \"version\" and \"kind\" (\(describe(error)))")
        }
        guard header.version == protocolVersion else {
            throw ScreenTimeIPCError(
                .unsupportedVersion,
                "the request speaks protocol version \(header.version); this agent speaks \(protocolVersion)")
        }
        return header
    }

    /// The request a message carries, as the type its kind names.
    public static func decode<R: ControlRequest>(_ type: R.Type, from bytes: [UInt8]) throws(ScreenTimeIPCError) -> R {
        let kind = try kind(of: bytes)
        guard kind == R.kind else {
            throw ScreenTimeIPCError(.malformedRequest, "expected a \(R.kind) request, got \(kind.prefix(60))")
        }
        do {
            return try decoder.decode(Body<R>.self, from: Data(bytes)).body
        } catch {
            throw ScreenTimeIPCError(.malformedRequest, "the \(R.kind) request's body: \(describe(error))")
        }
    }

    /// A decoding error in a sentence: which key, and what was wrong with it.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \"\(key.stringValue)\" at \(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context)): \(context.debugDescription)"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// The wire form of a reply: `{"version":1,"result":{...}}` or
/// `{"version":1,"error":{"code":"...","message":"..."}}`.
public enum ReplyCoding {
    private struct Success<T: Encodable>: Encodable {
        var version = protocolVersion
        var result: T
    }

    private struct Failure: Codable {
        var version = protocolVersion
        var error: ScreenTimeIPCError
    }

    private struct Header: Decodable {
        var version: Int
        var error: ScreenTimeIPCError?
    }

    private struct Result<T: Decodable>: Decodable { var result: T }

    public static func encode(_ result: some Encodable) throws -> [UInt8] {
        Array(try encoder.encode(Success(result: result)))
    }

    public static func encode(_ error: ScreenTimeIPCError) -> [UInt8] {
        // A reply of two strings always encodes.
        (try? encoder.encode(Failure(error: error))).map(Array.init) ?? Array(#"{"version":1}"#.utf8)
    }

    /// The result, or the agent's error thrown.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(ScreenTimeIPCError) -> T {
        let data = Data(bytes)
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: data)
        } catch {
            throw ScreenTimeIPCError(
                .malformedReply, "the agent's reply is not a reply: \(RequestEnvelope.describe(error))")
        }
        if let error = header.error { throw error }
        do {
            return try decoder.decode(Result<T>.self, from: data).result
        } catch {
            throw ScreenTimeIPCError(.malformedReply, "the agent's reply: \(RequestEnvelope.describe(error))")
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
