/// `ping`: whether the agent answers, and who the caller is to it.
public struct PingRequest: ControlRequest, Hashable {
    public typealias Reply = PingReply
    public static let kind = "ping"
    public init() {}
}

public struct PingReply: Codable, Sendable, Hashable {
    public var agentVersion: String
    public var protocolVersion: Int
    public var callerUID: UInt32
    public var role: CallerRole

    public init(agentVersion: String, protocolVersion: Int, callerUID: UInt32, role: CallerRole) {
        self.agentVersion = agentVersion
        self.protocolVersion = protocolVersion
        self.callerUID = callerUID
        self.role = role
    }
}
