import CLinuxShim
import CNetfilterQueue
import Glibc
import Synchronization

/// One netfilter queue (NFQUEUE) read on a thread of its own: each queued packet is handed to a
/// handler, and its verdict given back to the kernel. The verdicts on packets that were waiting
/// together go back together, in one message of several verdicts, once nothing more is waiting
/// (or `verdictBatch` are gathered): under load, one system call and one wakeup of the packets'
/// receivers for many packets, not one each; alone, a packet's verdict goes at once.
///
/// The queue carries the sender's uid (`NFQA_CFG_F_UID_GID`) and whole packets. It is bound
/// without fail-open: while nobody reads it the kernel drops what the rules send to it, so a
/// stopped agent means the filtered users' lookups fail, not that they pass unfiltered.
public final class NetfilterQueue: @unchecked Sendable {
    public struct Packet: Sendable {
        /// The uid of the socket that sent it, when the kernel knows it.
        public let uid: UInt32?
        public let bytes: [UInt8]
        /// Whether it was queued on its way in (`INPUT`: a reply to a filtered user), not out.
        public let incoming: Bool
        /// The packet's mark (`nfmark`): the rules copy the connection's mark into it before
        /// queueing, so it says how far the connection has been judged.
        public let mark: UInt32

        public init(uid: UInt32?, bytes: [UInt8], incoming: Bool = false, mark: UInt32 = 0) {
            self.uid = uid
            self.bytes = bytes
            self.incoming = incoming
            self.mark = mark
        }
    }

    public enum Verdict: Sendable, Equatable {
        case accept
        case drop
        /// Accept the packet with these bytes instead (a reply written in its place).
        case replace([UInt8])
        /// Give the packet this mark and send it through its hook again (`NF_REPEAT`): the rules
        /// see the mark, copy it to the connection and act on it (accept, or reject with a reset),
        /// and the connection's later packets never come to the queue.
        case repeatMarked(UInt32)
    }

    public typealias Handler = @Sendable (Packet) -> Verdict

    public let number: UInt16
    private let handler: Handler
    /// Called on the queue's thread each time verdicts have gone back: for what judging found
    /// that no packet need wait for.
    private let afterVerdicts: @Sendable () -> Void
    // Touched only by the thread that calls run(), and by init and deinit.
    private var handle: OpaquePointer?
    private var queue: OpaquePointer?
    private let stopSignal: StopSignal
    /// Verdicts judged and not sent yet, as netlink messages one after another; their count.
    private var verdicts: [UInt8] = []
    private var gathered = 0
    private var sequence: UInt32 = 0
    /// At most this many verdicts wait for the packets after them.
    public static let verdictBatch = 16
    private let judgedCount = Atomic<Int>(0)
    private let overrunCount = Atomic<Int>(0)

    /// Packets judged so far.
    public var judged: Int { judgedCount.load(ordering: .relaxed) }
    /// Times the kernel reported dropping packets because the agent fell behind (ENOBUFS).
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// Binds the queue; throws if it cannot be had (not root, or another process holds it).
    /// `afterVerdicts` is called on the queue's thread each time verdicts have been sent.
    public init(
        number: UInt16, receiveBuffer: Int = 8 << 20, handler: @escaping Handler,
        afterVerdicts: @escaping @Sendable () -> Void = {}
    ) throws(SystemError) {
        self.number = number
        self.handler = handler
        self.afterVerdicts = afterVerdicts
        stopSignal = try StopSignal()
        guard let handle = nfq_open() else {
            throw SystemError(
                .netlink, "cannot open a netfilter queue handle (nfq_open): \(String(cString: strerror(errno)))",
                errno: errno)
        }
        self.handle = handle
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard
            let queue = nfq_create_queue(
                handle, number,
                { queue, _, data, context in
                    guard let queue, let data, let context else { return -1 }
                    let owner = Unmanaged<NetfilterQueue>.fromOpaque(context).takeUnretainedValue()
                    return owner.judge(queue, data)
                }, context)
        else {
            let error = errno
            // Closed here and forgotten: deinit runs after a throw from a fully made object,
            // and must not close it again.
            self.handle = nil
            nfq_close(handle)
            throw SystemError(
                .netlink,
                "cannot bind netfilter queue \(number): \(String(cString: strerror(error))) (is another screentimed using it?)",
                errno: error)
        }
        self.queue = queue
        guard nfq_set_mode(queue, UInt8(NFQNL_COPY_PACKET.rawValue), 0xFFFF) >= 0 else {
            throw teardown("cannot ask for whole packets on queue \(number)")
        }
        let uidFlag = UInt32(NFQA_CFG_F_UID_GID)
        guard nfq_set_queue_flags(queue, uidFlag, uidFlag) >= 0 else {
            throw teardown("the kernel does not give the sender's uid on queue \(number)")
        }
        _ = nfq_set_queue_maxlen(queue, 8192)
        _ = nfnl_rcvbufsiz(nfq_nfnlh(handle), UInt32(receiveBuffer))
        _ = screentime_nfq_no_enobufs(nfq_fd(handle))
    }

    private func teardown(_ message: String) -> SystemError {
        let error = errno
        if let queue { nfq_destroy_queue(queue) }
        if let handle { nfq_close(handle) }
        queue = nil
        handle = nil
        return SystemError(.netlink, "\(message): \(String(cString: strerror(error)))", errno: error)
    }

    deinit {
        if let queue { nfq_destroy_queue(queue) }
        if let handle { nfq_close(handle) }
    }

