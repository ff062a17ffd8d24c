import Foundation
import ScreenTimeCore
import Testing

/// Packets as the kernel queues them, and the replies the filter writes in their place.
@Suite struct DNSPacketTests {
    static let client4: [UInt8] = [10, 0, 0, 2]
    static let server4: [UInt8] = [10, 0, 0, 53]
    static let client6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [2]
    static let server6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x53]

    static func query(_ name: String) -> [UInt8] {
        DNSMessage(id: 0xBEEF, flags: 0x0100, questions: [.init(name: DNSName(domainName(name)), type: 1)])
            .serialized()
    }

    static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    static func be32(_ value: UInt32) -> [UInt8] { be16(Int(value >> 16)) + be16(Int(value & 0xFFFF)) }

    /// A packet from the client to the server, written out field by field here (not by the code
    /// under test), with zero checksums (the kernel's offload leaves them unset too).
    static func packet(
        v6: Bool = false, tcp: Bool = false, payload: [UInt8], sequence: UInt32 = 1000, ack: UInt32 = 5000,
        flags: UInt8 = 0x18
    ) -> [UInt8] {
        let transport: [UInt8] =
            tcp
            ? be16(40000) + be16(53) + be32(sequence) + be32(ack) + [0x50, flags] + be16(512) + [0, 0, 0, 0] + payload
            : be16(40000) + be16(53) + be16(8 + payload.count) + [0, 0] + payload
        let proto: UInt8 = tcp ? 6 : 17
        if v6 {
            return [0x60, 0, 0, 0] + be16(transport.count) + [proto, 64] + client6 + server6 + transport
        }
        return [0x45, 0] + be16(20 + transport.count) + [0, 1, 0x40, 0, 64, proto, 0, 0] + client4 + server4
            + transport
    }

    /// The ones' complement sum of 16-bit words: 0xFFFF over data that carries its own checksum.
    static func sum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        for index in stride(from: 0, to: bytes.count, by: 2) {
            sum += UInt32(bytes[index]) << 8 | (index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0)
        }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return UInt16(sum)
    }

    @Test func aUDPQueryIsReadAndAnsweredFromTheServer() throws {
        let query = Self.query("blocked.example")
        let packet = try DNSPacket(parsing: Self.packet(payload: query))
        #expect(packet.ipVersion == 4 && packet.transport == .udp)
        #expect(packet.destinationPort == 53 && packet.sourcePort == 40000)
        #expect(try packet.messages().map(Array.init) == [query])

        let answer = DNSMessage.nxdomain(answering: try DNSMessage(parsing: query)).serialized()
        let reply = packet.reply(carrying: [answer])
        #expect(Array(reply[12..<16]) == Self.server4 && Array(reply[16..<20]) == Self.client4)
        #expect(Self.sum(Array(reply[0..<20])) == 0xFFFF, "IPv4 header checksum")
        let udp = Array(reply[20...])
        #expect(udp[0..<4] == [0, 53, 0x9C, 0x40][...])
        let pseudo = Self.server4 + Self.client4 + [0, 17] + Self.be16(udp.count)
        #expect(Self.sum(pseudo + udp) == 0xFFFF, "UDP checksum")
        #expect(Array(udp[8...]) == answer)
        // The reply is itself a packet this parser reads back.
        let back = try DNSPacket(parsing: reply)
        #expect(back.sourcePort == 53 && back.destinationPort == 40000)
        #expect(try DNSMessage(parsing: back.payload).rcode == DNSMessage.rcodeNXDomain)
    }

    @Test func anIPv6ReplyCarriesAValidUDPChecksum() throws {
        let packet = try DNSPacket(parsing: Self.packet(v6: true, payload: Self.query("x.example")))
        #expect(packet.ipVersion == 6)
        let reply = packet.reply(carrying: [[1, 2, 3]])
        #expect(Array(reply[8..<24]) == Self.server6 && Array(reply[24..<40]) == Self.client6)
        let udp = Array(reply[40...])
        #expect(Int(reply[4]) << 8 | Int(reply[5]) == udp.count)
        let pseudo = Self.server6 + Self.client6 + Self.be32(UInt32(udp.count)) + [0, 0, 0, 17]
        #expect(Self.sum(pseudo + udp) == 0xFFFF)
    }

    @Test func aTCPReplyContinuesTheServersSequenceAndAcknowledgesTheQuery() throws {
        let query = Self.query("blocked.example")
        let framed = Self.be16(query.count) + query
        let packet = try DNSPacket(parsing: Self.packet(tcp: true, payload: framed + framed))
        #expect(try packet.messages().count == 2)
        #expect(!packet.opensConnection)
        let reply = packet.reply(carrying: [[9, 9], [8]])
        let tcp = Array(reply[20...])
        #expect(Array(tcp[4..<8]) == Self.be32(5000), "the server's next sequence number")
        #expect(Array(tcp[8..<12]) == Self.be32(1000 + UInt32(framed.count * 2)), "everything sent is acknowledged")
        #expect(tcp[13] == 0x18)
        #expect(Array(tcp[20...]) == [0, 2, 9, 9, 0, 1, 8])
        let pseudo = Self.server4 + Self.client4 + [0, 6] + Self.be16(tcp.count)
        #expect(Self.sum(pseudo + tcp) == 0xFFFF, "TCP checksum")
    }

    /// The block page's segment: the bytes as they are (no DNS framing), the server's FIN, in
    /// both families, with checksums a receiver accepts; none for UDP.
    @Test(arguments: [false, true])
    func aSegmentBackCarriesDataAsItIsAndClosesTheServersSide(v6: Bool) throws {
        let request = Array("GET / HTTP/1.1\r\nHost: blocked.example\r\n\r\n".utf8)
        let packet = try DNSPacket(
            parsing: Self.packet(v6: v6, tcp: true, payload: request, sequence: 0xFFFF_FFF0, ack: 77))
        let page = Array("HTTP/1.1 403 Forbidden\r\n\r\nodd length!".utf8)
        let segment = try #require(packet.segmentBack(carrying: page, closing: true))
        let headerLength = v6 ? 40 : 20
        let tcp = Array(segment[headerLength...])
        if v6 {
            #expect(Array(segment[8..<24]) == Self.server6 && Array(segment[24..<40]) == Self.client6)
            #expect(Int(segment[4]) << 8 | Int(segment[5]) == tcp.count)
            let pseudo = Self.server6 + Self.client6 + Self.be32(UInt32(tcp.count)) + [0, 0, 0, 6]
            #expect(Self.sum(pseudo + tcp) == 0xFFFF, "TCP checksum")
        } else {
            #expect(Array(segment[12..<16]) == Self.server4 && Array(segment[16..<20]) == Self.client4)
            #expect(Int(segment[2]) << 8 | Int(segment[3]) == segment.count)
            #expect(Self.sum(Array(segment[0..<20])) == 0xFFFF, "IPv4 header checksum")
            let pseudo = Self.server4 + Self.client4 + [0, 6] + Self.be16(tcp.count)
            #expect(Self.sum(pseudo + tcp) == 0xFFFF, "TCP checksum")
        }
        #expect(Array(tcp[0..<4]) == Self.be16(53) + Self.be16(40000))
        #expect(Array(tcp[4..<8]) == Self.be32(77), "the server's next sequence number")
        // The request's sequence wraps: 0xFFFFFFF0 + 40 bytes.
        #expect(Array(tcp[8..<12]) == Self.be32(0xFFFF_FFF0 &+ UInt32(request.count)), "the request acknowledged")
        #expect(tcp[13] == 0x19, "FIN, PSH and ACK")
        #expect(Array(tcp[20...]) == page)
        let back = try DNSPacket(parsing: segment)
        #expect(Array(back.payload) == page && back.tcpFlags & DNSPacket.flagFIN != 0)
        #expect(try #require(packet.segmentBack(carrying: [], closing: false))[headerLength + 13] == 0x18)
        let udp = try DNSPacket(parsing: Self.packet(v6: v6, payload: Self.query("x.example")))
        #expect(udp.segmentBack(carrying: page, closing: true) == nil)
    }

    @Test func tcpSegmentsWithoutWholeMessagesAreRefused() throws {
        let query = Self.query("a.example")
        let split = try DNSPacket(parsing: Self.packet(tcp: true, payload: Self.be16(query.count) + query.prefix(5)))
        #expect(throws: ScreenTimeCoreError.self) { try split.messages() }
        let lengthOnly = try DNSPacket(parsing: Self.packet(tcp: true, payload: [0]))
        #expect(throws: ScreenTimeCoreError.self) { try lengthOnly.messages() }
        let ack = try DNSPacket(parsing: Self.packet(tcp: true, payload: [], flags: 0x10))
        #expect(try ack.messages().isEmpty)
        #expect(try DNSPacket(parsing: Self.packet(tcp: true, payload: [], flags: 0x02)).opensConnection)
    }

    @Test func whatCannotBeJudgedIsRefusedWithAReason() throws {
        let good = Self.packet(payload: Self.query("a.example"))
        var fragment = good
        fragment[6] = 0x20  // more fragments
        var other = good
        other[9] = 1  // ICMP
        var longUDP = good
        longUDP[24] = 0xFF
        var shortIHL = good
        shortIHL[0] = 0x44
        var extensionHeader = Self.packet(v6: true, payload: [1, 2])
        extensionHeader[6] = 0  // hop-by-hop options
        let cases: [([UInt8], String)] = [
            ([], "an empty packet"), (Array(good.prefix(19)), "IPv4 header cut short"),
            (fragment, "IPv4 fragment"), (other, "IP protocol 1"), (longUDP, "UDP length"),
            (shortIHL, "IPv4 lengths"), (extensionHeader, "IP protocol 0"), ([0x75] + good.dropFirst(), "IP version 7"),
            (Array(Self.packet(v6: true, payload: [1]).prefix(39)), "IPv6 header cut short"),
        ]
        for (bytes, reason) in cases {
            let error = #expect(throws: ScreenTimeCoreError.self) { try DNSPacket(parsing: bytes) }
            #expect(error?.message.contains(reason) == true, "\(error?.message ?? "nothing thrown") for \(reason)")
        }
    }

    @Test func randomBytesNeverTrap() {
        var generator = SeededGenerator(seed: 53)
        let seed = Self.packet(tcp: true, payload: Self.be16(30) + Self.query("fuzz.example"))
        for round in 0..<20_000 {
            var bytes =
                round % 2 == 0
                ? seed
                : (0..<Int.random(in: 0...80, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            if round % 2 == 0 {
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            }
            if let packet = try? DNSPacket(parsing: bytes) {
                _ = try? packet.messages()
                _ = packet.reply(carrying: [[1]])
            }
        }
    }
}
