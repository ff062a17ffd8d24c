import Foundation

/// The wire form of a request: `{"version":1,"kind":"shield","body":{...}}`.
///
/// Decoding reports each way a request can be wrong with its own code: not JSON or not the right
/// shape (`malformedRequest`), another version (`unsupportedVersion`), a kind this agent does not
/// know (`unknownRequest`).
public enum RequestCoding {
    private struct Header: Decodable {
        var version: Int
        var kind: String
    }

    private struct Body<T: Decodable>: Decodable { var body: T }
    private struct Envelope<T: Encodable>: Encodable {
        var version: Int
        var kind: String
        var body: T
    }

    private struct UserBody: Codable { var user: UserReference? }
    private struct Empty: Codable {}

    public static func encode(_ request: Request) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        func wrap(_ body: some Encodable) throws -> [UInt8] {
            Array(try encoder.encode(Envelope(version: protocolVersion, kind: request.kind, body: body)))
        }
        switch request {
        case .ping: return try wrap(Empty())
        case .status(let user), .revoke(let user), .applications(let user), .categories(let user):
            return try wrap(UserBody(user: user))
        case .authorize(let body): return try wrap(body)
        case .token(let body): return try wrap(body)
        case .shield(let body): return try wrap(body)
        case .clear(let body): return try wrap(body)
        case .filter(let body): return try wrap(body)
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(ScreenTimeIPCError) -> Request {
        let data = Data(bytes)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: data)
        } catch {
            throw ScreenTimeIPCError(
                .malformedRequest, "a request is a JSON object with \"version\" and \"kind\" (\(describe(error)))")
        }
        guard header.version == protocolVersion else {
            throw ScreenTimeIPCError(
                .unsupportedVersion,
                "the request speaks protocol version \(header.version); this agent speaks \(protocolVersion)")
        }
        func body<T: Decodable>(_ type: T.Type) throws(ScreenTimeIPCError) -> T {
            do {
                return try decoder.decode(Body<T>.self, from: data).body
            } catch {
                throw ScreenTimeIPCError(.malformedRequest, "the \(header.kind) request's body: \(describe(error))")
            }
        }
        switch header.kind {
        case "ping": return .ping
        case "status": return .status(user: try body(UserBody.self).user)
        case "revoke": return .revoke(user: try body(UserBody.self).user)
        case "applications": return .applications(user: try body(UserBody.self).user)
        case "categories": return .categories(user: try body(UserBody.self).user)
        case "authorize": return .authorize(try body(AuthorizeRequest.self))
        case "token": return .token(try body(TokenRequest.self))
        case "shield": return .shield(try body(ShieldRequest.self))
        case "clear": return .clear(try body(StoreRequest.self))
        case "filter": return .filter(try body(FilterRequest.self))
        default:
            throw ScreenTimeIPCError(.unknownRequest, "this agent knows no request of kind '\(header.kind.prefix(60))'")
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
                .malformedReply, "the agent's reply is not a reply: \(RequestCoding.describe(error))")
        }
        if let error = header.error { throw error }
        do {
            return try decoder.decode(Result<T>.self, from: data).result
        } catch {
            throw ScreenTimeIPCError(.malformedReply, "the agent's reply: \(RequestCoding.describe(error))")
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
