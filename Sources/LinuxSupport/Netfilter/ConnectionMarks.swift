import CLinuxShim
import Glibc
import Synchronization

/// The marks of the kernel's tracked connections (conntrack), changed through ctnetlink: what
/// `-j CONNMARK --set-xmark` does in a rule, done by the agent for a connection it names, with no
/// packet of it in hand and none waiting.
///
/// Connections live in the network namespace of the socket (the agent's).
public final class ConnectionMarks: Sendable {
    private let socket: Mutex<(descriptor: Int32, sequence: UInt32)>

    public init() throws(SystemError) {
        socket = Mutex((try NetfilterNetlink.openSocket(), 0))
    }

    deinit { socket.withLock { _ = close($0.descriptor) } }

    /// Sets the bits `mask` of the mark of the TCP connection whose first packet went from
    /// `source`:`sourcePort` to `destination`:`destinationPort` (addresses of 4 or 16 bytes) to
    /// those of `value`, keeping its other bits. Throws when there is no such connection.
    public func setMark(
        source: some Collection<UInt8>, sourcePort: UInt16, destination: some Collection<UInt8>,
        destinationPort: UInt16, value: UInt32, mask: UInt32, protocolNumber transport: UInt8 = 6
    ) throws(SystemError) {
        let (from, to) = (Array(source), Array(destination))
        guard from.count == to.count, from.count == 4 || from.count == 16 else {
            throw SystemError(.netlink, "a connection's addresses are both 4 or both 16 bytes")
        }
        let v4 = from.count == 4
        let tuple = NetfilterNetlink.attribute(
            nested: tupleOriginal,
            [
                NetfilterNetlink.attribute(
                    nested: tupleIP,
                    [
                        NetfilterNetlink.attribute(v4 ? ipv4Source : ipv6Source, from),
                        NetfilterNetlink.attribute(v4 ? ipv4Destination : ipv6Destination, to),
                    ]),
                NetfilterNetlink.attribute(
                    nested: tupleProtocol,
                    [
                        NetfilterNetlink.attribute(protocolNumber, [transport]),
                        NetfilterNetlink.attribute(bigEndian: protocolSourcePort, sourcePort),
                        NetfilterNetlink.attribute(bigEndian: protocolDestinationPort, destinationPort),
                    ]),
            ])
        // The kernel keeps the bits outside the mask and sets those inside to the value's.
        let attributes = [
            tuple, NetfilterNetlink.attribute(bigEndian: markType, value & mask),
            NetfilterNetlink.attribute(bigEndian: markMaskType, mask),
        ]
        try socket.withLock { state throws(SystemError) in
            state.sequence &+= 1
            // A new-connection message without "create": a change to one there, or ENOENT.
            let message = NetfilterNetlink.message(
                subsystem: NetfilterNetlink.subsystemConntrack, command: commandNew,
                flags: NetfilterNetlink.flagRequest | NetfilterNetlink.flagAcknowledge, sequence: state.sequence,
                family: v4 ? UInt8(AF_INET) : UInt8(AF_INET6), attributes)
            let error = try NetfilterNetlink.request(
                message, sequence: state.sequence, on: state.descriptor, what: "a connection's mark")
            guard error == 0 else {
                throw SystemError(
                    .netlink, "a connection's mark could not be set: \(String(cString: strerror(error)))", errno: error)
            }
        }
    }

    /// A tracked connection, named by its first packet: its transport (6 TCP, 17 UDP), addresses
    /// (4 or 16 bytes) and ports.
    public struct Flow: Hashable, Sendable {
        public var transport: UInt8
        public var source: [UInt8]
        public var sourcePort: UInt16
        public var destination: [UInt8]
        public var destinationPort: UInt16

        public init(
            transport: UInt8, source: [UInt8], sourcePort: UInt16, destination: [UInt8], destinationPort: UInt16
        ) {
            self.transport = transport
            self.source = source
            self.sourcePort = sourcePort
            self.destination = destination
            self.destinationPort = destinationPort
        }
    }

