/// A DNS query as the kernel hands it to the filter: a whole IPv4 or IPv6 packet carrying UDP or
/// TCP, leaving the asker's socket.
///
/// Parsing checks every length against the bytes there are and refuses what the filter cannot
/// judge (fragments, IPv6 extension headers, other protocols): the filter drops those, which fails
/// closed. A reply is written the other way round — addresses and ports swapped, checksums
/// computed — so that a packet accepted in its place reaches the asker as the server's answer.
public struct DNSPacket: Sendable {
    public enum Transport: Sendable { case udp, tcp }

    public let ipVersion: Int
    public let transport: Transport
    public let sourcePort: UInt16
    public let destinationPort: UInt16
    /// The transport's payload: one DNS message over UDP; length-prefixed messages over TCP.
    public let payload: ArraySlice<UInt8>
    /// A TCP segment that opens a connection (SYN, with data only under TCP Fast Open): it cannot
    /// be answered in place, since there is no connection yet to answer on.
    public var opensConnection: Bool { transport == .tcp && tcpFlags & 0x02 != 0 }

    /// The addresses, 4 or 16 bytes.
    public let source: ArraySlice<UInt8>
    public let destination: ArraySlice<UInt8>
    /// TCP's sequence number (of the payload's first byte) and flags; 0 for UDP.
    public let sequence: UInt32
    public let tcpFlags: UInt8
    /// TCP's acknowledgement number (the next byte the sender expects); 0 for UDP.
    public let acknowledgment: UInt32
    private let window: UInt16

    public static let flagFIN: UInt8 = 0x01
    public static let flagSYN: UInt8 = 0x02
    public static let flagRST: UInt8 = 0x04
    public static let flagACK: UInt8 = 0x10
    public static let flagURG: UInt8 = 0x20

    /// The IP protocol number a packet says it carries (6 TCP, 17 UDP, …), from its first header
    /// alone; nil when it is not IPv4 or IPv6 or too short to say.
    public static func protocolNumber(of bytes: [UInt8]) -> UInt8? {
        switch bytes.first.map({ $0 >> 4 }) {
        case 4: bytes.count > 9 ? bytes[9] : nil
        case 6: bytes.count > 6 ? bytes[6] : nil
        default: nil
        }
    }

    static let protocolTCP: UInt8 = 6
    static let protocolUDP: UInt8 = 17

    public init(parsing bytes: [UInt8]) throws(ScreenTimeCoreError) {
        guard let first = bytes.first else { throw Self.invalid("an empty packet") }
        let protocolNumber: UInt8
        let transportStart: Int
        let end: Int
        switch first >> 4 {
        case 4:
            guard bytes.count >= 20 else { throw Self.invalid("an IPv4 header cut short (\(bytes.count) bytes)") }
            let headerLength = Int(first & 0x0F) * 4
            let totalLength = Int(Self.u16(bytes, 2))
            guard headerLength >= 20, headerLength <= totalLength, totalLength <= bytes.count else {
                throw Self.invalid("IPv4 lengths that do not fit the packet")
            }
            guard Self.u16(bytes, 6) & 0x3FFF == 0 else { throw Self.invalid("an IPv4 fragment") }
            ipVersion = 4
            protocolNumber = bytes[9]
            source = bytes[12..<16]
            destination = bytes[16..<20]
            transportStart = headerLength
            end = totalLength
        case 6:
            guard bytes.count >= 40 else { throw Self.invalid("an IPv6 header cut short (\(bytes.count) bytes)") }
            let payloadLength = Int(Self.u16(bytes, 4))
            guard 40 + payloadLength <= bytes.count else { throw Self.invalid("an IPv6 length beyond the packet") }
            ipVersion = 6
            protocolNumber = bytes[6]
            source = bytes[8..<24]
            destination = bytes[24..<40]
            transportStart = 40
            end = 40 + payloadLength
        default:
            throw Self.invalid("IP version \(first >> 4)")
        }
        switch protocolNumber {
        case Self.protocolUDP:
            guard end - transportStart >= 8 else { throw Self.invalid("a UDP header cut short") }
            let length = Int(Self.u16(bytes, transportStart + 4))
            guard length >= 8, transportStart + length <= end else {
                throw Self.invalid("a UDP length that does not fit the packet")
            }
            transport = .udp
            payload = bytes[(transportStart + 8)..<(transportStart + length)]
            sequence = 0
            acknowledgment = 0
            tcpFlags = 0
            window = 0
        case Self.protocolTCP:
            guard end - transportStart >= 20 else { throw Self.invalid("a TCP header cut short") }
            let headerLength = Int(bytes[transportStart + 12] >> 4) * 4
            guard headerLength >= 20, transportStart + headerLength <= end else {
                throw Self.invalid("a TCP header length that does not fit the packet")
            }
            transport = .tcp
            payload = bytes[(transportStart + headerLength)..<end]
            sequence = Self.u32(bytes, transportStart + 4)
            acknowledgment = Self.u32(bytes, transportStart + 8)
            tcpFlags = bytes[transportStart + 13]
            window = Self.u16(bytes, transportStart + 14)
        default:
            throw Self.invalid("IP protocol \(protocolNumber), not UDP or TCP")
        }
        sourcePort = Self.u16(bytes, transportStart)
        destinationPort = Self.u16(bytes, transportStart + 2)
    }

