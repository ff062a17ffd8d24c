import Foundation
import ScreenTimeClient
public import ScreenTimeCore
import ScreenTimeIPC

/// The shields of a store (Apple's `ShieldSettings`), a value: `store.shield.applications = …`
/// writes it back. Nil means "not set by this store".
public typealias ShieldSettings = ScreenTimeCore.ShieldSettings

/// The settings a client puts in force for a user (Apple's `ManagedSettingsStore`): shields on
/// applications, categories and web domains, blocked applications, the web-content filter.
///
/// Each client's stores are its own (a program is known to the agent by its executable); the
/// agent merges every store of every client for the user, most restrictive wins. Setting a
/// property writes the store and returns once the agent has it in force; reading one gives what
/// this client set. Up to 50 named stores per client, 50 tokens per setting, as Apple's.
///
/// `shield`, `application` and `webContent` are values, as Apple's are: `store.shield.webDomains =
/// …` reads the group and writes back what changed in it, and only that, so a read that failed
/// never clears what the store set before.
///
/// On Linux a store also names its user: by default the user running the code (an individual),
/// or, inside an extension the agent started, that extension's user; a guardian's app names the
/// child (`ManagedSettingsStore(named:user:)`).
public final class ManagedSettingsStore: @unchecked Sendable {
    /// A store's name (Apple's `ManagedSettingsStore.Name`).
    public struct Name: Hashable, Sendable, RawRepresentable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The store `ManagedSettingsStore()` uses.
        public static let `default` = Name("default")
    }

    /// The store's name.
    public let name: Name
    /// The user whose settings these are (nil: see the type's discussion).
    public let user: String?
    let client: ScreenTimeClient
    private let lock = NSLock()
    private var failure: (any Error)?
    private var lastRead = StoreSettings()

    /// The default store.
    public convenience init() { self.init(named: .default) }

    /// A named store (created when first written), of `user` (see the type's discussion).
    public init(named name: Name, user: String? = nil, socket: String? = nil) {
        self.name = name
        self.user = user
        client = ScreenTimeClient(socket: socket)
    }

    /// Why the last read or write of a property failed, if it did (Apple's properties cannot
    /// throw; `write(_:)` and `read()` do). Not Apple's.
    public var lastError: (any Error)? { lock.withLock { failure } }

    /// The settings of its shields (Apple's `shield`).
    public var shield: ShieldSettings {
        get { value().shield }
        set {
            let before = lock.withLock { lastRead }.shield
            record {
                try self.write { settings in
                    if newValue.applications != before.applications {
                        settings.shield.applications = newValue.applications
                    }
                    if newValue.applicationCategories != before.applicationCategories {
                        settings.shield.applicationCategories = newValue.applicationCategories
                    }
                    if newValue.webDomains != before.webDomains { settings.shield.webDomains = newValue.webDomains }
                    if newValue.webDomainCategories != before.webDomainCategories {
                        settings.shield.webDomainCategories = newValue.webDomainCategories
                    }
                }
            }
        }
    }

    /// Applications that may not run (Apple's `application`).
    public var application: ApplicationSettings {
        get { ApplicationSettings(value().application) }
        set {
            let before = ApplicationSettings(lock.withLock { lastRead }.application)
            record {
                let blocked = newValue.blockedApplications != before.blockedApplications
                let tokens = blocked ? try newValue.blockedApplications.map { try self.tokens(of: $0) } : nil
                try self.write { settings in
                    if blocked { settings.application.blockedApplications = tokens }
                    if newValue.denyAppInstallation != before.denyAppInstallation {
                        settings.application.denyAppInstallation = newValue.denyAppInstallation
                    }
                }
            }
        }
    }

    /// The web-content filter (Apple's `webContent`).
    public var webContent: WebContentSettings {
        get { WebContentSettings(value().webContent) }
        set {
            record {
                let policy = try newValue.blockedByFilter.map { try $0.named() }
                try self.write { $0.webContent.blockedByFilter = policy }
            }
        }
    }

    /// Unsets every setting of this store (Apple's `clearAllSettings()`).
    public func clearAllSettings() {
        record { _ = try self.client.send(ClearRequest(self.target)) }
    }

    /// Changes the store's settings in one write; throws what the agent refused (an unknown
    /// token, more than 50, a user not authorized, not allowed). Not Apple's.
    public func write(_ change: (inout StoreSettings) -> Void) throws {
        try lock.withLock {
            var settings = try read()
            change(&settings)
            _ = try client.send(StoreWriteRequest(target, settings: settings))
        }
    }

    /// What this client's store sets now. Not Apple's.
    public func read() throws -> StoreSettings {
        try client.send(StoreReadRequest(target)).store.settings
    }

    var target: StoreTarget { StoreTarget(user: user, client: nil, store: name.rawValue) }

    /// The store as read, or as this client last read it when it cannot be (the error kept in
    /// `lastError`). A property set writes only what differs from this, so that setting one field
    /// after a failed read leaves the others as they are.
    private func value() -> StoreSettings {
        do {
            let settings = try read()
            lock.withLock {
                failure = nil
                lastRead = settings
            }
            return settings
        } catch {
            return lock.withLock {
                failure = error
                return lastRead
            }
        }
    }

    /// Runs a write; a refusal is kept in `lastError` and said on stderr.
    private func record(_ body: () throws -> Void) {
        do {
            try body()
            lock.withLock { failure = nil }
        } catch {
            lock.withLock { failure = error }
            FileHandle.standardError.write(Data("ManagedSettingsStore \(name.rawValue): \(error)\n".utf8))
        }
    }

    /// The tokens of applications; one known by its bundle identifier alone is asked of the agent.
    private func tokens(of applications: Set<Application>) throws -> Set<ApplicationToken> {
        Set(
            try applications.map { application in
                if let token = application.token { return token }
                guard let identifier = application.bundleIdentifier else {
                    throw ScreenTimeIPCError(
                        .invalidArgument,
                        "an application in blockedApplications has neither a token nor a bundle identifier")
                }
                let reply = try client.send(TokenRequest(kind: .app, identity: identifier, user: user))
                return try decoded(reply.token)
            })
    }
}
