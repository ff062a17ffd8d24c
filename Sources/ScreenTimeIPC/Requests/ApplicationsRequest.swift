/// `applications`: a user's installed desktop applications, with categories and tokens.
public struct ApplicationsRequest: ControlRequest, Hashable {
    public typealias Reply = ApplicationsReply
    public static let kind = "applications"
    public var user: UserReference?
    public init(user: UserReference? = nil) { self.user = user }
}

public struct ApplicationReport: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var categories: [String]
    public var token: String
    public var source: String

    public init(id: String, name: String, categories: [String], token: String, source: String) {
        self.id = id
        self.name = name
        self.categories = categories
        self.token = token
        self.source = source
    }
}

public struct ApplicationsReply: Codable, Sendable, Hashable {
    public var user: UserSummary
    public var applications: [ApplicationReport]
    public init(user: UserSummary, applications: [ApplicationReport]) {
        self.user = user
        self.applications = applications
    }
}
