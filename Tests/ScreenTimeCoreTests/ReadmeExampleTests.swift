import ScreenTimeCore
import Testing

/// The example in docs/architecture.md, kept true.
@Suite struct ReadmeExampleTests {
    @Test func readmeExample() throws {
        let secret = TokenMinter.generateSecret()

        let minter = try TokenMinter(secret: secret)  // the agent's per-installation secret
        let chess = minter.token(for: .desktopEntry("org.gnome.Chess"))
        let mines = minter.token(for: .desktopEntry("org.gnome.Mines"))
        let games = minter.token(for: try CategoryName("Game"))

        var stores = StoreCollection()
        try stores.update(StoreKey(client: .commandLine, name: .default)) {
            $0.shield.applications = [chess]
            $0.shield.applicationCategories = .specific([games])
        }
        let policy = stores.effectivePolicy
        #expect(policy.applicationShield(for: mines, categories: [games]).map(\.description) == ["screentime/default"])
        #expect(policy.applicationShield(for: mines, categories: []).isEmpty)
    }
}
