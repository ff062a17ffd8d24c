import Foundation
import ScreenTimeClient
public import ScreenTimeCore
import ScreenTimeIPC

/// The settings a client puts in force for a user (Apple's `ManagedSettingsStore`): shields on
/// applications, categories and web domains, blocked applications, the web-content filter.
///
/// Each client's stores are its own (a program is known to the agent by its executable); the
/// agent merges every store of every client for the user, most restrictive wins. Setting a
/// property writes the store and returns once the agent has it in force; reading one gives what
/// this client set. Up to 50 named stores per client, 50 tokens per setting, as Apple's.
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
    /// Why the last write failed, if it did (Apple's setters cannot throw; `write(_:)` does).
    public private(set) var lastError: (any Error)?
    private let lock = NSLock()

    /// The settings of its shields (Apple's `ShieldSettings`).
    public private(set) lazy var shield = ShieldSettings(store: self)
    /// Applications that may not run (Apple's `ApplicationSettings`).
    public private(set) lazy var application = ApplicationSettings(store: self)
    /// The web-content filter (Apple's `WebContentSettings`).
    public private(set) lazy var webContent = WebContentSettings(store: self)

    /// The default store.
    public convenience init() { self.init(named: .default) }

    /// A named store (created when first written), of `user` (see the type's discussion).
    public init(named name: Name, user: String? = nil, socket: String? = nil) {
        self.name = name
        self.user = user
        client = ScreenTimeClient(socket: socket)
    }

    /// Unsets every setting of this store (Apple's `clearAllSettings()`).
    public func clearAllSettings() {
        record { _ = try self.client.send(ClearRequest(self.target)) }
    }

    /// Changes the store's settings in one write; throws what the agent refused (an unknown
    /// token, more than 50, a user not authorized, not allowed).
    public func write(_ change: (inout StoreSettings) -> Void) throws {
        try lock.withLock {
            var settings = try read()
            change(&settings)
            _ = try client.send(StoreWriteRequest(target, settings: settings))
        }
    }

    /// What this client's store sets now.
    public func read() throws -> StoreSettings {
        try client.send(StoreReadRequest(target)).store.settings
    }

    var target: StoreTarget { StoreTarget(user: user, client: nil, store: name.rawValue) }

    /// A property's value, or nil when it cannot be read (the error kept in `lastError`).
    func value<T>(_ read: (StoreSettings) -> T?) -> T? {
        do {
            return read(try self.read())
        } catch {
            lastError = error
            return nil
        }
    }

    /// A property set: written at once; a refusal is kept in `lastError` and said on stderr.
    func set(_ change: (inout StoreSettings) -> Void) {
        record { try self.write(change) }
    }

    private func record(_ body: () throws -> Void) {
        do {
            try body()
            lastError = nil
        } catch {
            lastError = error
            FileHandle.standardError.write(Data("ManagedSettingsStore \(name.rawValue): \(error)\n".utf8))
        }
    }
}

/// The shields of a store (Apple's `ShieldSettings`).
public final class ShieldSettings: @unchecked Sendable {
    /// Which categories a category shield covers, and its exceptions.
    public typealias ActivityCategoryPolicy<Kind: TokenKind> = ScreenTimeCore.ActivityCategoryPolicy<Kind>
    unowned let store: ManagedSettingsStore
    init(store: ManagedSettingsStore) { self.store = store }

    /// Applications shielded (frozen behind the shield window); nil: none set by this store.
    public var applications: Set<ApplicationToken>? {
        get { store.value { $0.shield.applications } }
        set { store.set { $0.shield.applications = newValue } }
    }

    /// Applications shielded by category (`.specific(_, except:)`, `.all(except:)`).
    public var applicationCategories: ActivityCategoryPolicy<ApplicationKind>? {
        get { store.value { $0.shield.applicationCategories } }
        set { store.set { $0.shield.applicationCategories = newValue } }
    }

    /// Web domains shielded (and everything under each).
    public var webDomains: Set<WebDomainToken>? {
        get { store.value { $0.shield.webDomains } }
        set { store.set { $0.shield.webDomains = newValue } }
    }

    /// Web domains shielded by web category.
    public var webDomainCategories: ActivityCategoryPolicy<WebDomainKind>? {
        get { store.value { $0.shield.webDomainCategories } }
        set { store.set { $0.shield.webDomainCategories = newValue } }
    }
}

/// Applications a store blocks outright (Apple's `ApplicationSettings`).
public final class ApplicationSettings: @unchecked Sendable {
    unowned let store: ManagedSettingsStore
    init(store: ManagedSettingsStore) { self.store = store }

    /// Applications that may not run at all (refused at exec, not shielded).
    public var blockedApplications: Set<Application>? {
        get {
            store.value { settings in
                settings.application.blockedApplications.map { Set($0.map { Application(token: $0) }) }
            }
        }
        set {
            let tokens = newValue.map { Set($0.compactMap(\.token)) }
            store.set { $0.application.blockedApplications = tokens }
        }
    }

    /// Whether only programs a guardian installed may run.
    public var denyAppInstallation: Bool? {
        get { store.value { $0.application.denyAppInstallation } }
        set { store.set { $0.application.denyAppInstallation = newValue } }
    }
}

/// The web-content filter of a store (Apple's `WebContentSettings`).
public final class WebContentSettings: @unchecked Sendable {
    /// What the filter blocks (`.auto(_, except:)`, `.specific(_)`, `.all(except:)`, `.none`).
    public typealias FilterPolicy = ScreenTimeCore.FilterPolicy
    unowned let store: ManagedSettingsStore
    init(store: ManagedSettingsStore) { self.store = store }

    public var blockedByFilter: FilterPolicy? {
        get { store.value { $0.webContent.blockedByFilter } }
        set { store.set { $0.webContent.blockedByFilter = newValue } }
    }
}