    /// The connections of both families whose mark has `value` in its bits `mask` (the kernel
    /// filters its dump by them). At most `limit`; those that are not TCP or UDP are left out.
    public func flows(marked value: UInt32, mask: UInt32, limit: Int = 1 << 20) throws(SystemError) -> [Flow] {
        try socket.withLock { state throws(SystemError) -> [Flow] in
            state.sequence &+= 1
            let sequence = state.sequence
            let message = NetfilterNetlink.message(
                subsystem: NetfilterNetlink.subsystemConntrack, command: commandGet,
                flags: NetfilterNetlink.flagRequest | flagDump, sequence: sequence, family: UInt8(AF_UNSPEC),
                [
                    NetfilterNetlink.attribute(bigEndian: markType, value & mask),
                    NetfilterNetlink.attribute(bigEndian: markMaskType, mask),
                ])
            let sent = message.withUnsafeBytes { Glibc.send(state.descriptor, $0.baseAddress, $0.count, 0) }
            guard sent == message.count else { throw SystemError.call("send(the connections' dump)", errno) }
            var found: [Flow] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(state.descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else {
                    throw count == 0
                        ? SystemError(.netlink, "an empty answer while listing the connections")
                        : SystemError.call("recv(the connections' dump)", errno)
                }
                var at = 0
                while at + 16 <= count {
                    let length = Int(UInt32(littleEndianBytes: buffer[at..<at + 4]))
                    guard length >= 16, at + length <= count else { break }
                    let type = UInt16(littleEndianBytes: buffer[at + 4..<at + 6])
                    let mine = UInt32(littleEndianBytes: buffer[at + 8..<at + 12]) == sequence
                    defer { at += (length + 3) & ~3 }
                    guard mine else { continue }
                    if type == messageDone { return found }
                    if type == NetfilterNetlink.messageError {
                        let error =
                            length >= 20 ? -Int32(bitPattern: UInt32(littleEndianBytes: buffer[at + 16..<at + 20])) : 0
                        if error == 0 { return found }
                        throw SystemError(
                            .netlink, "the connections could not be listed: \(String(cString: strerror(error)))",
                            errno: error)
                    }
                    // The connection's message: its nfgenmsg (4 bytes), then its attributes.
                    guard length >= 20, let flow = Self.flow(buffer[at + 20..<at + length]) else { continue }
                    if found.count < limit { found.append(flow) }
                }
            }
        }
    }

    /// The first packet's tuple of a connection's message (its attributes).
    static func flow(_ attributes: ArraySlice<UInt8>) -> Flow? {
        guard let tuple = NetfilterNetlink.attributes(attributes)[tupleOriginal] else { return nil }
        let parts = NetfilterNetlink.attributes(tuple)
        guard let ip = parts[tupleIP].map(NetfilterNetlink.attributes),
            let transport = parts[tupleProtocol].map(NetfilterNetlink.attributes),
            let number = transport[protocolNumber]?.first, number == 6 || number == 17,
            let sourcePort = transport[protocolSourcePort], sourcePort.count == 2,
            let destinationPort = transport[protocolDestinationPort], destinationPort.count == 2,
            let source = ip[ipv4Source] ?? ip[ipv6Source], let destination = ip[ipv4Destination] ?? ip[ipv6Destination],
            source.count == destination.count, source.count == 4 || source.count == 16
        else { return nil }
        func port(_ bytes: ArraySlice<UInt8>) -> UInt16 {
            UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1])
        }
        return Flow(
            transport: number, source: Array(source), sourcePort: port(sourcePort), destination: Array(destination),
            destinationPort: port(destinationPort))
    }
}

// linux/netfilter/nfnetlink_conntrack.h
private let commandGet: UInt16 = 1  // IPCTNL_MSG_CT_GET
private let flagDump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH
private let messageDone: UInt16 = 3  // NLMSG_DONE
private let commandNew: UInt16 = 0  // IPCTNL_MSG_CT_NEW
private let tupleOriginal: UInt16 = 1  // CTA_TUPLE_ORIG
private let markType: UInt16 = 8  // CTA_MARK
private let markMaskType: UInt16 = 21  // CTA_MARK_MASK
private let tupleIP: UInt16 = 1  // CTA_TUPLE_IP
private let tupleProtocol: UInt16 = 2  // CTA_TUPLE_PROTO
private let ipv4Source: UInt16 = 1
private let ipv4Destination: UInt16 = 2
private let ipv6Source: UInt16 = 3
private let ipv6Destination: UInt16 = 4
private let protocolNumber: UInt16 = 1  // CTA_PROTO_NUM
private let protocolSourcePort: UInt16 = 2
private let protocolDestinationPort: UInt16 = 3
