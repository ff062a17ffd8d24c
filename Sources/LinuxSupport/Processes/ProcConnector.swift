import CLinuxShim
import CNetlink
import Glibc
import Synchronization

/// The kernel's process connector: every fork, exec, uid change and exit on the machine, as it
/// happens, from a netlink socket (no polling of /proc), opened through libnl-3.
///
/// Needs CAP_NET_ADMIN and works only in the initial network namespace. Events are read on the
/// caller's thread by `run(_:)` until `stop()`; a burst the socket could not hold is reported as
/// `.overrun`, after which the reader should rescan /proc.
public final class ProcConnector: @unchecked Sendable {
    public enum Event: Sendable, Equatable {
        case fork(parent: Int32, child: Int32)
        case exec(pid: Int32)
        case uid(pid: Int32, real: UInt32, effective: UInt32)
        case exit(pid: Int32, code: UInt32)
        /// The kernel dropped events (ENOBUFS): what is known may be stale.
        case overrun
    }

    private let socket: OpaquePointer
    private let fd: Int32
    private let stopSignal: StopSignal
    private let received = Atomic<Int>(0)
    private let lost = Atomic<Int>(0)

    /// Process events read so far (threads' included, which `run(_:)` does not hand on).
    public var eventsReceived: Int { received.load(ordering: .relaxed) }
    /// Process events the kernel sent while this socket listened and dropped because it was full,
    /// counted exactly from the gaps in the kernel's per-CPU event numbers.
    public var eventsLost: Int { lost.load(ordering: .relaxed) }

    public init(receiveBuffer: Int = 4 << 20) throws(SystemError) {
        stopSignal = try StopSignal()
        guard let socket = nl_socket_alloc() else {
            throw SystemError(.netlink, "cannot subscribe to process events: nl_socket_alloc: out of memory")
        }
        // Each event carries the kernel's per-CPU event number as its sequence number, not one
        // of a request of ours: libnl's sequence check would refuse them all. Losses are counted
        // from those numbers instead (`eventsLost`).
        nl_socket_disable_seq_check(socket)
        // The connector never acknowledges: nothing may wait for an answer.
        nl_socket_disable_auto_ack(socket)
        do {
            try Self.subscribe(socket, receiveBuffer: receiveBuffer)
        } catch {
            nl_socket_free(socket)
            throw error
        }
        self.socket = socket
        fd = nl_socket_get_fd(socket)
    }

    deinit { nl_socket_free(socket) }

