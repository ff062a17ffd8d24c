import Foundation
import PropertyBased
import ScreenTimeCore
import Testing

/// The DNS filter judges names as the effective policy does, without minting a token per query.
@Suite struct DomainFilterTests {
    static let suffixes = try! PublicSuffixList(parsing: "test\nco.test\n")
    static let domains = ["alpha.test", "beta.test", "gamma.co.test", "co.test"].map(domainName)
    static let categories = (0..<3).map { category("webcat\($0)") }
    /// Each category's list: category 0 holds alpha, 1 holds beta and gamma, 2 holds a subdomain.
    static let lists: [ActivityCategoryToken: DomainList] = [
        categories[0]: DomainList(parsing: "alpha.test\n"),
        categories[1]: DomainList(parsing: "beta.test\ngamma.co.test\n"),
        categories[2]: DomainList(parsing: "deep.beta.test\n"),
    ]
    static let adult = DomainList(parsing: "gamma.co.test\n")
    static let names: [WebDomainToken: DomainName] = Dictionary(
        uniqueKeysWithValues: domains.map { (testMinter.token(for: $0), $0) })
    static let queries = [
        "alpha.test", "www.alpha.test", "beta.test", "deep.beta.test", "x.deep.beta.test", "gamma.co.test",
        "www.gamma.co.test", "co.test", "other.co.test", "test", "unrelated.test",
    ].map(domainName)

    static func settings(_ atoms: [Int]) -> StoreSettings {
        var settings = StoreSettings()
        for atom in atoms {
            let d = domains[atom % domains.count]
            let other = domains[(atom / 8) % domains.count]
            let c = categories[atom % categories.count]
            switch atom % 6 {
            case 0: settings.shield.webDomains = (settings.shield.webDomains ?? []).union([testMinter.token(for: d)])
            case 1: settings.shield.webDomainCategories = .specific([c], except: [testMinter.token(for: other)])
            case 2: settings.shield.webDomainCategories = .all(except: [testMinter.token(for: d)])
            case 3: settings.webContent.blockedByFilter = .auto([d], except: [other])
            case 4: settings.webContent.blockedByFilter = .specific([d])
            default: settings.webContent.blockedByFilter = .all(except: [d])
            }
        }
        return settings
    }

    /// What the effective policy says of a name: every store whose shield or filter covers it.
    static func expected(_ policy: EffectivePolicy, _ name: DomainName) -> Set<StoreKey> {
        let candidates = suffixes.shieldCandidates(for: name).map { testMinter.token(for: $0) }
        let categories = Set(lists.filter { $0.value.contains(name) }.map(\.key))
        return Set(policy.webDomainShield(for: candidates, categories: categories))
            .union(policy.webContentFilter(for: name, isAdult: adult.contains(name), candidates: candidates))
    }

    @Test func agreesWithTheEffectivePolicy() async {
        let gen = Gen.int(in: 0...47).array(of: 0...4).array(of: 0...4)
        await propertyCheck(count: 400, input: gen) { stores in
            let collection = try StoreCollection(
                stores.enumerated().map { (store("s\($0.offset)"), Self.settings($0.element)) })
            // Most cases with one domain granted (a child asked, a guardian said yes): past the
            // shields and the filter alike.
            let pick = stores.joined().reduce(0, +) % (Self.domains.count + 1)
            let grants =
                pick < Self.domains.count
                ? [TimeGrant(.webDomain(testMinter.token(for: Self.domains[pick])), until: .distantFuture)] : []
            let policy = collection.policyInForce(grants: grants, at: Date())
            let filter = DomainFilter(
                policy: policy, names: Self.names, categoryLists: Self.lists, adultList: Self.adult)
            for name in Self.queries {
                let expected = Self.expected(policy, name)
                let verdict = filter.verdict(for: DNSName(name))
                #expect((verdict != nil) == !expected.isEmpty, "\(name): \(String(describing: verdict)) vs \(expected)")
                if let verdict {
                    #expect(Set(verdict.stores).isSubset(of: expected), "\(name)")
                    #expect(!verdict.stores.isEmpty)
                }
            }
        }
    }

    func filter(_ settings: StoreSettings, bypass: DomainList = DomainList([DomainName]())) throws -> DomainFilter {
        let collection = try StoreCollection([(store("s"), settings)])
        return DomainFilter(
            policy: collection.effectivePolicy, names: Self.names, categoryLists: Self.lists, adultList: Self.adult,
            bypassList: bypass)
    }

    func wire(_ labels: [String]) throws -> DNSName { try DNSName(labels: labels.map { Array($0.utf8) }) }

    @Test func namesOffTheWireAreCoveredWhateverTheirCaseAndBytes() throws {
        var settings = StoreSettings()
        settings.shield.webDomains = [domain("alpha.test")]
        let filter = try filter(settings)
        #expect(filter.verdict(for: try wire(["WWW", "ALPHA", "Test"]))?.reason == .domain)
        #expect(filter.verdict(for: try wire(["\u{0}odd", "alpha", "test"]))?.stores == [store("s")])
        #expect(
            filter.verdict(for: try DNSName(labels: [[0xFF, 0x2E], Array("alpha".utf8), Array("test".utf8)])) != nil)
        // Near names are not covered: a label is compared whole.
        #expect(filter.verdict(for: try wire(["xalpha", "test"])) == nil)
        #expect(filter.verdict(for: try wire(["alpha", "test", "evil"])) == nil)
        #expect(filter.verdict(for: try wire([])) == nil)
    }

    @Test func theCanaryAndBypassNamesAreShieldedForEveryFilteredUser() throws {
        let filter = try filter(StoreSettings(), bypass: DomainList(parsing: "dns.example.net\n"))
        #expect(filter.shieldsNothing)
        #expect(filter.verdict(for: try wire(["use-application-dns", "NET"]))?.reason == .bypass)
        #expect(filter.verdict(for: try wire(["www", "use-application-dns", "net"])) == nil)
        #expect(filter.verdict(for: try wire(["dns", "example", "net"]))?.reason == .bypass)
        #expect(filter.verdict(for: try wire(["example", "net"])) == nil)
    }

    @Test func aCategoryVerdictNamesTheCategoryAndMissingPiecesAreReported() throws {
        var settings = StoreSettings()
        let missing = category("nolist")
        settings.shield.webDomainCategories = .specific([Self.categories[1], missing])
        settings.shield.webDomains = [domain("unknown.test")]
        let filter = try filter(settings)
        let verdict = filter.verdict(for: try wire(["www", "gamma", "co", "test"]))
        #expect(verdict?.reason == .category)
        #expect(verdict?.category == Self.categories[1])
        #expect(filter.categoriesWithoutList == [missing])
        #expect(filter.unnamedDomains == [domain("unknown.test")])
    }

    @Test func aMessageIsShieldedByAnyOfItsQuestions() throws {
        var settings = StoreSettings()
        settings.webContent.blockedByFilter = .specific([domainName("beta.test")])
        let filter = try filter(settings)
        let message = DNSMessage(
            id: 1, flags: 0x0100,
            questions: [
                .init(name: try wire(["alpha", "test"]), type: 1), .init(name: try wire(["beta", "test"]), type: 28),
            ])
        #expect(filter.verdict(for: message)?.question.type == 28)
        #expect(filter.verdict(for: message)?.verdict.reason == .filter)
    }
}
