public import NIOCore
import NIOHTTPTypes
import Synchronization

/// What one device on the network may hold of the dashboard: at most `perClient` connections at
/// once, and `burst` new ones at a time, then `newPerSecond` (more are closed as they open, before
/// their TLS handshake: a device opening and closing connections in a loop made the guardian wait
/// 11 to 19 s), and deadlines a slow client cannot stretch: a request's
/// head within `headDeadline` of the connection opening (or of the last answer), its body within
/// `bodyDeadline` of its head. A device trickling bytes, or opening connections and sending
/// nothing, holds only its own few; everyone else's go on.
public final class ClientLimits: Sendable {
    public let perClient: Int
    public let headDeadline: TimeAmount
    public let bodyDeadline: TimeAmount
    public let burst: Double
    public let newPerSecond: Double

    private struct Device {
        var open = 0
        /// New connections it may still open at once (refilled at `newPerSecond`).
        var allowance: Double
        var refilled: NIODeadline
    }
    private let devices = Mutex<[String: Device]>([:])
    /// Devices remembered; past it, those with nothing open are forgotten, the longest idle first.
    static let remembered = 4_096

    public init(
        perClient: Int = 16, headDeadline: TimeAmount = .seconds(15), bodyDeadline: TimeAmount = .seconds(15),
        burst: Int = 32, newPerSecond: Double = 8
    ) {
        self.perClient = perClient
        self.headDeadline = headDeadline
        self.bodyDeadline = bodyDeadline
        self.burst = Double(burst)
        self.newPerSecond = newPerSecond
    }

    /// The handler for one connection's pipeline (after HTTP decoding).
    public func handler() -> any RemovableChannelHandler { Handler(limits: self) }

    /// Connections a device has open now.
    public func count(_ client: String) -> Int { devices.withLock { $0[client]?.open ?? 0 } }

    fileprivate func opened(_ client: String) -> Bool {
        let now = NIODeadline.now()
        return devices.withLock { devices in
            var device = devices[client] ?? Device(allowance: burst, refilled: now)
            let seconds = Double((now - device.refilled).nanoseconds) / 1e9
            device.allowance = min(burst, device.allowance + seconds * newPerSecond)
            device.refilled = now
            guard device.open < perClient, device.allowance >= 1 else {
                devices[client] = device
                return false
            }
            device.open += 1
            device.allowance -= 1
            devices[client] = device
            if devices.count > Self.remembered {
                let idle = devices.filter { $0.value.open == 0 }.sorted { $0.value.refilled < $1.value.refilled }
                for (old, _) in idle.prefix(devices.count - Self.remembered) { devices[old] = nil }
            }
            return true
        }
    }

    fileprivate func closed(_ client: String) {
        devices.withLock { devices in
            if let open = devices[client]?.open { devices[client]?.open = max(0, open - 1) }
        }
    }

    private final class Handler: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart

        let limits: ClientLimits
        /// The device counted for this connection, once it was let in.
        var client: String?
        /// The connection's two ends, as it opened (what `Devices` keeps its device by).
        var ends: (remote: SocketAddress?, local: SocketAddress?)?
        var deadline: Scheduled<Void>?

        init(limits: ClientLimits) { self.limits = limits }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { admit(context) }
        }

        func channelActive(context: ChannelHandlerContext) {
            admit(context)
            context.fireChannelActive()
        }

        private func admit(_ context: ChannelHandlerContext) {
            guard client == nil else { return }
            let channel = context.channel
            let (remote, local) = (channel.remoteAddress, channel.localAddress)
            let device = Devices.opened(remote: remote, local: local)
            guard limits.opened(device) else {
                Devices.closed(remote: remote, local: local)
                context.close(promise: nil)
                return
            }
            client = device
            ends = (remote, local)
            arm(context, limits.headDeadline)
        }

        func channelInactive(context: ChannelHandlerContext) {
            deadline?.cancel()
            if let client {
                limits.closed(client)
                Devices.closed(remote: ends?.remote, local: ends?.local)
            }
            client = nil
            ends = nil
            context.fireChannelInactive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: arm(context, limits.bodyDeadline)
            // The request is all here: the answer takes what it takes (an event stream is long).
            case .end: deadline?.cancel()
            case .body: break
            }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            // Answered: the next request's head is awaited as the first one's was.
            if case .end = unwrapOutboundIn(data) { arm(context, limits.headDeadline) }
            context.write(data, promise: promise)
        }

        private func arm(_ context: ChannelHandlerContext, _ time: TimeAmount) {
            deadline?.cancel()
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: time) { channel.close(promise: nil) }
        }
    }
}
