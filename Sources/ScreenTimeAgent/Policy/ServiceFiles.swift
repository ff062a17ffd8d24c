import FoundationEssentials
import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

/// The service catalogue as its directory holds it now: the package's files and a guardian's own
/// (`ID.service`, root's). Read whole each time the policy is made (a few dozen small files), so
/// an edit takes effect with the next change of the rules (the domains also with `kill -HUP`). A
/// file that does not parse, or cannot be read, is left out and said in `problems`.
enum ServiceFiles {
    static let maximumFiles = 2000
    static let maximumFileSize = 1 << 20

    /// The last catalogue read of each directory, with its files' signatures (device, inode,
    /// size, modification time): read again only when one of them changed. The policy, each
    /// report and each name resolved ask for it; a stat of each file is what they cost.
    private static let cache = Mutex<[String: (signatures: [String], catalogue: ServiceCatalogue)]>([:])

    static func load(_ directory: String) -> ServiceCatalogue {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".service") }.sorted()
        let signatures = names.prefix(maximumFiles).map { $0 + " " + Files.signature(directory + "/" + $0) }
        if let cached = cache.withLock({ $0[directory] }), cached.signatures == signatures, names.count <= maximumFiles
        {
            return cached.catalogue
        }
        let catalogue = read(directory, names)
        cache.withLock { $0[directory] = (signatures, catalogue) }
        return catalogue
    }

    private static func read(_ directory: String, _ names: [String]) -> ServiceCatalogue {
        var files: [(name: String, text: String)] = []
        var unreadable: [String] = []
        for name in names.prefix(maximumFiles) {
            let path = directory + "/" + name
            guard let bytes = try? Files.read(path, limit: maximumFileSize) else {
                unreadable.append("cannot read \(path) (or it is over 1 MB)")
                continue
            }
            files.append((name, String(decoding: bytes, as: UTF8.self)))
        }
        var catalogue = ServiceCatalogue(files: files)
        catalogue.problems += unreadable
        if names.count > maximumFiles {
            catalogue.problems.append(
                "\(directory) has \(names.count) service files; the first \(maximumFiles) are read")
        }
        return catalogue
    }
}

extension PolicyService {
    /// The catalogue, for anyone: it is the package's and the guardians' files, readable by all.
    /// Tokens and the files' problems are for guardians.
    func services(caller: Caller) -> ServicesReply {
        let catalogue = ServiceFiles.load(configuration.servicesDirectory)
        let reports = catalogue.services.values.sorted { $0.id < $1.id }.map { service in
            ServiceReport(
                id: service.id, name: service.name, category: service.category,
                domains: service.domains.map(\.unicode), applications: service.applications.map(\.catalogueForm),
                token: caller.isGuardian ? minter.token(for: service.categoryName).base64 : nil)
        }
        return ServicesReply(services: reports, problems: caller.isGuardian ? catalogue.problems : [])
    }
}

extension ApplicationIdentity {
    /// As a service file writes it: a desktop-entry or Flatpak ID, or `snap:NAME`.
    fileprivate var catalogueForm: String {
        switch self {
        case .desktopEntry(let id): id
        case .snap(let name): "snap:" + name
        case .executable(let hash): hash
        }
    }
}
