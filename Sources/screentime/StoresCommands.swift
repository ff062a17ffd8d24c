import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeClient
import ScreenTimeCore
import ScreenTimeIPC

struct DenyInstalls: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deny-installs",
        abstract: "Let a user run only programs a guardian installed (application.denyAppInstallation).",
        discussion: """
            on: programs the user put on the PC itself (its own files, or anything in a directory it \
            can write, copies of the loader included) are refused before they run; scripts still run \
            through installed interpreters. off: the store no longer denies it.
            """)

    enum Switch: String, ExpressibleByArgument, CaseIterable { case on, off }

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @Argument(help: "on or off.") var state: Switch

    func run() throws {
        let reply = try perform(connection, DenyInstallsRequest(target: target.request, deny: state == .on))
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}

struct Clear: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Clear every setting of a named store.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions

    func run() throws {
        let reply = try perform(connection, ClearRequest(target.request))
        if output.json { return try printJSON(reply) }
        print("cleared \(reply.store.client)/\(reply.store.name) for \(reply.user.name)")
    }
}

struct ShieldItems: ParsableArguments {
    @Option(name: .customLong("app"), help: "A desktop-entry ID (org.gnome.Chess), snap:NAME, or a program's path.")
    var applications: [String] = []
    @Option(name: .customLong("app-category"), help: "A freedesktop category (Game, Education, …).")
    var applicationCategories: [String] = []
    @Option(name: .customLong("domain"), help: "A web domain; everything under it is covered.")
    var webDomains: [String] = []
    @Option(name: .customLong("web-category"), help: "A web category list (see 'screentime categories').")
    var webCategories: [String] = []
    @Option(
        name: .customLong("service"),
        help: "A service of the catalogue (youtube, tiktok, …; see 'screentime services'): its domains and its apps.")
    var services: [String] = []
    @Option(help: "A FamilyActivitySelection JSON file (from 'screentime pick'), or - for standard input.")
    var selection: String?

    func request(_ target: StoreTarget, remove: Bool, programs: OpenedPrograms) throws -> ShieldRequest {
        var picked: FamilyActivitySelection?
        if let selection {
            let data: Data
            do {
                data = selection == "-" ? try standardInput() : try Data(contentsOf: URL(fileURLWithPath: selection))
            } catch {
                throw ValidationError("cannot read the selection \(selection): \(readableError(error))")
            }
            do {
                picked = try JSONDecoder().decode(FamilyActivitySelection.self, from: data)
            } catch {
                throw ValidationError("\(selection) is not a FamilyActivitySelection: \(error)")
            }
        }
        let (ids, files) = try programs.split(applications)
        return ShieldRequest(
            target: target, applications: ids, applicationCategories: applicationCategories,
            webDomains: webDomains, webCategories: webCategories, selection: picked, applicationFiles: files,
            services: services, remove: remove)
    }
}

struct Shield: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Shield apps, categories and domains for a user, in a named store.")
    @OptionGroup var change: StoreChange

    func run() throws { try change.send(remove: false) }
}

struct Unshield: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Take apps, categories and domains out of a store.")
    @OptionGroup var change: StoreChange

    func run() throws { try change.send(remove: true) }
}

/// What `shield` and `unshield` share: the store, the items, and how the reply is shown.
struct StoreChange: ParsableArguments {
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @OptionGroup var items: ShieldItems

    func send(remove: Bool) throws {
        let programs = OpenedPrograms()
        let request = try items.request(target.request, remove: remove, programs: programs)
        let reply = try perform(connection, request, files: programs.descriptors)
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}

struct Block: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Block apps for a user: they may not run at all (application.blockedApplications).",
        discussion: "A blocked app is killed the moment it starts; a shielded app is frozen until the shield is lifted."
    )
    @OptionGroup var change: BlockChange

    func run() throws { try change.send(remove: false) }
}

