/// A TLS ClientHello, read from the first bytes a client sends on a connection: the server name
/// it asks for (SNI) and what a reference reader can be compared on.
///
/// The bytes come from a child and are hostile: every length is checked against the bytes there
/// are, and against the bounds of what encloses it. The hello may span several records, and the
/// records several TCP segments (a ClientHello with post-quantum key shares is about 1,800 bytes,
/// and Chromium permutes its extensions, so the name may come last): `read` says `.incomplete`
/// until the whole handshake message is there.
public struct TLSClientHello: Hashable, Sendable {
    /// The outcome of reading what a client sent so far: `.other` when it is not a TLS handshake
    /// record at all.
    public typealias Reading = OpeningReading<TLSClientHello>

    /// The largest ClientHello accepted (the handshake message, across records). Real ones are
    /// 200 bytes to a few kilobytes; what is longer is refused rather than waited for.
    public static let maximumLength = 16_384

    public static let extensionServerName: UInt16 = 0
    public static let extensionALPN: UInt16 = 16
    /// `encrypted_client_hello`: the outer hello's server name is then only the client-facing one.
    public static let extensionECH: UInt16 = 0xFE0D

    /// `legacy_version` of the hello (0x0303 for TLS 1.2 and 1.3).
    public var legacyVersion: UInt16
    /// The length of the handshake message's body.
    public var handshakeLength: Int
    public var cipherSuiteCount: Int
    /// Extension types in wire order.
    public var extensions: [UInt16]
    /// The `host_name` entries of the server-name extension (normally one), as sent.
    public var serverNames: [[UInt8]]
    public var alpn: [[UInt8]]

    public var hasECH: Bool { extensions.contains(Self.extensionECH) }

    /// The first server name as text, for reports and tests.
    public var serverName: String? { serverNames.first.map { String(decoding: $0, as: UTF8.self) } }

    /// Reads the records at the start of `bytes`.
    public static func read(_ bytes: ArraySlice<UInt8>) -> Reading {
        guard let first = bytes.first else { return .incomplete }
        guard first == 0x16 else { return .other }
        if bytes.count >= 2, bytes[bytes.startIndex + 1] != 0x03 { return .other }
        // The handshake stream: the fragments of consecutive handshake records.
        var message: [UInt8] = []
        var offset = bytes.startIndex
        var needed: Int?
        while offset < bytes.endIndex {
            guard bytes.endIndex - offset >= 5 else { return .incomplete }
            let type = bytes[offset]
            guard type == 0x16 else {
                return .invalid("a record of type \(type) before the ClientHello was complete")
            }
            guard bytes[offset + 1] == 0x03, bytes[offset + 2] <= 0x04 else {
                return .invalid(
                    "a record version that is not TLS (0x\(hex(bytes[offset + 1]))\(hex(bytes[offset + 2])))")
            }
            let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            guard length > 0, length <= 16_384 + 256 else { return .invalid("a record length of \(length)") }
            let fragmentEnd = offset + 5 + length
            message += bytes[(offset + 5)..<min(fragmentEnd, bytes.endIndex)]
            if needed == nil, message.count >= 4 {
                guard message[0] == 1 else { return .invalid("handshake message \(message[0]), not a ClientHello") }
                let bodyLength = Int(message[1]) << 16 | Int(message[2]) << 8 | Int(message[3])
                guard bodyLength >= 38, bodyLength <= maximumLength else {
                    return .invalid("a ClientHello length of \(bodyLength)")
                }
                needed = 4 + bodyLength
            }
            if let needed, message.count >= needed {
                return parse(message[4..<needed], legacyLength: needed - 4)
            }
            guard fragmentEnd <= bytes.endIndex else { return .incomplete }
            offset = fragmentEnd
        }
        return .incomplete
    }

    private static func parse(_ body: ArraySlice<UInt8>, legacyLength: Int) -> Reading {
        var reader = SliceReader(body)
        guard let version = reader.u16(), reader.skip(32), let sessionLength = reader.u8(), sessionLength <= 32,
            reader.skip(Int(sessionLength)), let suitesLength = reader.u16(), suitesLength >= 2,
            suitesLength % 2 == 0, reader.skip(Int(suitesLength)), let compressionLength = reader.u8(),
            compressionLength >= 1, reader.skip(Int(compressionLength))
        else { return .invalid("a ClientHello whose fixed fields do not fit") }
        var hello = TLSClientHello(
            legacyVersion: version, handshakeLength: legacyLength, cipherSuiteCount: Int(suitesLength) / 2,
            extensions: [], serverNames: [], alpn: [])
        // A hello may end without extensions (TLS 1.0 clients); then it names no server.
        guard !reader.atEnd else { return .read(hello) }
        guard let extensionsLength = reader.u16(), var extensions = reader.take(Int(extensionsLength)), reader.atEnd
        else { return .invalid("extensions whose length does not match the hello") }
        while !extensions.atEnd {
            guard let type = extensions.u16(), let length = extensions.u16(), let data = extensions.take(Int(length))
            else { return .invalid("an extension that runs past the hello") }
            hello.extensions.append(type)
            switch type {
            case extensionServerName:
                guard hello.serverNames.isEmpty, let names = serverNames(data) else {
                    return .invalid("a server-name extension that cannot be read")
                }
                hello.serverNames = names
            case extensionALPN:
                guard let protocols = protocols(data) else { return .invalid("an ALPN extension that cannot be read") }
                hello.alpn = protocols
            default:
                break
            }
        }
        return .read(hello)
    }

    private static func serverNames(_ data: SliceReader) -> [[UInt8]]? {
        var data = data
        guard let listLength = data.u16(), var list = data.take(Int(listLength)), data.atEnd, !list.atEnd else {
            return nil
        }
        var names: [[UInt8]] = []
        while !list.atEnd {
            guard let type = list.u8(), let length = list.u16(), length > 0, let name = list.take(Int(length)) else {
                return nil
            }
            if type == 0 { names.append(Array(name.bytes)) }
        }
        return names
    }

    private static func protocols(_ data: SliceReader) -> [[UInt8]]? {
        var data = data
        guard let listLength = data.u16(), var list = data.take(Int(listLength)), data.atEnd else { return nil }
        var protocols: [[UInt8]] = []
        while !list.atEnd {
            guard let length = list.u8(), length > 0, let name = list.take(Int(length)) else { return nil }
            protocols.append(Array(name.bytes))
        }
        return protocols
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }
}

/// Reads big-endian fields off a slice; every read checks the bytes that are left and returns
/// nil past the end, so that a lying length ends a parse instead of trapping.
struct SliceReader {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var atEnd: Bool { bytes.isEmpty }
    var remaining: Int { bytes.count }

    mutating func u8() -> UInt8? {
        guard let byte = bytes.first else { return nil }
        bytes = bytes.dropFirst()
        return byte
    }

    mutating func u16() -> UInt16? {
        guard bytes.count >= 2 else { return nil }
        let value = UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1])
        bytes = bytes.dropFirst(2)
        return value
    }

    mutating func u32() -> UInt32? {
        guard let high = u16(), let low = u16() else { return nil }
        return UInt32(high) << 16 | UInt32(low)
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, bytes.count >= count else { return false }
        bytes = bytes.dropFirst(count)
        return true
    }

    /// The next `count` bytes as a reader of their own.
    mutating func take(_ count: Int) -> SliceReader? {
        guard count >= 0, bytes.count >= count else { return nil }
        let taken = bytes.prefix(count)
        bytes = bytes.dropFirst(count)
        return SliceReader(taken)
    }
}
