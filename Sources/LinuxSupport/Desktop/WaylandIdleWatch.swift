import CLinuxShim
import FoundationEssentials
import Glibc

/// Idle and back in a wlroots session, from the compositor itself: the agent speaks the Wayland
/// wire protocol on the session's socket (as root, the socket being the child's) and asks for an
/// idle timeout — `ext_idle_notifier_v1` where the compositor has it (sway 1.8 and later), KDE's
/// `org_kde_kwin_idle` otherwise (sway 1.7) — on the first seat. Only what that needs is spoken:
/// the registry, a seat bound, one timeout object, its two events.
///
/// The compositor is the child's to shape: every message is bounded, one that does not parse
/// ends the watch, and the watch belongs to its own thread.
public final class WaylandIdleWatch {
    public enum Change: Hashable, Sendable {
        case idle
        case active
    }

    public let path: String
    public let server: PeerCredentials
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextID: UInt32 = 2

    public init(path: String, timeout: Duration = .seconds(5)) throws(SystemError) {
        self.path = path
        fd = try StreamConnection.unix(path, timeout: timeout)
        do {
            server = try X11FocusWatch.peerCredentials(fd, path: path)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    public func interrupt() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Asks for `idleAfter` and reports idle and back until `stop` is raised (returns) or the
    /// compositor goes, errs, or has no idle protocol (throws).
    public func run(stop: StopSignal, idleAfter: Duration, _ report: (Change) -> Void) throws(SystemError) {
        let registry = newID()
        send(object: 1, opcode: 1, [.uint(registry)])
        let synced = newID()
        send(object: 1, opcode: 0, [.uint(synced)])
        var seat: (name: UInt32, version: UInt32)?
        var notifier: (name: UInt32, interface: String)?
        var done = false
        while !done {
            guard let message = try receive(stop: stop, deadline: .now + .seconds(5)) else { return }
            if message.object == registry, message.opcode == 0 {
                var reader = Reader(message.arguments)
                guard let name = reader.uint(), let interface = reader.string(), let version = reader.uint() else {
                    throw SystemError(.command, "Wayland at \(path): a global that does not parse")
                }
                if interface == "wl_seat", seat == nil { seat = (name, version) }
                if interface == "ext_idle_notifier_v1" { notifier = (name, interface) }
                if interface == "org_kde_kwin_idle", notifier == nil { notifier = (name, interface) }
            } else if message.object == synced, message.opcode == 0 {
                done = true
            } else {
                try checkError(message)
            }
        }
        guard let seat, let notifier else {
            throw SystemError(.command, "Wayland at \(path): the compositor offers no idle protocol (or no seat)")
        }
        let seatID = newID()
        send(object: registry, opcode: 0, [.uint(seat.name), .string("wl_seat"), .uint(1), .uint(seatID)])
        let notifierID = newID()
        send(
            object: registry, opcode: 0,
            [.uint(notifier.name), .string(notifier.interface), .uint(1), .uint(notifierID)])
        let timeoutID = newID()
        let milliseconds = UInt32(clamping: idleAfter.components.seconds * 1000)
        if notifier.interface == "ext_idle_notifier_v1" {
            send(object: notifierID, opcode: 1, [.uint(timeoutID), .uint(milliseconds), .uint(seatID)])
        } else {
            send(object: notifierID, opcode: 0, [.uint(timeoutID), .uint(seatID), .uint(milliseconds)])
        }
        try flush()
        var idle = false
        while true {
            guard let message = try receive(stop: stop, deadline: nil) else { return }
            if message.object == timeoutID {
                if message.opcode == 0, !idle {
                    idle = true
                    report(.idle)
                } else if message.opcode == 1, idle {
                    idle = false
                    report(.active)
                }
            } else {
                try checkError(message)
            }
        }
    }

    // MARK: the wire

    private enum Argument {
        case uint(UInt32)
        case string(String)
    }

    private var outgoing: [UInt8] = []

    private func newID() -> UInt32 {
        defer { nextID += 1 }
        return nextID
    }

    private func send(object: UInt32, opcode: UInt16, _ arguments: [Argument]) {
        var body: [UInt8] = []
        for argument in arguments {
            switch argument {
            case .uint(let value): Self.append(value, to: &body)
            case .string(let text):
                let bytes = Array(text.utf8) + [0]
                Self.append(UInt32(bytes.count), to: &body)
                body += bytes
                while body.count % 4 != 0 { body.append(0) }
            }
        }
        Self.append(object, to: &outgoing)
        Self.append(UInt32(8 + body.count) << 16 | UInt32(opcode), to: &outgoing)
        outgoing += body
    }

    private func flush() throws(SystemError) {
        var sent = 0
        while sent < outgoing.count {
            sent += try systemCall("send(\(path))") {
                outgoing[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
        outgoing = []
    }

    private func checkError(_ message: (object: UInt32, opcode: UInt16, arguments: [UInt8])) throws(SystemError) {
        guard message.object == 1, message.opcode == 0 else { return }
        var reader = Reader(message.arguments)
        _ = reader.uint()
        _ = reader.uint()
        let text = reader.string() ?? "?"
        throw SystemError(.command, "Wayland at \(path): the compositor says \(text.prefix(200))")
    }

    private func receive(
        stop: StopSignal, deadline: ContinuousClock.Instant?
    ) throws(SystemError) -> (object: UInt32, opcode: UInt16, arguments: [UInt8])? {
        try flush()
        while true {
            if buffer.count >= 8 {
                let object = Self.word(buffer, 0)
                let sizeAndOpcode = Self.word(buffer, 4)
                let size = Int(sizeAndOpcode >> 16)
                guard size >= 8, size % 4 == 0 else {
                    throw SystemError(.command, "Wayland at \(path): a message of \(size) bytes")
                }
                if buffer.count >= size {
                    let arguments = Array(buffer[8..<size])
                    buffer.removeFirst(size)
                    return (object, UInt16(sizeAndOpcode & 0xffff), arguments)
                }
            }
            guard
                try receiveMore(
                    fd, into: &buffer, chunk: 4096, stop: stop, deadline: deadline, what: "Wayland at \(path)")
            else { return nil }
        }
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }

    /// Arguments of a message, each length checked.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func uint() -> UInt32? {
            guard offset + 4 <= bytes.count else { return nil }
            defer { offset += 4 }
            return WaylandIdleWatch.word(bytes, offset)
        }

        mutating func string() -> String? {
            guard let length = uint().map(Int.init), length >= 1, offset + length <= bytes.count else { return nil }
            let text = String(decoding: bytes[offset..<(offset + length - 1)], as: UTF8.self)
            offset += (length + 3) & ~3
            return text
        }
    }
}
