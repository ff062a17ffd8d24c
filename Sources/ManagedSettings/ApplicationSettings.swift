public import ScreenTimeCore
import ScreenTimeIPC

/// Applications a store blocks outright (Apple's `ApplicationSettings`), a value.
public struct ApplicationSettings: Hashable, Sendable {
    /// Applications that may not run at all (refused at exec, not shielded). One made from its bundle
    /// identifier alone gets its token from the agent when written.
    public var blockedApplications: Set<Application>?
    /// Whether only programs a guardian installed may run.
    public var denyAppInstallation: Bool?

    public init(blockedApplications: Set<Application>? = nil, denyAppInstallation: Bool? = nil) {
        self.blockedApplications = blockedApplications
        self.denyAppInstallation = denyAppInstallation
    }

    init(_ settings: ScreenTimeCore.ApplicationSettings) {
        blockedApplications = settings.blockedApplications.map { Set($0.map { Application(token: $0) }) }
        denyAppInstallation = settings.denyAppInstallation
    }
}

/// The web-content filter of a store (Apple's `WebContentSettings`), a value.
public struct WebContentSettings: Hashable, Sendable {
    /// What the filter blocks (Apple's `WebContentSettings.FilterPolicy`). A filter names domains,
    /// as Apple's does: each `WebDomain` here needs its `domain`.
    public enum FilterPolicy: Hashable, Sendable {
        /// Filters nothing.
        case none
        /// Blocks adult content and the given domains, except the exceptions.
        case auto(Set<WebDomain> = [], except: Set<WebDomain> = [])
        /// Blocks the given domains.
        case specific(Set<WebDomain>)
        /// Blocks every domain except the exceptions.
        case all(except: Set<WebDomain> = [])
    }

    public var blockedByFilter: FilterPolicy?

    public init(blockedByFilter: FilterPolicy? = nil) {
        self.blockedByFilter = blockedByFilter
    }

    init(_ settings: ScreenTimeCore.WebContentSettings) {
        blockedByFilter = settings.blockedByFilter.map(FilterPolicy.init)
    }
}

extension WebContentSettings.FilterPolicy {
    init(_ policy: ScreenTimeCore.FilterPolicy) {
        func domains(_ names: Set<DomainName>) -> Set<WebDomain> { Set(names.map { WebDomain(domain: $0.rawValue) }) }
        switch policy {
        case .none: self = .none
        case .auto(let blocked, let except): self = .auto(domains(blocked), except: domains(except))
        case .specific(let blocked): self = .specific(domains(blocked))
        case .all(let except): self = .all(except: domains(except))
        }
    }

    /// The policy over domain names, as the agent keeps it.
    func named() throws(ScreenTimeIPCError) -> ScreenTimeCore.FilterPolicy {
        func names(_ domains: Set<WebDomain>) throws(ScreenTimeIPCError) -> Set<DomainName> {
            var names: Set<DomainName> = []
            for domain in domains {
                guard let text = domain.domain else {
                    throw ScreenTimeIPCError(
                        .invalidArgument, "a web-content filter names domains; one WebDomain in it has only a token")
                }
                do {
                    names.insert(try DomainName(text))
                } catch {
                    throw ScreenTimeIPCError(error)
                }
            }
            return names
        }
        switch self {
        case .none: return .none
        case .auto(let blocked, let except): return .auto(try names(blocked), except: try names(except))
        case .specific(let blocked): return .specific(try names(blocked))
        case .all(let except): return .all(except: try names(except))
        }
    }
}