struct Unblock: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let blocked apps run again.")
    @OptionGroup var change: BlockChange

    func run() throws { try change.send(remove: true) }
}

/// What `block` and `unblock` share: the store, the apps, and how the reply is shown.
struct BlockChange: ParsableArguments {
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @Option(name: .customLong("app"), help: "A desktop-entry ID (org.gnome.Chess), snap:NAME, or a program's path.")
    var applications: [String] = []

    func validate() throws {
        if applications.isEmpty { throw ValidationError("give at least one --app") }
    }

    func send(remove: Bool) throws {
        let programs = OpenedPrograms()
        let (ids, files) = try programs.split(applications)
        let request = ShieldRequest(
            target: target.request, blockedApplications: ids, blockedApplicationFiles: files, remove: remove)
        let reply = try perform(connection, request, files: programs.descriptors)
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}

struct FilterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filter",
        abstract: "Set a store's web-content filter (webContent.blockedByFilter) and safe search.",
        discussion: """
            auto      block the shipped adult list and the --block domains, except the --allow domains
            specific  block the --block domains only
            all       block every domain except the --allow domains
            none      remove the filter
            A domain covers everything under it.
            --safe-search on forces the safe versions of Google, Bing, DuckDuckGo and YouTube (its \
            Restricted Mode, moderate; strict: strict), at the name: 'filter --safe-search on --user alice'.
            """)

    enum Policy: String, ExpressibleByArgument, CaseIterable { case auto, specific, all, none }

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: StoreOptions
    @Argument(help: "auto, specific, all or none (leave it out to set --safe-search alone).") var policy: Policy?
    @Option(
        name: .customLong("safe-search"),
        help: "on, strict or off: the safe versions of search engines and YouTube (strict: YouTube's strict mode).")
    var safeSearch: SafeSearch?

    enum SafeSearch: String, ExpressibleByArgument, CaseIterable { case on, strict, off }
    @Option(name: .customLong("block"), help: "A domain to block (auto, specific); repeat for more.")
    var blocked: [String] = []
    @Option(name: .customLong("allow"), help: "A domain never blocked (auto, all); repeat for more.")
    var allowed: [String] = []

    func validate() throws {
        guard policy != nil || safeSearch != nil else {
            throw ValidationError("give a filter (auto, specific, all, none), --safe-search on|strict|off, or both")
        }
        guard policy != nil || (blocked.isEmpty && allowed.isEmpty) else {
            throw ValidationError("--block and --allow go with a filter (auto, specific, all)")
        }
        switch policy {
        case .specific where blocked.isEmpty: throw ValidationError("'filter specific' needs at least one --block")
        case .specific where !allowed.isEmpty: throw ValidationError("'filter specific' takes no --allow")
        case .all where !blocked.isEmpty: throw ValidationError("'filter all' blocks everything; it takes no --block")
        case .some(.none) where !blocked.isEmpty || !allowed.isEmpty:
            throw ValidationError("'filter none' takes no --block or --allow")
        default: break
        }
    }

    func run() throws {
        func domains(_ texts: [String]) throws -> Set<DomainName> {
            var result: Set<DomainName> = []
            for text in texts {
                do {
                    result.insert(try DomainName(text))
                } catch {
                    throw ValidationError(error.message)
                }
            }
            return result
        }
        let filter: FilterPolicy? =
            switch policy {
            case .auto: .auto(try domains(blocked), except: try domains(allowed))
            case .specific: .specific(try domains(blocked))
            case .all: .all(except: try domains(allowed))
            case .some(.none): FilterPolicy.none
            case nil: nil
            }
        let reply = try perform(
            connection,
            FilterRequest(
                target: target.request, policy: filter,
                safeSearch: safeSearch.flatMap { FilterRequest.SafeSearchChoice(rawValue: $0.rawValue) }))
        if output.json { return try printJSON(reply) }
        print(StoreText(reply).render(), terminator: "")
    }
}
