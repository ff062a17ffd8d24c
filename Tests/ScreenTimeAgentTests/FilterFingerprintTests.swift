import Foundation
import ScreenTimeCore
import Testing

@testable import ScreenTimeAgent

/// What voids the DNS fast path's table and makes passed connections judged again: everything a
/// user's filter is made from, and nothing else (a publish that changes none of it leaves both).
@Suite struct FilterFingerprintTests {
    let minter: TokenMinter
    let store = StoreKey(client: .commandLine, name: .default)

    init() throws { minter = try TokenMinter(secret: [UInt8](repeating: 3, count: 32)) }

    func user(_ uid: UInt32, _ settings: StoreSettings = StoreSettings()) -> PolicySnapshot.User {
        PolicySnapshot.User(
            uid: uid, name: "u\(uid)", home: "/home/u\(uid)", member: .child,
            policy: EffectivePolicy(stores: [store: settings]), uids: UIDRanges([uid...uid]), groups: [uid],
            subordinateGIDs: UIDRanges())
    }

    func snapshot(_ users: [PolicySnapshot.User]) -> PolicySnapshot {
        PolicySnapshot(
            generation: 1, users: Dictionary(uniqueKeysWithValues: users.map { ($0.uid, $0) }), names: [:], problems: []
        )
    }

    func lists(tubeDomains: String) -> DomainShield.WebLists {
        var lists = DomainShield.WebLists()
        lists.services = ServiceCatalogue(files: [
            (name: "tube.service", text: "name = Tube\ncategory = video\ndomains = \(tubeDomains)\n")
        ])
        return lists
    }

    func fingerprint(_ snapshot: PolicySnapshot, _ lists: DomainShield.WebLists) -> Int {
        DomainShield.filterFingerprint(snapshot, lists: lists, web: DomainShield.webFingerprint(snapshot, lists: lists))
    }

    @Test func safeSearchAndTheServicesDomainsChangeIt() throws {
        let base = snapshot([user(1001), user(1002)])
        let tube = lists(tubeDomains: "tube.test")
        let before = fingerprint(base, tube)
        #expect(fingerprint(base, tube) == before)
        // Safe search for one child: her filter answers search engines differently.
        let safe = snapshot([
            user(1001, StoreSettings(webContent: WebContentSettings(safeSearch: .moderate))), user(1002),
        ])
        #expect(fingerprint(safe, tube) != before)
        // A service file that names one more domain.
        #expect(tube.services.services.count == 1)
        #expect(fingerprint(base, lists(tubeDomains: "tube.test tube-cdn.test")) != before)
        // A web shield, and a name for its token.
        let shielded = snapshot([
            user(
                1001, StoreSettings(shield: ShieldSettings(webDomains: [minter.token(for: try DomainName("a.test"))]))),
            user(1002),
        ])
        #expect(fingerprint(shielded, tube) != before)
        var named = base
        named.names["t"] = TokenName(kind: .domain, identity: "a.test", displayName: "a.test")
        #expect(fingerprint(named, tube) != before)
    }

    @Test func whatNoFilterIsMadeFromLeavesIt() throws {
        let base = snapshot([user(1001), user(1002)])
        let tube = lists(tubeDomains: "tube.test")
        let before = fingerprint(base, tube)
        // An app shielded, a sibling locked until tonight with a grant ending: no filter changes.
        var sibling = user(
            1002, StoreSettings(shield: ShieldSettings(applications: [minter.token(for: .desktopEntry("game"))])))
        sibling.loginLock = LoginLock(reason: LoginLock.guardian, until: Date(timeIntervalSinceNow: 3600))
        sibling.grantsEnd = Date(timeIntervalSinceNow: 60)
        var published = snapshot([user(1001), sibling])
        published.generation = 2
        #expect(fingerprint(published, tube) == before)
    }
}
