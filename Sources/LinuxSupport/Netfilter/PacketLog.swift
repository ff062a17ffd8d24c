import CLinuxShim
import Glibc
import Synchronization

/// One netfilter log group (the rules' `-j NFLOG --nflog-group N`) read on a thread of its own:
/// a copy of each packet the rules log is handed to a handler, one at a time, while the packet
/// itself has gone on without waiting for anyone. Unlike a queue, nothing is held: a copy the
/// reader falls behind on is lost (counted in `overruns`), never the packet.
///
/// The group is bound when made (another socket holding it: EBUSY), with whole packets and each
/// sent at once (a threshold of one packet).
public final class PacketLog: @unchecked Sendable {
    public let group: UInt16
    private let descriptor: Int32
    private let stopSignal: StopSignal
    private let receivedCount = Atomic<Int>(0)
    private let overrunCount = Atomic<Int>(0)

    /// Copies handed to the handler so far.
    public var received: Int { receivedCount.load(ordering: .relaxed) }
    /// Times the kernel said copies were lost because the reader fell behind (ENOBUFS).
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    public init(group: UInt16, receiveBuffer: Int = 4 << 20) throws(SystemError) {
        self.group = group
        stopSignal = try StopSignal()
        descriptor = try NetfilterNetlink.openSocket()
        // (The socket is bound to a port of its own by its first send, the group's binding. A
        // throw from here on closes it in deinit: every property is set.)
        var size = Int32(clamping: receiveBuffer)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        try configure(
            [NetfilterNetlink.attribute(configCommand, [commandBind])], what: "bind netfilter log group \(group)")
        // Whole packets (up to 64 KiB), each sent as soon as it is logged.
        try configure(
            [
                NetfilterNetlink.attribute(configMode, [0, 0, 0xFF, 0xFF, copyPacket, 0]),
                NetfilterNetlink.attribute(bigEndian: configThreshold, UInt32(1)),
                NetfilterNetlink.attribute(bigEndian: configTimeout, UInt32(0)),
            ], what: "configure netfilter log group \(group)")
        // Reads wait in poll, not in recv.
        var none = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    private func configure(_ attributes: [[UInt8]], what: String) throws(SystemError) {
        let message = NetfilterNetlink.message(
            subsystem: NetfilterNetlink.subsystemLog, command: messageConfig,
            flags: NetfilterNetlink.flagRequest | NetfilterNetlink.flagAcknowledge, sequence: 1, family: 0,
            resource: group, attributes)
        let error = try NetfilterNetlink.request(message, sequence: 1, on: descriptor, what: what)
        guard error == 0 else {
            let hint = error == EBUSY ? " (is another screentimed using it?)" : ""
            throw SystemError(.netlink, "cannot \(what): \(String(cString: strerror(error)))\(hint)", errno: error)
        }
    }

    /// A logged packet: its bytes from the IP header on, whether it was logged on its way out of
    /// this machine's programs (OUTPUT) rather than in, and the uid of its socket (the kernel's
    /// word, as the owner match has it), if it has one.
    public struct Copy: Sendable {
        public var bytes: [UInt8]
        public var outgoing: Bool
        public var uid: UInt32?

        public init(bytes: [UInt8], outgoing: Bool, uid: UInt32?) {
            self.bytes = bytes
            self.outgoing = outgoing
            self.uid = uid
        }
    }

    /// The receive buffer, held while copies are read and handled: by `run`'s thread, or by
    /// another thread that must see every copy logged so far (`drain`). Copies are handled one at
    /// a time, in the order the kernel logged them.
    private let reading = Mutex([UInt8](repeating: 0, count: 0x20000))

    /// Reads the copies and hands each to `handler` until `stop()`; call it on a thread of its own.
    public func run(_ handler: (Copy) -> Void) throws(SystemError) {
        var fds = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
        ]
        while !stopSignal.isRaised {
            _ = try systemCall("poll(netfilter log \(group))") { poll(&fds, 2, -1) }
            if fds[1].revents != 0 { break }
            try drain(handler)
        }
    }

    /// Reads and hands to `handler` every copy the kernel has logged so far, without waiting for
    /// more; from any thread (one at a time with `run`'s).
    public func drain(_ handler: (Copy) -> Void) throws(SystemError) {
        try reading.withLock { buffer throws(SystemError) in
            _ = try NetfilterNetlink.receiveAvailable(
                descriptor, what: "netfilter log \(group)", buffer: &buffer, overruns: overrunCount
            ) { buffer, count in
                for copy in Self.copies(buffer[0..<count]) {
                    receivedCount.add(1, ordering: .relaxed)
                    handler(copy)
                }
            }
        }
    }

    /// The logged packets in what one read gave: each netlink message of the log's packet type
    /// with a payload attribute. Anything else, or cut short, is passed over.
    static func copies(_ bytes: ArraySlice<UInt8>) -> [Copy] {
        var found: [Copy] = []
        var at = bytes.startIndex
        while at + 16 <= bytes.endIndex {
            let length = Int(UInt32(littleEndianBytes: bytes[at..<at + 4]))
            guard length >= 16, at + length <= bytes.endIndex else { break }
            let type = UInt16(littleEndianBytes: bytes[at + 4..<at + 6])
            if type == NetfilterNetlink.subsystemLog << 8 | messagePacket, length >= 20 {
                // (Walked, not made into a table: this runs for each copy, twice a connection.)
                var payload: ArraySlice<UInt8>?
                var hook: UInt8?
                var uid: UInt32?
                NetfilterNetlink.forEachAttribute(bytes[at + 20..<at + length]) { type, value in
                    switch type {
                    case attributePayload: payload = value
                    // struct nfulnl_msg_packet_hdr: __be16 hw_protocol, __u8 hook, __u8 pad.
                    case attributePacketHeader where value.count >= 3: hook = value[value.startIndex + 2]
                    case attributeUID where value.count == 4: uid = UInt32(littleEndianBytes: value).byteSwapped
                    default: break
                    }
                }
                if let payload {
                    found.append(Copy(bytes: Array(payload), outgoing: hook == hookLocalOut, uid: uid))
                }
            }
            at += (length + 3) & ~3
        }
        return found
    }

    /// Makes `run()` return; safe from any thread.
    public func stop() { stopSignal.raise() }
}

// linux/netfilter/nfnetlink_log.h
private let messagePacket: UInt16 = 0  // NFULNL_MSG_PACKET
private let messageConfig: UInt16 = 1  // NFULNL_MSG_CONFIG
private let configCommand: UInt16 = 1  // NFULA_CFG_CMD
private let configMode: UInt16 = 2  // NFULA_CFG_MODE: __be32 range, __u8 mode, __u8 pad
private let configTimeout: UInt16 = 3  // NFULA_CFG_TIMEOUT, in hundredths of a second
private let configThreshold: UInt16 = 4  // NFULA_CFG_QTHRESH
private let commandBind: UInt8 = 1  // NFULNL_CFG_CMD_BIND
private let copyPacket: UInt8 = 2  // NFULNL_COPY_PACKET
private let attributePayload: UInt16 = 9  // NFULA_PAYLOAD
private let attributePacketHeader: UInt16 = 1  // NFULA_PACKET_HDR
private let attributeUID: UInt16 = 11  // NFULA_UID, __be32
private let hookLocalOut: UInt8 = 3  // NF_INET_LOCAL_OUT
