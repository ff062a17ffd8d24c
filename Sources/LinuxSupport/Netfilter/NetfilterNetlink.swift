import CLinuxShim
import Glibc
import Synchronization

/// The kernel's netfilter netlink family (nfnetlink) spoken by hand, for its parts that have no
/// library here: ipset (`AddressSet`), connection tracking (`ConnectionMarks`) and the packet
/// log (`PacketLog`). A message is a netlink header, a `nfgenmsg` (family, version 0, resource
/// id) and attributes; a request is answered by the kernel's acknowledgement or error.
enum NetfilterNetlink {
    static let protocolNumber: Int32 = 12  // NETLINK_NETFILTER
    static let subsystemConntrack: UInt16 = 1
    static let subsystemLog: UInt16 = 4
    static let subsystemIPSet: UInt16 = 6
    static let messageError: UInt16 = 2  // NLMSG_ERROR
    static let flagRequest: UInt16 = 0x1
    static let flagAcknowledge: UInt16 = 0x4
    static let flagCreate: UInt16 = 0x400
    static let attributeNested: UInt16 = 0x8000
    static let attributeNetByteOrder: UInt16 = 0x4000

    /// A netlink socket of the family, closed on exec; `timeout`: how long a receive may wait
    /// (nil: without end, for a reader that polls).
    static func openSocket(timeout seconds: Int? = 1) throws(SystemError) -> Int32 {
        let descriptor = try systemCall("socket(AF_NETLINK, NETLINK_NETFILTER)") {
            Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), protocolNumber)
        }
        if let seconds {
            // An answer that does not come in time is an error, never a wait without end.
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        return descriptor
    }

    static func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        var bytes = [UInt8]()
        append(UInt16(4 + payload.count), to: &bytes)
        append(type, to: &bytes)
        bytes += payload
        bytes += [UInt8](repeating: 0, count: (4 - payload.count % 4) % 4)
        return bytes
    }

    /// A 32-bit value in network order.
    static func attribute(bigEndian type: UInt16, _ value: UInt32) -> [UInt8] {
        attribute(type, [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
    }

    /// A 16-bit value in network order.
    static func attribute(bigEndian type: UInt16, _ value: UInt16) -> [UInt8] {
        attribute(type, [UInt8(value >> 8), UInt8(value & 0xFF)])
    }

    static func attribute(nested type: UInt16, _ attributes: [[UInt8]]) -> [UInt8] {
        attribute(type | attributeNested, attributes.flatMap { $0 })
    }

    /// A whole request: header, `nfgenmsg` and attributes.
    static func message(
        subsystem: UInt16, command: UInt16, flags: UInt16, sequence: UInt32, family: UInt8, resource: UInt16 = 0,
        _ attributes: [[UInt8]]
    ) -> [UInt8] {
        var body: [UInt8] = [family, 0, UInt8(resource >> 8), UInt8(resource & 0xFF)]
        body += attributes.flatMap { $0 }
        var message = [UInt8]()
        message.reserveCapacity(16 + body.count)
        append(UInt32(16 + body.count), to: &message)
        append(subsystem << 8 | command, to: &message)
        append(flags, to: &message)
        append(sequence, to: &message)
        append(UInt32(0), to: &message)
        return message + body
    }

    /// Sends a request (with `flagAcknowledge`) and waits for its answer: returns the kernel's
    /// error number, 0 for done. Answers to earlier requests (one that timed out) are skipped.
    static func request(
        _ message: [UInt8], sequence: UInt32, on descriptor: Int32, what: String
    ) throws(SystemError)
        -> Int32
    {
        let sent = message.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == message.count else { throw SystemError.call("send(\(what))", errno) }
        var reply = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = reply.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { throw SystemError.call("recv(\(what))", errno) }
            guard count >= 20 else { throw SystemError(.netlink, "a short answer about \(what)") }
            let type = UInt16(littleEndianBytes: reply[4..<6])
            guard type == messageError, UInt32(littleEndianBytes: reply[8..<12]) == sequence else { continue }
            return -Int32(bitPattern: UInt32(littleEndianBytes: reply[16..<20]))
        }
    }

    /// Reads a netlink socket until `stop` is raised: waits in poll (beside the stop signal),
    /// then takes everything waiting without blocking (one wakeup, many messages), each read's
    /// bytes handed to `handle` with their count. A read the kernel lost because the socket was
    /// full (ENOBUFS) is counted in `overruns`.
    ///
    /// `drained` is called each time nothing more is waiting, before the reader sleeps (a reader
    /// that gathers work sends it then).
    static func read(
        _ descriptor: Int32, what: String, stop: StopSignal, overruns: borrowing Atomic<Int>,
        drained: () -> Void = {}, _ handle: (inout [UInt8], Int) -> Void
    ) throws(SystemError) {
        var buffer = [UInt8](repeating: 0, count: 0x20000)
        var fds = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.fd, events: Int16(POLLIN), revents: 0),
        ]
        while !stop.isRaised {
            _ = try systemCall("poll(\(what))") { poll(&fds, 2, -1) }
            if fds[1].revents != 0 { break }
            if try receiveAvailable(descriptor, what: what, buffer: &buffer, overruns: overruns, stop: stop, handle) {
                drained()
            }
        }
    }

    /// Receives what the socket holds now, without waiting, each read handed to `handle`, until
    /// nothing is left (returns true) or `stop` is raised (false); a read lost because the
    /// socket's buffer was full (ENOBUFS) is counted in `overruns`.
    static func receiveAvailable(
        _ descriptor: Int32, what: String, buffer: inout [UInt8], overruns: borrowing Atomic<Int>,
        stop: StopSignal? = nil, _ handle: (inout [UInt8], Int) -> Void
    ) throws(SystemError) -> Bool {
        while stop?.isRaised != true {
            let count = retryingInterrupts {
                buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, screentime_msg_dontwait()) }
            }
            if count < 0 {
                let error = errno
                if error == EAGAIN || error == EWOULDBLOCK { return true }
                if error == ENOBUFS {
                    overruns.add(1, ordering: .relaxed)
                    continue
                }
                throw SystemError.call("recv(\(what))", error)
            }
            handle(&buffer, count)
        }
        return false
    }

    /// Calls `body` with each attribute's type (its flags masked off) and payload, in order, with
    /// no table made: for a reader that wants only a few of them, each packet.
    static func forEachAttribute(_ bytes: ArraySlice<UInt8>, _ body: (UInt16, ArraySlice<UInt8>) -> Void) {
        var at = bytes.startIndex
        while at + 4 <= bytes.endIndex {
            let length = Int(bytes[at]) | Int(bytes[at + 1]) << 8
            let type = (UInt16(bytes[at + 2]) | UInt16(bytes[at + 3]) << 8) & ~(attributeNested | attributeNetByteOrder)
            guard length >= 4, at + length <= bytes.endIndex else { break }
            body(type, bytes[at + 4..<at + length])
            at += (length + 3) & ~3
        }
    }

    /// The attributes of a message's body (after its `nfgenmsg`), by type (flags cleared); a
    /// length that runs past the end stops the reading.
    static func attributes(_ bytes: ArraySlice<UInt8>) -> [UInt16: ArraySlice<UInt8>] {
        var found: [UInt16: ArraySlice<UInt8>] = [:]
        forEachAttribute(bytes) { type, value in found[type] = value }
        return found
    }

    static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}

extension FixedWidthInteger {
    /// The value of little-endian bytes (as many as the type has).
    init(littleEndianBytes bytes: ArraySlice<UInt8>) {
        self = bytes.enumerated().reduce(Self.zero) { $0 | Self($1.element) << (8 * $1.offset) }
    }
}
