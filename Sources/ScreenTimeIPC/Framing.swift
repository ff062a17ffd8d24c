/// The control socket's framing: each message is a 4-byte big-endian length, then that many bytes
/// of UTF-8 JSON. The length is checked before anything is read into memory, so a huge frame costs
/// the agent nothing but the error reply.
public enum Framing {
    /// The largest message accepted, in bytes (a full selection of 3 × 50 tokens is ~20 KiB).
    public static let maximumMessageSize = 1 << 20

    /// The frame for a message.
    public static func frame(_ payload: [UInt8]) -> [UInt8] {
        let count = UInt32(payload.count)
        return [
            UInt8(count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8),
            UInt8(truncatingIfNeeded: count),
        ] + payload
    }

    /// The payload length a 4-byte header announces, checked against the limit.
    public static func payloadLength(header: [UInt8]) throws(ScreenTimeIPCError) -> Int {
        guard header.count == 4 else {
            throw ScreenTimeIPCError(
                .malformedRequest, "a frame starts with a 4-byte length, got \(header.count) bytes")
        }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length > 0 else { throw ScreenTimeIPCError(.malformedRequest, "an empty message") }
        guard length <= maximumMessageSize else {
            throw ScreenTimeIPCError(
                .requestTooLarge, "a message of \(length) bytes; at most \(maximumMessageSize) are accepted")
        }
        return length
    }
}
