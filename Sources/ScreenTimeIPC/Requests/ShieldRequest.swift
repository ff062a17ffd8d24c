public import ScreenTimeCore

/// Adds to (or, with `remove`, takes from) a store's shields. Names are resolved by the agent:
/// `applications` are desktop-entry IDs, Flatpak IDs or `snap:NAME`; programs named by their path
/// come as files the caller opened (`applicationFiles`, `blockedApplicationFiles`).
public struct ShieldRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "shield"
    public var target: StoreTarget
    public var applications: [String]
    public var applicationCategories: [String]
    public var webDomains: [String]
    public var webCategories: [String]
    public var selection: FamilyActivitySelection?
    /// Applications that may not run at all (`application.blockedApplications`), named like
    /// `applications`.
    public var blockedApplications: [String]?
    /// Programs to shield, and to block, opened by the caller and passed with the request.
    public var applicationFiles: [FileArgument]?
    public var blockedApplicationFiles: [FileArgument]?
    /// Services of the catalogue (`youtube`), each shielding its domains and its apps.
    public var services: [String]?
    public var remove: Bool

    public init(
        target: StoreTarget, applications: [String] = [], applicationCategories: [String] = [],
        webDomains: [String] = [], webCategories: [String] = [], selection: FamilyActivitySelection? = nil,
        blockedApplications: [String] = [], applicationFiles: [FileArgument] = [],
        blockedApplicationFiles: [FileArgument] = [], services: [String] = [], remove: Bool = false
    ) {
        self.services = services.isEmpty ? nil : services
        self.applicationFiles = applicationFiles.isEmpty ? nil : applicationFiles
        self.blockedApplicationFiles = blockedApplicationFiles.isEmpty ? nil : blockedApplicationFiles
        self.blockedApplications = blockedApplications.isEmpty ? nil : blockedApplications
        self.target = target
        self.applications = applications
        self.applicationCategories = applicationCategories
        self.webDomains = webDomains
        self.webCategories = webCategories
        self.selection = selection
        self.remove = remove
    }

    public var isEmpty: Bool {
        applications.isEmpty && applicationCategories.isEmpty && webDomains.isEmpty && webCategories.isEmpty
            && (selection?.isEmpty ?? true) && (blockedApplications ?? []).isEmpty
            && (applicationFiles ?? []).isEmpty && (blockedApplicationFiles ?? []).isEmpty && (services ?? []).isEmpty
    }
}
