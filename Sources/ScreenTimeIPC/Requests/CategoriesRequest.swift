/// `categories`: app categories (with counts of a user's applications) and web categories.
public struct CategoriesRequest: ControlRequest, Hashable {
    public typealias Reply = CategoriesReply
    public static let kind = "categories"
    public var user: UserReference?
    public init(user: UserReference? = nil) { self.user = user }
}

public struct CategoryReport: Codable, Sendable, Hashable {
    public var name: String
    /// `app`, `web` or `service` (a service of the catalogue: its apps and its sites; listed for
    /// guardians).
    public var kind: String
    public var token: String
    /// How many installed applications (or listed domains) it holds, where known.
    public var count: Int?

    public init(name: String, kind: String, token: String, count: Int?) {
        self.name = name
        self.kind = kind
        self.token = token
        self.count = count
    }
}

public struct CategoriesReply: Codable, Sendable, Hashable {
    public var categories: [CategoryReport]
    public init(categories: [CategoryReport]) { self.categories = categories }
}
