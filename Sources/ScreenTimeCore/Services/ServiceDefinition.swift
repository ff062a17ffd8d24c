/// A service as families name it — YouTube, TikTok, Discord, Roblox — with its web domains and its
/// desktop apps: one file of the catalogue, `etc/screentime/services/ID.service`.
///
/// A service is a category of its own (`service.ID`): shielding it shields its domains at the name
/// and the connection, and its apps by their desktop-entry or Flatpak ID, through the same paths
/// as any category, and its token is as opaque as any other. A desktop entry cannot join a
/// service by its `Categories=` (a child's own entry could otherwise meet a guardian's exception);
/// only the catalogue says which apps a service has.
///
/// The file, a `key = value` per line (`#` starts a comment; a key given again adds to it):
///
///     # YouTube: Google's video site.
///     name = YouTube
///     category = video
///     domains = youtube.com youtu.be ytimg.com googlevideo.com
///     apps = io.freetubeapp.FreeTube
public struct ServiceDefinition: Sendable, Hashable {
    /// The prefix of a service's category name: `service.youtube`.
    public static let categoryPrefix = "service."
    /// The keys a file may have.
    public static let keys = ["name", "category", "domains", "apps"]

    /// The file's name without `.service`, lower-case: what a guardian types (`--service youtube`).
    public let id: String
    /// What people call it.
    public let name: String
    /// A family's word for it (video, social, chat, games, stores, music…), shown in the list.
    public let category: String?
    /// Its web domains: each covers every name under it.
    public let domains: [DomainName]
    /// Its desktop apps, by desktop-entry ID, Flatpak ID or `snap:NAME`.
    public let applications: [ApplicationIdentity]

    /// The category the service is, whose token the stores hold.
    public let categoryName: CategoryName

    /// Reads one service file; `id` is its name without `.service`. Throws saying which line was
    /// wrong and why.
    public init(id: String, parsing text: String) throws(ScreenTimeCoreError) {
        let id = id.lowercased()
        guard (1...40).contains(id.utf8.count),
            id.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }),
            !id.hasPrefix("-")
        else {
            throw ScreenTimeCoreError(
                .invalidService,
                "'\(id.prefix(60)).service' is not a service file name (1 to 40 lower-case letters, digits and -)")
        }
        func bad(_ line: Int, _ why: String) -> ScreenTimeCoreError {
            ScreenTimeCoreError(.invalidService, "\(id).service, line \(line): \(why)")
        }
        var name: String?
        var category: String?
        var domains: [DomainName] = []
        var applications: [ApplicationIdentity] = []
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let sides = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard sides.count == 2 else { throw bad(lineNumber, "'\(line.prefix(60))' is not 'key = value'") }
            let key = sides[0].trimmingWhitespace().lowercased()
            let value = sides[1].trimmingWhitespace()
            guard !value.isEmpty else { throw bad(lineNumber, "'\(key.prefix(30))' has no value") }
            switch key {
            case "name":
                guard name == nil else { throw bad(lineNumber, "a second name") }
                guard value.count <= 80, value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
                else { throw bad(lineNumber, "a name is at most 80 printable characters") }
                name = value
            case "category":
                guard category == nil else { throw bad(lineNumber, "a second category") }
                guard let word = try? CategoryName(value) else {
                    throw bad(lineNumber, "'\(value.prefix(60))' is not a category (letters, digits and - _ .)")
                }
                category = word.name
            case "domains":
                for item in value.split(whereSeparator: \.isWhitespace) {
                    do {
                        domains.append(try DomainName(String(item)))
                    } catch {
                        throw bad(lineNumber, error.message)
                    }
                }
            case "apps":
                for item in value.split(whereSeparator: \.isWhitespace) {
                    do {
                        applications.append(
                            item.hasPrefix("snap:")
                                ? try .snap(name: String(item.dropFirst(5))) : try .desktopEntry(id: String(item)))
                    } catch {
                        throw bad(lineNumber, error.message)
                    }
                }
            default:
                throw bad(
                    lineNumber, "unknown key '\(key.prefix(30))' (the keys are \(Self.keys.joined(separator: ", ")))")
            }
        }
        guard let name else { throw ScreenTimeCoreError(.invalidService, "\(id).service has no 'name = …' line") }
        guard !domains.isEmpty || !applications.isEmpty else {
            throw ScreenTimeCoreError(.invalidService, "\(id).service names no domains and no apps")
        }
        guard domains.count <= 1000, applications.count <= 100 else {
            throw ScreenTimeCoreError(.invalidService, "\(id).service has more than 1,000 domains or 100 apps")
        }
        self.id = id
        // An ID checked above (40 letters, digits and -) with the prefix is a category name.
        self.categoryName = try CategoryName(Self.categoryPrefix + id)
        self.name = name
        self.category = category
        var seenDomains: Set<String> = []
        self.domains = domains.filter { seenDomains.insert($0.ascii).inserted }
        var seenApps: Set<ApplicationIdentity> = []
        self.applications = applications.filter { seenApps.insert($0).inserted }
    }
}

/// The services the catalogue's files define, by ID, and what was wrong with the files that were
/// not read.
public struct ServiceCatalogue: Sendable, Hashable {
    public private(set) var services: [String: ServiceDefinition] = [:]
    public var problems: [String] = []

    public init() {}

    /// The catalogue from its files' names (with `.service`) and texts; a file that does not parse
    /// is left out and its problem kept.
    public init(files: [(name: String, text: String)]) {
        for (file, text) in files.sorted(by: { $0.name < $1.name }) {
            guard file.hasSuffix(".service") else { continue }
            do {
                let service = try ServiceDefinition(id: String(file.dropLast(".service".count)), parsing: text)
                services[service.id] = service
            } catch {
                problems.append(error.message)
            }
        }
    }

    /// The service a guardian named, by its ID or its name, without case.
    public func service(named text: String) -> ServiceDefinition? {
        let wanted = text.trimmingWhitespace().lowercased()
        return services[wanted] ?? services.values.first { $0.name.lowercased() == wanted }
    }

    /// The service categories of each app a service names.
    public var categoriesByApplication: [ApplicationIdentity: Set<CategoryName>] {
        var result: [ApplicationIdentity: Set<CategoryName>] = [:]
        for service in services.values {
            for application in service.applications { result[application, default: []].insert(service.categoryName) }
        }
        return result
    }
}