    /// Reads and judges packets until `stop()`; call it on a thread of its own. The queue is
    /// unbound when it returns.
    public func run() throws(SystemError) {
        guard let handle else { throw SystemError(.netlink, "queue \(number) is closed") }
        defer {
            if let queue { nfq_destroy_queue(queue) }
            nfq_close(handle)
            queue = nil
            self.handle = nil
        }
        let descriptor = nfq_fd(handle)
        verdicts.reserveCapacity(1 << 17)
        defer { sendVerdicts(descriptor) }
        try NetfilterNetlink.read(
            descriptor, what: "netfilter queue \(number)", stop: stopSignal, overruns: overrunCount,
            drained: { sendVerdicts(descriptor) }
        ) { buffer, count in
            buffer.withUnsafeMutableBytes { bytes in
                _ = nfq_handle_packet(handle, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(count))
            }
            if gathered >= Self.verdictBatch || verdicts.count >= 1 << 16 { sendVerdicts(descriptor) }
        }
    }

    /// Sends the verdicts gathered, in one message. (The kernel takes each verdict in turn, and
    /// answers one it refuses, a packet no longer queued, with an error the reader skips.)
    private func sendVerdicts(_ descriptor: Int32) {
        guard gathered > 0 else { return }
        verdicts.withUnsafeBytes { bytes in
            let sent = retryingInterrupts { Glibc.send(descriptor, bytes.baseAddress, bytes.count, 0) }
            guard sent < 0, gathered > 1 else { return }
            // Refused whole (too large for the socket's buffer, or no memory for it): each verdict
            // alone, so that no packet is left held for want of its verdict.
            var at = 0
            while at + 4 <= bytes.count {
                let length = Int(bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
                guard length >= 16, at + length <= bytes.count else { break }
                _ = retryingInterrupts { Glibc.send(descriptor, bytes.baseAddress! + at, length, 0) }
                at += (length + 3) & ~3
            }
        }
        verdicts.removeAll(keepingCapacity: true)
        gathered = 0
        afterVerdicts()
    }

    /// Adds a verdict message (`NFQNL_MSG_VERDICT`, as libnetfilter_queue writes it): the verdict
    /// and packet id, a mark, and the packet's new bytes, each an attribute.
    private func gather(id: UInt32, verdict: UInt32, mark: UInt32? = nil, payload: UnsafeRawBufferPointer? = nil) {
        func append32(_ value: UInt32) {
            withUnsafeBytes(of: value) { verdicts.append(contentsOf: $0) }
        }
        func appendBig32(_ value: UInt32) { append32(value.bigEndian) }
        func attribute(_ type: UInt16, length: Int) {
            append32(UInt32(4 + length) | UInt32(type) << 16)
        }
        let start = verdicts.count
        sequence &+= 1
        append32(0)  // the length, below
        append32(UInt32(Self.subsystemQueue << 8 | Self.messageVerdict) | UInt32(NetfilterNetlink.flagRequest) << 16)
        append32(sequence)
        append32(0)
        // nfgenmsg: AF_UNSPEC, version 0, the queue's number in network order.
        verdicts += [0, 0, UInt8(number >> 8), UInt8(number & 0xFF)]
        attribute(Self.attributeVerdict, length: 8)
        appendBig32(verdict)
        appendBig32(id)
        if let mark {
            attribute(Self.attributeMark, length: 4)
            appendBig32(mark)
        }
        if let payload, payload.count > 0 {
            attribute(Self.attributePayload, length: payload.count)
            verdicts.append(contentsOf: payload)
        }
        let length = UInt32(verdicts.count - start)
        withUnsafeBytes(of: length) { bytes in
            for (offset, byte) in bytes.enumerated() { verdicts[start + offset] = byte }
        }
        // The next message starts on a 4-byte boundary.
        verdicts += repeatElement(0, count: (4 - verdicts.count % 4) % 4)
        gathered += 1
    }

    static let subsystemQueue = 3  // NFNL_SUBSYS_QUEUE
    static let messageVerdict = 1  // NFQNL_MSG_VERDICT
    static let attributeVerdict: UInt16 = 2  // NFQA_VERDICT_HDR
    static let attributeMark: UInt16 = 3  // NFQA_MARK
    static let attributePayload: UInt16 = 10  // NFQA_PAYLOAD

    /// Makes `run()` return; safe from any thread.
    public func stop() {
        stopSignal.raise()
    }

    private func judge(_ queue: OpaquePointer, _ data: OpaquePointer) -> Int32 {
        let id = screentime_nfq_packet_id(data)
        var uid: UInt32 = 0
        let knowsUID = nfq_get_uid(data, &uid) > 0
        var pointer: UnsafeMutablePointer<UInt8>?
        let length = nfq_get_payload(data, &pointer)
        let bytes = length > 0 && pointer != nil ? Array(UnsafeBufferPointer(start: pointer, count: Int(length))) : []
        let incoming = screentime_nfq_packet_hook(data) == UInt8(NF_INET_LOCAL_IN.rawValue)
        let mark = nfq_get_nfmark(data)
        let verdict = handler(Packet(uid: knowsUID ? uid : nil, bytes: bytes, incoming: incoming, mark: mark))
        judgedCount.add(1, ordering: .relaxed)
        switch verdict {
        case .accept:
            gather(id: id, verdict: UInt32(NF_ACCEPT))
        case .drop:
            gather(id: id, verdict: UInt32(NF_DROP))
        case .replace(let replacement):
            replacement.withUnsafeBytes { gather(id: id, verdict: UInt32(NF_ACCEPT), payload: $0) }
        case .repeatMarked(let mark):
            gather(id: id, verdict: UInt32(NF_REPEAT), mark: mark)
        }
        return 0
    }
}
