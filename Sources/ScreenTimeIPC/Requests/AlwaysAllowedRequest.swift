/// `allow`: the apps and web domains a guardian always allows a child — usable under downtime and
/// a used-up screen time (not under a limit on them, nor when blocked). With nothing to add or
/// remove it reads the list: a guardian any child's, a child its own (with names: the list is
/// what it may use).
public struct AlwaysAllowedRequest: ControlRequest, Hashable {
    public typealias Reply = AlwaysAllowedReply
    public static let kind = "allow"
    public var user: UserReference?
    /// Desktop-entry IDs (or `snap:NAME`).
    public var applications: [String]
    public var webDomains: [String]
    /// Take these off the list instead.
    public var remove: Bool
    /// Services of the catalogue: their apps and their domains, each an item of the list.
    public var services: [String]?

    public init(
        user: UserReference?, applications: [String] = [], webDomains: [String] = [], remove: Bool = false,
        services: [String] = []
    ) {
        self.services = services.isEmpty ? nil : services
        self.user = user
        self.applications = applications
        self.webDomains = webDomains
        self.remove = remove
    }
}

public struct AlwaysAllowedReply: Codable, Sendable, Hashable {
    public struct Item: Codable, Sendable, Hashable {
        public var name: String
        public var token: String

        public init(name: String, token: String) {
            self.name = name
            self.token = token
        }
    }

    public var user: UserSummary
    public var applications: [Item]
    public var webDomains: [Item]

    public init(user: UserSummary, applications: [Item], webDomains: [Item]) {
        self.user = user
        self.applications = applications
        self.webDomains = webDomains
    }
}
