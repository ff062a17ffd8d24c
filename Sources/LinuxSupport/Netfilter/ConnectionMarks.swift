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
        destinationPort: UInt16, value: UInt32, mask: UInt32
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
                        NetfilterNetlink.attribute(protocolNumber, [6]),
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
}

// linux/netfilter/nfnetlink_conntrack.h
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