    private static func subscribe(_ socket: OpaquePointer, receiveBuffer: Int) throws(SystemError) {
        // libnl folds errno into its own codes (ECONNREFUSED becomes "unspecific failure"): the
        // errno of the failed call is kept for the message and the hint.
        func check(_ call: String, _ body: () -> Int32) throws(SystemError) {
            errno = 0
            let code = body()
            let error = errno
            guard code < 0 else { return }
            let why = error != 0 ? String(cString: strerror(error)) : String(cString: nl_geterror(code))
            let hint =
                error == ECONNREFUSED
                ? " (the proc connector works only in the initial network namespace)"
                : error == EPERM ? " (needs CAP_NET_ADMIN)" : ""
            throw SystemError(
                .netlink, "cannot subscribe to process events: \(call): \(why)\(hint)", errno: error)
        }
        try check("nl_connect(NETLINK_CONNECTOR)") { nl_connect(socket, NETLINK_CONNECTOR) }
        try check("nl_socket_set_buffer_size") { nl_socket_set_buffer_size(socket, Int32(receiveBuffer), 0) }
        // libnl sets SO_RCVBUF, which net.core.rmem_max caps (208 KiB on a stock kernel): the
        // agent may go past it (SO_RCVBUFFORCE, CAP_NET_ADMIN), so that a fork storm fits. If it
        // cannot, a smaller buffer only means an overrun (and a rescan) sooner.
        var size = Int32(receiveBuffer)
        _ = setsockopt(nl_socket_get_fd(socket), SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        try check("nl_socket_add_membership(CN_IDX_PROC)") { nl_socket_add_membership(socket, CN_IDX_PROC) }

        // PROC_CN_MCAST_LISTEN, to the connector's process-events service: a cn_msg whose data is
        // the operation.
        var message = cn_msg()
        message.id.idx = UInt32(CN_IDX_PROC)
        message.id.val = UInt32(CN_VAL_PROC)
        var operation = PROC_CN_MCAST_LISTEN.rawValue
        message.len = UInt16(MemoryLayout.size(ofValue: operation))
        var payload = withUnsafeBytes(of: &message) { Array($0.prefix(MemoryLayout<cn_msg>.size)) }
        payload += withUnsafeBytes(of: &operation) { Array($0) }
        try check("nl_send_simple(PROC_CN_MCAST_LISTEN)") {
            payload.withUnsafeMutableBytes { nl_send_simple(socket, NLMSG_DONE, 0, $0.baseAddress, $0.count) }
        }
    }

    /// Reads events and hands them to `handler`, one at a time, until `stop()`.
    ///
    /// Read with recvmmsg on libnl's socket, up to 64 datagrams (one event each) per call, and
    /// walked with libnl's `nlmsg_ok`/`nlmsg_next`. Not `nl_recv`/`nl_recvmsgs`: those take one
    /// datagram per call into a freshly allocated page, after peeking at it first by default —
    /// two system calls and an allocation per event, where a fork storm sends tens of thousands a
    /// second.
    public func run(_ handler: (Event) -> Void) throws(SystemError) {
        let slots = 64
        let slotSize = 512  // an event's datagram is 76 bytes
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: slots * slotSize, alignment: 16)
        defer { buffer.deallocate() }
        var lengths = [UInt32](repeating: 0, count: slots)
        var sequences = EventSequences()
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
        ]
        while !stopSignal.isRaised {
            _ = try systemCall("poll(proc connector)") { poll(&fds, 2, -1) }
            if fds[1].revents != 0 { return }
            let count = retryingInterrupts {
                lengths.withUnsafeMutableBufferPointer {
                    screentime_receive_datagrams(fd, buffer, UInt32(slotSize), UInt32(slots), $0.baseAddress)
                }
            }
            if count < 0 {
                switch errno {
                case EAGAIN: continue
                case ENOBUFS:
                    handler(.overrun)
                    continue
                default: throw SystemError.call("recvmmsg(proc connector)", errno)
                }
            }
            var events = 0
            for slot in 0..<Int(count) {
                var header = (buffer + slot * slotSize).assumingMemoryBound(to: nlmsghdr.self)
                var remaining = Int32(lengths[slot])
                while nlmsg_ok(header, remaining) != 0 {
                    let type = Int32(header.pointee.nlmsg_type)
                    if type != NLMSG_ERROR, type != NLMSG_NOOP, nlmsg_datalen(header) >= Self.minimumEvent,
                        let data = nlmsg_data(header)
                    {
                        events += Self.decode(UnsafeRawPointer(data), &sequences, handler)
                    }
                    header = nlmsg_next(header, &remaining)
                }
            }
            received.add(events, ordering: .relaxed)
            if sequences.lost > 0 {
                lost.add(sequences.lost, ordering: .relaxed)
                sequences.lost = 0
            }
        }
    }

    /// Makes `run(_:)` return; safe from any thread.
    public func stop() {
        stopSignal.raise()
    }

    // linux/cn_proc.h's layout, taken from the header. A cn_msg's data (the event) starts 36
    // bytes into the datagram, so its 64-bit timestamp, and the fields after it, are not where
    // their types' alignment would put them: every field is read unaligned.
    private static let cnData = MemoryLayout<cn_msg>.size
    private static let eventData = MemoryLayout<proc_event>.offset(of: \proc_event.event_data) ?? 16
    private static let minimumEvent = Int32(cnData + eventData + 16)

    /// One process event at `data` (a cn_msg): handed on if it is a thread group leader's,
    /// counted in `sequences`. Returns 1 for a process event, 0 for anything else.
    @inline(__always)
    private static func decode(
        _ data: UnsafeRawPointer, _ sequences: inout EventSequences, _ handler: (Event) -> Void
    ) -> Int {
        func u32(_ offset: Int) -> UInt32 { data.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
        func i32(_ offset: Int) -> Int32 { data.loadUnaligned(fromByteOffset: offset, as: Int32.self) }
        // cn_msg: id.idx, id.val, seq, ack, len, flags, then the event.
        guard u32(0) == UInt32(CN_IDX_PROC), u32(4) == UInt32(CN_VAL_PROC) else { return 0 }
        let what = u32(cnData)
        // PROC_EVENT_NONE is the answer to someone's PROC_CN_MCAST_LISTEN (cpu -1, their
        // sequence number): no event, and outside the per-CPU numbering.
        guard what != 0 else { return 0 }
        sequences.saw(u32(8), cpu: u32(cnData + 4))
        let event = cnData + eventData
        // fork: parent pid, parent tgid, child pid, child tgid; exec, uid, exit: pid, tgid, then
        // ruid and euid (uid), exit code (exit). Only a thread group's leader matters: a new
        // thread is not a new process, and a thread's exec or exit is not the process's.
        switch what {
        case procEventFork where i32(event + 8) == i32(event + 12):
            handler(.fork(parent: i32(event + 4), child: i32(event + 12)))
        case procEventExec where i32(event) == i32(event + 4):
            handler(.exec(pid: i32(event + 4)))
        case procEventUID where i32(event) == i32(event + 4):
            handler(.uid(pid: i32(event + 4), real: u32(event + 8), effective: u32(event + 12)))
        case procEventExit where i32(event) == i32(event + 4):
            handler(.exit(pid: i32(event + 4), code: u32(event + 8)))
        default: break
        }
        return 1
    }
}

