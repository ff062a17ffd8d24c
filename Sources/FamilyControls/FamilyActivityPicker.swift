import FoundationEssentials
import Glibc
import ScreenTimeClient
public import ScreenTimeCore
public import ScreenTimeIPC

/// Chooses applications, categories and web domains (Apple's `FamilyActivityPicker`): in a
/// terminal (type to filter, Space or Enter to select, a domain with a dot and Enter to add it,
/// Ctrl-D to finish, Esc to cancel), or from names given by the program. It returns a
/// `FamilyActivitySelection` of tokens, the same JSON as `screentime pick`.
///
/// The lists come from the agent: the user's installed applications and the categories. Guardians
/// pick for a child (`user`); an individual picks for themself.
public struct FamilyActivityPicker: Sendable {
    public let user: String?
    public let includeEntireCategory: Bool
    let client: ScreenTimeClient

    public init(user: String? = nil, socket: String? = nil, includeEntireCategory: Bool = false) {
        self.user = user
        self.includeEntireCategory = includeEntireCategory
        client = ScreenTimeClient(socket: socket)
    }

    /// The interactive picker: on this terminal when there is one (it draws on standard error),
    /// else as a window on the desktop (`DISPLAY` or `WAYLAND_DISPLAY`); nil when cancelled.
    public func present() throws(ScreenTimeIPCError) -> FamilyActivitySelection? {
        if isatty(0) == 1 { return try presentInTerminal() }
        return try presentDialog()
    }

    /// The picker on this terminal; nil when cancelled.
    public func presentInTerminal() throws(ScreenTimeIPCError) -> FamilyActivitySelection? {
        let categories = try client.send(CategoriesRequest(user: user)).categories
        let applications = try client.send(ApplicationsRequest(user: user)).applications
        guard let picked = TerminalPicker(applications: applications, categories: categories).run() else {
            return nil
        }
        return try selection(
            applications: picked.apps, categories: picked.categories, domains: picked.domains, known: categories)
    }

    /// The picker as a window (`screentime-shield --pick`, found on `PATH` or at
    /// `$SCREENTIME_SHIELD`); nil when cancelled; `unavailable` when there is no desktop or no
    /// `screentime-shield`.
    public func presentDialog() throws(ScreenTimeIPCError) -> FamilyActivitySelection? {
        let categories = try client.send(CategoriesRequest(user: user)).categories
        let applications = try client.send(ApplicationsRequest(user: user)).applications
        let items = PickerItems(
            applications: applications.map { .init(id: $0.id, name: $0.name) },
            categories: categories.map { .init(name: $0.name, kind: $0.kind) })
        let input = (try? JSONEncoder().encode(items)) ?? Data()
        let picked: PickerAnswer
        switch Dialog.run(["--pick"], input: input) {
        case .cancelled: return nil
        case .unavailable(let why): throw ScreenTimeIPCError(.unavailable, "cannot show the picker: \(why)")
        case .answered(let output):
            guard let answer = try? JSONDecoder().decode(PickerAnswer.self, from: output) else {
                throw ScreenTimeIPCError(.unavailable, "the picker answered something that is not a PickerAnswer")
            }
            picked = answer
        }
        return try selection(
            applications: picked.applications, categories: picked.categories, domains: picked.domains,
            known: categories)
    }

    /// The selection of these desktop-entry IDs, category names and domains; throws naming the
    /// first the agent does not know.
    public func selection(
        applications: [String] = [], categories: [String] = [], domains: [String] = []
    ) throws(ScreenTimeIPCError) -> FamilyActivitySelection {
        let known = categories.isEmpty ? [] : try client.send(CategoriesRequest(user: user)).categories
        return try selection(applications: applications, categories: categories, domains: domains, known: known)
    }

    private func selection(
        applications: [String], categories: [String], domains: [String], known: [CategoryReport]
    ) throws(ScreenTimeIPCError) -> FamilyActivitySelection {
        var selection = FamilyActivitySelection(includeEntireCategory: includeEntireCategory)
        func mint(_ kind: TokenKindName, _ identity: String) throws(ScreenTimeIPCError) -> String {
            try client.send(TokenRequest(kind: kind, identity: identity, user: user)).token
        }
        do {
            for app in applications {
                selection.applicationTokens.insert(try ApplicationToken(base64: try mint(.app, app)))
            }
            for category in categories {
                guard let report = known.first(where: { $0.name.lowercased() == category.lowercased() }) else {
                    throw ScreenTimeIPCError(
                        .unknownCategory,
                        "'\(category.prefix(64))' is not a category; 'screentime categories' lists them")
                }
                selection.categoryTokens.insert(try ActivityCategoryToken(base64: report.token))
            }
            for domain in domains {
                selection.webDomainTokens.insert(try WebDomainToken(base64: try mint(.domain, domain)))
            }
        } catch let error as ScreenTimeIPCError {
            throw error
        } catch {
            throw ScreenTimeIPCError(.malformedReply, "the agent gave a token that is not one: \(error)")
        }
        return selection
    }
}
