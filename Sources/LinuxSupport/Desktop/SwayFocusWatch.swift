import CLinuxShim
import FoundationEssentials
import Glibc
import ScreenTimeCore

/// The agent's own view of a sway (or i3-compatible wlroots) session: the compositor's IPC socket
/// (`SWAYSOCK`), subscribed to window events, which carry the focused window's `pid` (the
/// compositor's word, from the Wayland client's socket) and `app_id`.
///
/// The socket is a hint from the child's environment: whoever answers is the child's to shape.
/// Connecting gives up after a deadline, every message is bounded (`maximumMessage`), a message
/// that does not parse ends the watch, and the watch belongs to its own thread.
public final class SwayFocusWatch {
    public struct Window: Hashable, Sendable {
        /// The container's id in the compositor.
        public var id: Int
        public var pid: Int32?
        public var applicationID: String?
    }

    public enum Change: Hashable, Sendable {
        /// The window in front now (nil: none).
        case focus(Window?)
    }

    public let path: String
    /// Who listens on the socket.
    public let server: PeerCredentials
    static let magic = Array("i3-ipc".utf8)
    /// A reply or event larger is refused: a real tree is tens of kilobytes (a window's node is
    /// one or two), and a child's program posing as sway must not make the agent decode
    /// megabytes of it (an 8 MB tree of empty nodes cost 12 s of CPU and 320 MB).
    static let maximumMessage = 2 << 20
    /// And one of more values (arrays, objects, commas) before it is decoded.
    static let maximumValues = 200_000
    /// Window events kept while the tree's reply is awaited.
    static let maximumPending = 64
    /// A window event larger, or more of them in a second, ends the watch.
    static let maximumEvent = 256 << 10
    static let maximumEventsPerSecond = 500
    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects, waiting at most `timeout` for the socket.
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