/// The kernel numbers process events per CPU (one counter for all listeners, counting only while
/// one listens), and events of one CPU reach a socket in order: a gap in one CPU's numbers is
/// events this socket was sent and lost.
struct EventSequences {
    /// The next number expected from each CPU, 0 for a CPU not heard from yet (numbers are kept
    /// plus one).
    private var next: [UInt32] = []
    /// Lost since last taken.
    var lost = 0

    @inline(__always)
    mutating func saw(_ sequence: UInt32, cpu: UInt32) {
        guard cpu < 4096 else { return }
        let index = Int(cpu)
        if index >= next.count { next += [UInt32](repeating: 0, count: index + 1 - next.count) }
        let expected = next[index]
        // A gap of half the range or more is a jump back, not a loss: count on from it.
        if expected != 0 {
            let gap = sequence &- (expected &- 1)
            if gap != 0, gap < 1 << 31 { lost += Int(gap) }
        }
        next[index] = sequence &+ 2
    }
}

// linux/cn_proc.h's `enum what`, whose constants Swift sees only through the struct.
private let procEventFork: UInt32 = 0x0000_0001
private let procEventExec: UInt32 = 0x0000_0002
private let procEventUID: UInt32 = 0x0000_0004
private let procEventExit: UInt32 = 0x8000_0000

extension ProcConnector {
    /// Puts the calling thread in the real-time FIFO class, so that it runs the moment an event
    /// arrives, ahead of the program that caused it (needs CAP_SYS_NICE).
    public static func raiseCallingThreadToRealtime(priority: Int32 = 50) throws(SystemError) {
        var parameters = sched_param(sched_priority: priority)
        _ = try systemCall("sched_setscheduler(SCHED_FIFO)") { sched_setscheduler(0, SCHED_FIFO, &parameters) }
    }
}
