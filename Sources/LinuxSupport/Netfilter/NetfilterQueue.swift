import CLinuxShim
import CNetfilterQueue
import Glibc
import Synchronization

/// One netfilter queue (NFQUEUE) read on a thread of its own: each queued packet is handed to a
/// handler, whose verdict is given back to the kernel before the next packet is read.
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
    // Touched only by the thread that calls run(), and by init and deinit.
    private var handle: OpaquePointer?
    private var queue: OpaquePointer?
    private let stopSignal: StopSignal
    private let judgedCount = Atomic<Int>(0)
    private let overrunCount = Atomic<Int>(0)

    /// Packets judged so far.
    public var judged: Int { judgedCount.load(ordering: .relaxed) }
    /// Times the kernel reported dropping packets because the agent fell behind (ENOBUFS).
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// Binds the queue; throws if it cannot be had (not root, or another process holds it).
    public init(number: UInt16, receiveBuffer: Int = 8 << 20, handler: @escaping Handler) throws(SystemError) {
        self.number = number
        self.handler = handler
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
        try NetfilterNetlink.read(
            nfq_fd(handle), what: "netfilter queue \(number)", stop: stopSignal, overruns: overrunCount
        ) { buffer, count in
            buffer.withUnsafeMutableBytes { bytes in
                _ = nfq_handle_packet(handle, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(count))
            }
        }
    }

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
            return nfq_set_verdict(queue, id, UInt32(NF_ACCEPT), 0, nil)
        case .drop:
            return nfq_set_verdict(queue, id, UInt32(NF_DROP), 0, nil)
        case .replace(let replacement):
            return replacement.withUnsafeBufferPointer {
                nfq_set_verdict(queue, id, UInt32(NF_ACCEPT), UInt32($0.count), $0.baseAddress)
            }
        case .repeatMarked(let mark):
            return nfq_set_verdict2(queue, id, UInt32(NF_REPEAT), mark, 0, nil)
        }
    }
}
