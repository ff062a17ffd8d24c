public import FoundationEssentials

/// What the browsers on this PC may do while a child is authorized (managed policies, for every
/// user of the PC, as all of them are).
public struct BrowserSettings: Codable, Sendable, Hashable {
    /// Private windows (Chromium's incognito, Firefox's private browsing) allowed.
    public var privateWindows: Bool
    /// The extensions that may be installed; nil: any. Chromium IDs (32 letters a–p) and Firefox
    /// add-on IDs (`name@example.org`, `{GUID}`).
    public var extensions: [String]?

    public init(privateWindows: Bool = true, extensions: [String]? = nil) {
        self.privateWindows = privateWindows
        self.extensions = extensions
    }

    /// At most this many extensions on the list.
    public static let maximumExtensions = 200
}

/// `browsers`: the browsers' settings; with changes, a guardian's.
public struct BrowsersRequest: ControlRequest, Hashable {
    public typealias Reply = BrowsersReply
    public static let kind = "browsers"

    public var privateWindows: Bool?
    /// true: any extension may be installed (the list is kept for later); false: only the list's.
    public var anyExtensions: Bool?
    /// Added to the list (which then limits installs).
    public var allowExtensions: [String]?
    public var removeExtensions: [String]?

    public init(
        privateWindows: Bool? = nil, anyExtensions: Bool? = nil, allowExtensions: [String] = [],
        removeExtensions: [String] = []
    ) {
        self.privateWindows = privateWindows
        self.anyExtensions = anyExtensions
        self.allowExtensions = allowExtensions.isEmpty ? nil : allowExtensions
        self.removeExtensions = removeExtensions.isEmpty ? nil : removeExtensions
    }

    public var changes: Bool {
        privateWindows != nil || anyExtensions != nil || allowExtensions != nil || removeExtensions != nil
    }
}

public struct BrowsersReply: Codable, Sendable, Hashable {
    public var settings: BrowserSettings
    /// Whether they are in force now: while any child is authorized.
    public var inForce: Bool
    public var changedBy: String?
    public var changedAt: Date?

    public init(settings: BrowserSettings, inForce: Bool, changedBy: String?, changedAt: Date?) {
        self.settings = settings
        self.inForce = inForce
        self.changedBy = changedBy
        self.changedAt = changedAt
    }
}
