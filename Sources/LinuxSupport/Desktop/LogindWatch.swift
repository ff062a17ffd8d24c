import CLogind
import Glibc

/// logind's sessions (org.freedesktop.login1 on the system bus), as they come and go and as
/// their Active, IdleHint and LockedHint change: signals, no polling. The bus and logind are
/// root's; what a session says of itself (its display, its leader) is still a hint to check.
public final class LogindWatch {
    /// A session as logind tells it.
    public struct Session: Hashable, Sendable {
        public var id: String
        public var uid: UInt32
        /// The pid of the session's first process.
        public var leader: Int32
        /// `x11`, `wayland`, `tty`, `mir` or `unspecified`.
        public var type: String
        /// `user`, `greeter`, `lock-screen`, ...
        public var sessionClass: String
        /// The X11 display (`:0`) of an x11 session; empty otherwise.
        public var display: String
        public var tty: String
        public var active: Bool
        public var idle: Bool
        /// When it became idle, in CLOCK_MONOTONIC microseconds (0: not told).
        public var idleSinceMonotonic: UInt64
        public var locked: Bool
        public var remote: Bool
        /// The session ended (only `id` is meaningful).
        public var removed: Bool
    }

    private let bus: OpaquePointer
    public let address: String

    /// Connects to the bus at `address` and hands every session there now to `each`.
    public init(address: String, each: (Session) -> Void) throws(SystemError) {
        var error = [CChar](repeating: 0, count: 256)
        var found: [Session] = []
        let opened = withUnsafeMutablePointer(to: &found) { pointer in
            clogind_open(
                address,
                { session, context in
                    guard let session, let context else { return }
                    context.assumingMemoryBound(to: [Session].self).pointee.append(Session(session.pointee))
                }, pointer, &error, error.count)
        }
        guard let opened else {
            throw SystemError(.command, "logind at \(address): \(Self.text(error))")
        }
        bus = opened
        self.address = address
        found.forEach(each)
    }

    deinit { clogind_close(bus) }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Hands each session that appears, changes or ends to `each` until `stop` is raised; throws
    /// when the bus goes away.
    public func run(stop: StopSignal, each: (Session) -> Void) throws(SystemError) {
        var error = [CChar](repeating: 0, count: 256)
        while !stop.isRaised {
            var found: [Session] = []
            let result = withUnsafeMutablePointer(to: &found) { pointer in
                clogind_wait(
                    bus, stop.fd,
                    { session, context in
                        guard let session, let context else { return }
                        context.assumingMemoryBound(to: [Session].self).pointee.append(Session(session.pointee))
                    }, pointer, &error, error.count)
            }
            found.forEach(each)
            if result < 0 { throw SystemError(.command, "logind at \(address): \(Self.text(error))") }
            if result == 1 { return }
        }
    }
}

extension LogindWatch {
    /// Asks logind at `address` to lock the screen of every session of `uid` (the desktop shows
    /// its lock screen, as at Super+L), on a connection of its own; returns how many were asked.
    /// Each call waits at most 2 s for a logind that does not answer.
    public static func lockSessions(of uid: UInt32, address: String) throws(SystemError) -> Int {
        var error = [CChar](repeating: 0, count: 256)
        let asked = clogind_lock_user(address, uid, &error, error.count)
        guard asked >= 0 else { throw SystemError(.command, "logind at \(address): \(text(error))") }
        return Int(asked)
    }
}

extension LogindWatch.Session {
    init(_ raw: clogind_session) {
        func text<T>(_ tuple: T) -> String {
            withUnsafeBytes(of: tuple) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        self.init(
            id: text(raw.id), uid: raw.uid, leader: Int32(truncatingIfNeeded: raw.leader), type: text(raw.type),
            sessionClass: text(raw.session_class), display: text(raw.display), tty: text(raw.tty),
            active: raw.active != 0, idle: raw.idle != 0, idleSinceMonotonic: raw.idle_since_monotonic,
            locked: raw.locked != 0, remote: raw.remote != 0, removed: raw.removed != 0)
    }
}