    /// The DNS messages the packet carries, still on the wire: one over UDP; over TCP, each
    /// two-byte-length-prefixed message of the segment (none for a segment without data). A TCP
    /// segment must hold whole messages: a query split across segments cannot be judged.
    public func messages() throws(ScreenTimeCoreError) -> [ArraySlice<UInt8>] {
        switch transport {
        case .udp:
            return [payload]
        case .tcp:
            var messages: [ArraySlice<UInt8>] = []
            var offset = payload.startIndex
            while offset < payload.endIndex {
                guard payload.endIndex - offset >= 2 else {
                    throw Self.invalid("a TCP segment that ends inside a DNS length prefix")
                }
                let length = Int(UInt16(payload[offset]) << 8 | UInt16(payload[offset + 1]))
                guard length > 0, payload.endIndex - offset - 2 >= length else {
                    throw Self.invalid("a TCP segment that does not hold a whole DNS message")
                }
                messages.append(payload[(offset + 2)..<(offset + 2 + length)])
                offset += 2 + length
            }
            return messages
        }
    }

    /// A packet from the server back to the asker carrying `answers`: for UDP, the one answer as
    /// the datagram; for TCP, the answers length-prefixed in one segment that acknowledges this
    /// one's data and continues the server's sequence.
    public func reply(carrying answers: [[UInt8]]) -> [UInt8] { rewritten(carrying: answers, swapped: true) }

    /// The same UDP datagram, on its way, carrying another message instead (a server's reply
    /// turned into NXDOMAIN); nil for TCP, whose stream cannot be rewritten in place.
    public func forwarded(carrying message: [UInt8]) -> [UInt8]? {
        transport == .udp ? rewritten(carrying: [message], swapped: false) : nil
    }

    /// A TCP segment from the server back to the sender carrying `data` as it is (a block page),
    /// acknowledging this segment's data and continuing the server's sequence, and closing the
    /// server's side (FIN) when `closing`; nil for UDP.
    public func segmentBack(carrying data: [UInt8], closing: Bool) -> [UInt8]? {
        guard transport == .tcp else { return nil }
        return rewritten(body: Array(data.prefix(Int(UInt16.max) - 60)), swapped: true, closing: closing)
    }

    /// A packet carrying `answers`, from the receiver back to the sender (`swapped`), or on its
    /// way as it was.
    private func rewritten(carrying answers: [[UInt8]], swapped: Bool) -> [UInt8] {
        var body: [UInt8] = []
        switch transport {
        case .udp:
            body = answers.first ?? []
        case .tcp:
            for answer in answers {
                Self.append16(&body, UInt16(clamping: answer.count))
                body += answer.prefix(Int(UInt16.max))
            }
        }
        return rewritten(body: body, swapped: swapped, closing: false)
    }

    private func rewritten(body: [UInt8], swapped: Bool, closing: Bool) -> [UInt8] {
        let (from, to) = swapped ? (destination, source) : (source, destination)
        let (fromPort, toPort) = swapped ? (destinationPort, sourcePort) : (sourcePort, destinationPort)
        var segment: [UInt8] = []
        Self.append16(&segment, fromPort)
        Self.append16(&segment, toPort)
        let protocolNumber: UInt8
        switch transport {
        case .udp:
            protocolNumber = Self.protocolUDP
            Self.append16(&segment, UInt16(clamping: 8 + body.count))
            Self.append16(&segment, 0)
        case .tcp:
            protocolNumber = Self.protocolTCP
            Self.append32(&segment, acknowledgment)
            Self.append32(&segment, sequence &+ UInt32(truncatingIfNeeded: payload.count))
            segment += [5 << 4, closing ? 0x19 : 0x18]  // a 20-byte header; PSH and ACK (and FIN)
            Self.append16(&segment, window)
            segment += [0, 0, 0, 0]  // checksum and urgent pointer
        }
        segment += body
        // The transport checksum covers a pseudo-header of addresses, protocol and length.
        var pseudo = Array(from) + Array(to)
        if ipVersion == 4 {
            pseudo += [0, protocolNumber]
            Self.append16(&pseudo, UInt16(clamping: segment.count))
        } else {
            Self.append32(&pseudo, UInt32(segment.count))
            pseudo += [0, 0, 0, protocolNumber]
        }
        var checksum = Self.checksum(pseudo + segment)
        if protocolNumber == Self.protocolUDP && checksum == 0 { checksum = 0xFFFF }
        let at = protocolNumber == Self.protocolUDP ? 6 : 16
        segment[at] = UInt8(checksum >> 8)
        segment[at + 1] = UInt8(truncatingIfNeeded: checksum)

        var header: [UInt8]
        if ipVersion == 4 {
            header = [0x45, 0]
            Self.append16(&header, UInt16(clamping: 20 + segment.count))
            header += [0, 0, 0x40, 0, 64, protocolNumber, 0, 0]  // ID 0, don't fragment, TTL 64
            header += from
            header += to
            let sum = Self.checksum(header)
            header[10] = UInt8(sum >> 8)
            header[11] = UInt8(truncatingIfNeeded: sum)
        } else {
            header = [0x60, 0, 0, 0]
            Self.append16(&header, UInt16(clamping: segment.count))
            header += [protocolNumber, 64]
            header += from
            header += to
        }
        return header + segment
    }

    /// The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum.
    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index + 1 < bytes.count {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }

    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(u16(bytes, at)) << 16 | UInt32(u16(bytes, at + 2))
    }

    private static func append16(_ bytes: inout [UInt8], _ value: UInt16) {
        bytes += [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    private static func append32(_ bytes: inout [UInt8], _ value: UInt32) {
        append16(&bytes, UInt16(value >> 16))
        append16(&bytes, UInt16(truncatingIfNeeded: value))
    }

    private static func invalid(_ what: String) -> ScreenTimeCoreError {
        ScreenTimeCoreError(.invalidDNSMessage, "a packet the filter cannot judge: \(what)")
    }
}