    /// Makes a `run` waiting on the compositor give up (from any thread).
    public func interrupt() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Reports the window in front, then each change, until `stop` is raised (returns) or the
    /// compositor goes or says something that is not i3-ipc (throws). `timeout` bounds each reply.
    public func run(stop: StopSignal, timeout: Duration = .seconds(5), _ report: (Change) -> Void) throws(SystemError) {
        // Subscribed before the tree is read: a change in between is not missed.
        try send(type: 2, Array(#"["window"]"#.utf8))
        guard let subscribed = try receive(stop: stop, deadline: .now + timeout) else { return }
        guard subscribed.type == 2, Self.decode(Subscribed.self, subscribed.payload)?.success == true else {
            throw SystemError(.command, "sway IPC at \(path): the subscription was refused")
        }
        try send(type: 4, [])
        var tree: (type: UInt32, payload: [UInt8])?
        // Events may arrive before the tree's reply: a few are kept, within one deadline for the
        // reply (a program posing as sway that sends events without end holds no more).
        var pending: [[UInt8]] = []
        let deadline = ContinuousClock.now + timeout
        while tree == nil {
            guard let message = try receive(stop: stop, deadline: deadline) else { return }
            if message.type == 4 {
                tree = message
            } else if message.type == 0x8000_0003 {
                guard pending.count < Self.maximumPending else {
                    throw SystemError(
                        .command, "sway IPC at \(path): more than \(Self.maximumPending) events before the tree")
                }
                pending.append(message.payload)
            }
        }
        // Decoded, looked at and let go: nothing of the tree is kept while the watch runs.
        var shown: Window?
        do {
            guard let root = tree.flatMap({ Self.decode(Node.self, $0.payload) }) else {
                throw SystemError(.command, "sway IPC at \(path): the tree is not JSON")
            }
            shown = Self.focused(in: root)
        }
        tree = nil
        report(.focus(shown))
        func handle(_ payload: [UInt8]) throws(SystemError) {
            guard let event = Self.decode(Event.self, payload), let change = event.change,
                let container = event.container
            else { throw SystemError(.command, "sway IPC at \(self.path): a window event is not JSON") }
            let window = Self.window(container)
            switch change {
            case "focus":
                if window != shown {
                    shown = window
                    report(.focus(window))
                }
            case "close" where window?.id == shown?.id:
                shown = nil
                report(.focus(nil))
            default: break
            }
        }
        for payload in pending { try handle(payload) }
        pending = []
        // Sway sends a window event at each change (a few a second, a title's updates at most
        // some dozens) of a container's few kilobytes: a program sending them larger or faster
        // is not sway, and is read no longer (it is tried again later, less and less often).
        var second = ContinuousClock.now
        var inSecond = 0
        while true {
            guard let message = try receive(stop: stop, deadline: nil) else { return }
            guard message.type == 0x8000_0003 else { continue }
            let now = ContinuousClock.now
            if now - second >= .seconds(1) { (second, inSecond) = (now, 0) }
            inSecond += 1
            guard inSecond <= Self.maximumEventsPerSecond, message.payload.count <= Self.maximumEvent else {
                throw SystemError(.command, "sway IPC at \(path): window events larger or faster than sway sends")
            }
            try handle(message.payload)
        }
    }

    private func send(type: UInt32, _ payload: [UInt8]) throws(SystemError) {
        var message = Self.magic
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { message += $0 }
        withUnsafeBytes(of: type.littleEndian) { message += $0 }
        message += payload
        var sent = 0
        while sent < message.count {
            sent += try systemCall("send(\(path))") {
                message[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
    }

    /// One message; nil when `stop` was raised. Throws at the end of the stream, on a message
    /// that is not i3-ipc or too large, and past `deadline`.
    private func receive(
        stop: StopSignal, deadline: ContinuousClock.Instant?
    ) throws(SystemError) -> (type: UInt32, payload: [UInt8])? {
        while true {
            if buffer.count >= 14 {
                guard Array(buffer[0..<6]) == Self.magic else {
                    throw SystemError(.command, "sway IPC at \(path): not an i3-ipc message")
                }
                let length = Int(Self.word(buffer, at: 6))
                guard length <= Self.maximumMessage else {
                    throw SystemError(.command, "sway IPC at \(path): a message of \(length) bytes")
                }
                if buffer.count >= 14 + length {
                    let type = Self.word(buffer, at: 10)
                    let payload = Array(buffer[14..<(14 + length)])
                    buffer.removeFirst(14 + length)
                    return (type, payload)
                }
            }
            guard
                try receiveMore(
                    fd, into: &buffer, chunk: 65_536, stop: stop, deadline: deadline, what: "sway IPC at \(path)")
            else { return nil }
        }
    }

    private static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }

    /// A container of sway's tree, with what is read of it: each field only where it has its
    /// kind (nil, or no children, otherwise), the rest of what sway says passed over.
    struct Node: Decodable {
        var id: Int?
        var pid: Int?
        var appID: String?
        var focused: Bool?
        var nodes: [Node]
        var floatingNodes: [Node]

        enum Key: String, CodingKey {
            case id, pid, focused, nodes
            case appID = "app_id"
            case floatingNodes = "floating_nodes"
        }

        init(id: Int? = nil, pid: Int? = nil, appID: String? = nil, focused: Bool? = nil, nodes: [Node] = []) {
            (self.id, self.pid, self.appID, self.focused, self.nodes, floatingNodes) = (
                id, pid, appID, focused, nodes, []
            )
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            id = try? container.decodeIfPresent(Int.self, forKey: .id)
            pid = try? container.decodeIfPresent(Int.self, forKey: .pid)
            appID = try? container.decodeIfPresent(String.self, forKey: .appID)
            focused = try? container.decodeIfPresent(Bool.self, forKey: .focused)
            // Children that are not all containers are none.
            nodes = (try? container.decodeIfPresent([Node].self, forKey: .nodes)) ?? []
            floatingNodes = (try? container.decodeIfPresent([Node].self, forKey: .floatingNodes)) ?? []
        }
    }

    /// A window event: what changed, and the container it concerns.
    struct Event: Decodable {
        var change: String?
        var container: Node?

        init(from decoder: any Decoder) throws {
            let keyed = try decoder.container(keyedBy: Key.self)
            change = try? keyed.decodeIfPresent(String.self, forKey: .change)
            container = try? keyed.decodeIfPresent(Node.self, forKey: .container)
        }

        enum Key: String, CodingKey { case change, container }
    }

    struct Subscribed: Decodable {
        var success: Bool?
    }

    /// A message's JSON as `type`; nil when it is not JSON, or is deeper or larger than is read.
    static func decode<T: Decodable>(_ type: T.Type, _ payload: [UInt8]) -> T? {
        guard (try? JSONValue.check(payload, maximumDepth: 256, maximumValues: maximumValues)) != nil else {
            return nil
        }
        return try? JSONDecoder().decode(type, from: Data(payload))
    }

    static func window(_ node: Node) -> Window? {
        guard let id = node.id else { return nil }
        let pid = node.pid.flatMap { Int32(exactly: $0) }.flatMap { $0 > 0 ? $0 : nil }
        return Window(id: id, pid: pid, applicationID: node.appID)
    }

    /// The focused window of a tree (a leaf with `focused`); depth and breadth bounded.
    static func focused(in node: Node, depth: Int = 0) -> Window? {
        guard depth < 64 else { return nil }
        let children = node.nodes + node.floatingNodes
        if node.focused == true, children.isEmpty, node.pid != nil { return window(node) }
        for child in children.prefix(4096) {
            if let found = focused(in: child, depth: depth + 1) { return found }
        }
        return nil
    }
}
