import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

// Resolving names to tokens.
extension PolicyService {
    /// Turns what a guardian typed into tokens, checking each name, and remembers the names.
    struct Resolver {
        let service: PolicyService
        let account: UserAccount
        var names: [String: TokenName] = [:]
        private var loadedCatalogue: ApplicationCatalogue?

        init(service: PolicyService, account: UserAccount) {
            self.service = service
            self.account = account
        }

        mutating func application(_ text: String) throws -> (ApplicationToken, TokenName) {
            let identity: ApplicationIdentity
            let display: String
            if text.hasPrefix("/") {
                // The agent reads no path for a caller (it is root: it could tell whether a file
                // exists, or hash a secret); the caller opens the program and passes it.
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "a program is passed as an open file, not by its path (\(text.prefix(200))); screentime does that")
            } else if text.hasPrefix("snap:") {
                identity = try .snap(name: String(text.dropFirst(5)))
                display = String(text.dropFirst(5))
            } else {
                let catalogue = loadedCatalogue ?? service.catalogue(for: account)
                loadedCatalogue = catalogue
                guard let item = catalogue.entry(id: text) else {
                    let near = catalogue.listed.filter {
                        $0.entry.id.lowercased().contains(text.lowercased())
                            || $0.entry.name.lowercased().contains(text.lowercased())
                    }.prefix(5).map(\.entry.id)
                    let hint =
                        near.isEmpty
                        ? "; 'screentime apps --user \(account.name)' lists them"
                        : "; did you mean \(near.joined(separator: ", "))?"
                    throw ScreenTimeIPCError(
                        .unknownApplication, "\(account.name) has no application '\(text.prefix(100))' installed\(hint)"
                    )
                }
                identity = item.entry.identity
                display = item.entry.name
            }
            let token = service.minter.token(for: identity)
            let name = TokenName(kind: .app, identity: identity.canonical, displayName: display)
            names[token.base64] = name
            return (token, name)
        }

        /// A program the caller opened and passed: known by the SHA-256 of its contents. Only a
        /// regular file of at most `ExecutableHashes.defaultSizeLimit` bytes, not on FUSE.
        mutating func application(file: FileArgument, context: RequestContext) throws -> (ApplicationToken, TokenName) {
            let fd = try context.descriptor(file)
            let name = String(file.path.split(separator: "/").last ?? Substring(file.path)).prefix(200)
            let identity: ApplicationIdentity
            do {
                try UntrustedFile.check(descriptor: fd, limit: ExecutableHashes.defaultSizeLimit, name: String(name))
                // From the start, whatever the caller read of it already.
                identity = try .executable(
                    sha256: try Files.sha256(descriptor: fd, path: String(name), fromStart: true))
            } catch let error as SystemError {
                throw ScreenTimeIPCError(.unknownApplication, "cannot read the program \(name): \(error.message)")
            }
            let token = service.minter.token(for: identity)
            let tokenName = TokenName(kind: .app, identity: identity.canonical, displayName: String(name))
            names[token.base64] = tokenName
            return (token, tokenName)
        }

        mutating func webDomain(_ text: String) throws -> (WebDomainToken, TokenName) {
            let domain = service.suffixes.webDomain(for: try DomainName(text))
            let token = service.minter.token(for: domain)
            let name = TokenName(kind: .domain, identity: domain.ascii, displayName: domain.unicode)
            names[token.base64] = name
            return (token, name)
        }

        mutating func applicationCategory(_ text: String) throws -> ActivityCategoryToken {
            let category = try CategoryName(text)
            let catalogue = loadedCatalogue ?? service.catalogue(for: account)
            loadedCatalogue = catalogue
            let known = Set(PolicyService.mainCategories.map { $0.lowercased() }).union(
                catalogue.entries.values.flatMap { $0.entry.categories.map { $0.lowercased() } })
            guard known.contains(category.name) else {
                throw ScreenTimeIPCError(
                    .unknownCategory,
                    "'\(text.prefix(64))' is not an app category; 'screentime categories' lists them (Game, Education, …)"
                )
            }
            let token = service.minter.token(for: category)
            names[token.base64] = TokenName(kind: .category, identity: category.name, displayName: text)
            return token
        }

        /// A service of the catalogue, by its ID or its name.
        mutating func service(_ text: String) throws -> ActivityCategoryToken { try serviceDefinition(text).0 }

        /// A service of the catalogue and its definition (its apps and domains), by its ID or name.
        mutating func serviceDefinition(_ text: String) throws -> (ActivityCategoryToken, ServiceDefinition) {
            let catalogue = ServiceFiles.load(service.configuration.servicesDirectory)
            guard let found = catalogue.service(named: text) else {
                let near = catalogue.services.values.filter {
                    $0.id.contains(text.lowercased()) || $0.name.lowercased().contains(text.lowercased())
                }.map(\.id).sorted().prefix(5)
                let hint =
                    near.isEmpty ? "'screentime services' lists them" : "did you mean \(near.joined(separator: ", "))?"
                throw ScreenTimeIPCError(.unknownCategory, "there is no service '\(text.prefix(64))'; \(hint)")
            }
            let token = service.minter.token(for: found.categoryName)
            names[token.base64] = TokenName(kind: .service, identity: found.categoryName.name, displayName: found.name)
            return (token, found)
        }

        mutating func webCategory(_ text: String) throws -> ActivityCategoryToken {
            let category = try CategoryName(text)
            guard service.webCategoryNames().contains(category.name) else {
                throw ScreenTimeIPCError(
                    .unknownCategory,
                    "there is no web category '\(text.prefix(64))' (lists are \(service.configuration.categoriesDirectory)/NAME.list)"
                )
            }
            let token = service.minter.token(for: category)
            names[token.base64] = TokenName(kind: .category, identity: category.name, displayName: category.name)
            return token
        }
    }
}
