import CLinuxShim
import Glibc

/// The kernel's process connector: every fork, exec, uid change and exit on the machine, as it
/// happens, from a netlink socket (no polling of /proc).
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

    private let fd: Int32
    private let stopSignal: StopSignal

    public init(receiveBuffer: Int = 4 << 20) throws(SystemError) {
        stopSignal = try StopSignal()
        fd = screentime_proc_connector_open(Int32(receiveBuffer))
        guard fd >= 0 else {
            let error = errno
            let hint =
                error == ECONNREFUSED
                ? " (the proc connector works only in the initial network namespace)"
                : error == EPERM ? " (needs CAP_NET_ADMIN)" : ""
            throw SystemError(
                .netlink, "cannot subscribe to process events: \(String(cString: strerror(error)))\(hint)",
                errno: error)
        }
    }

    deinit { close(fd) }

    /// Reads events and hands them to `handler`, one at a time, until `stop()`.
    public func run(_ handler: (Event) -> Void) throws(SystemError) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var events = [screentime_proc_event](repeating: screentime_proc_event(), count: 64)
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal.fd, events: Int16(POLLIN), revents: 0),
        ]
        while !stopSignal.isRaised {
            _ = try systemCall("poll(proc connector)") { poll(&fds, 2, -1) }
            if fds[1].revents != 0 { return }
            let length = buffer.withUnsafeMutableBytes {
                screentime_proc_connector_receive(fd, $0.baseAddress, UInt($0.count))
            }
            if length < 0 {
                switch errno {
                case EINTR, EAGAIN: continue
                case ENOBUFS:
                    handler(.overrun)
                    continue
                default: throw SystemError.call("recv(proc connector)", errno)
                }
            }
            let count = buffer.withUnsafeBytes { bytes in
                events.withUnsafeMutableBufferPointer {
                    screentime_proc_connector_parse(bytes.baseAddress, length, $0.baseAddress, Int32($0.count))
                }
            }
            for event in events.prefix(Int(count)) {
                switch event.what {
                // Only a thread group's leader matters: a new thread is not a new process, and a
                // thread's exec or exit is not the process's.
                case procEventFork where event.pid == event.tgid:
                    handler(.fork(parent: event.parent_tgid, child: event.tgid))
                case procEventExec where event.pid == event.tgid: handler(.exec(pid: event.tgid))
                case procEventUID where event.pid == event.tgid:
                    handler(.uid(pid: event.tgid, real: event.ruid, effective: event.euid))
                case procEventExit where event.pid == event.tgid:
                    handler(.exit(pid: event.tgid, code: event.exit_code))
                default: continue
                }
            }
        }
    }

    /// Makes `run(_:)` return; safe from any thread.
    public func stop() {
        stopSignal.raise()
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
