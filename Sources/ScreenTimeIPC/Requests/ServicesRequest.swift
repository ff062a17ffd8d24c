/// `services`: the service catalogue (`etc/screentime/services/ID.service`): each service's name,
/// the family's word for it, its web domains and its apps.
public struct ServicesRequest: ControlRequest, Hashable {
    public typealias Reply = ServicesReply
    public static let kind = "services"
    public init() {}
}

public struct ServiceReport: Codable, Sendable, Hashable {
    /// What a guardian types: `--service youtube`.
    public var id: String
    public var name: String
    public var category: String?
    public var domains: [String]
    /// Desktop-entry IDs, Flatpak IDs and `snap:NAME`.
    public var applications: [String]
    /// The service's token, for guardians (a child's rules are shown to her as tokens only).
    public var token: String?

    public init(
        id: String, name: String, category: String?, domains: [String], applications: [String], token: String?
    ) {
        self.id = id
        self.name = name
        self.category = category
        self.domains = domains
        self.applications = applications
        self.token = token
    }
}

public struct ServicesReply: Codable, Sendable, Hashable {
    public var services: [ServiceReport]
    /// Files of the catalogue that were not read, and why (for guardians).
    public var problems: [String]

    public init(services: [ServiceReport], problems: [String]) {
        self.services = services
        self.problems = problems
    }
}
