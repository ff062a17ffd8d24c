import Foundation
import PropertyBased
import ScreenTimeCore
import Testing

/// The merge's laws, checked on random stores over a small world of apps, categories and domains
/// (small so that random stores overlap and interact).
@Suite struct EffectivePolicyPropertyTests {
    static let apps = (0..<6).map { app("prop.app\($0)") }
    static let categories = (0..<3).map { category("propcat\($0)") }
    static let domains = (0..<4).map { domainName("site\($0).example") }

    /// One store, built from a list of small numbers: each picks one setting to add.
    static func settings(_ atoms: [Int]) -> StoreSettings {
        var settings = StoreSettings()
        for atom in atoms {
            let a = apps[atom % apps.count]
            let c = categories[atom % categories.count]
            let d = domains[atom % domains.count]
            let token = testMinter.token(for: d)
            switch atom % 8 {
            case 0: settings.shield.applications = (settings.shield.applications ?? []).union([a])
            case 1: settings.shield.applicationCategories = .specific([c], except: [apps[(atom / 8) % apps.count]])
            case 2: settings.shield.applicationCategories = .all(except: [a])
            case 3: settings.shield.webDomains = (settings.shield.webDomains ?? []).union([token])
            case 4: settings.shield.webDomainCategories = .specific([c], except: [token])
            case 5: settings.webContent.blockedByFilter = .auto([d], except: [domains[(atom / 8) % domains.count]])
            case 6: settings.webContent.blockedByFilter = .all(except: [d])
            default:
                settings.application.blockedApplications = (settings.application.blockedApplications ?? []).union([a])
            }
        }
        return settings
    }

    /// Every decision the policy makes over the small world, with the stores behind it.
    static func decisions(_ policy: EffectivePolicy) -> [String: [StoreKey]] {
        var result: [String: [StoreKey]] = [:]
        let categorySets: [Set<ActivityCategoryToken>] = [[], [categories[0]], [categories[1], categories[2]]]
        for (i, a) in apps.enumerated() {
            for (j, cats) in categorySets.enumerated() {
                result["app\(i)/\(j)"] = policy.applicationShield(for: a, categories: cats)
                result["domain\(i % domains.count)/\(j)"] = policy.webDomainShield(
                    for: [testMinter.token(for: domains[i % domains.count])], categories: cats)
            }
            result["block\(i)"] = policy.applicationBlock(for: a)
        }
        for (i, d) in domains.enumerated() {
            result["filter\(i)"] = policy.webContentFilter(for: d, isAdult: i % 2 == 0)
        }
        return result
    }

    static let storeGen = Gen.int(in: 0...63).array(of: 0...4)
    static let storesGen = storeGen.array(of: 0...5)

    static func collection(_ stores: [[Int]]) -> StoreCollection {
        try! StoreCollection(stores.enumerated().map { (store("s\($0.offset)"), settings($0.element)) })
    }

    @Test func addingAStoreNeverLiftsAShield() async {
        await propertyCheck(count: 300, input: Self.storesGen, Self.storeGen) { stores, extra in
            let before = Self.decisions(Self.collection(stores).effectivePolicy)
            var grown = Self.collection(stores)
            try grown.set(Self.settings(extra), for: store("extra"))
            let after = Self.decisions(grown.effectivePolicy)
            for (query, keys) in before {
                #expect(Set(keys).isSubset(of: after[query] ?? []), "\(query) lost \(keys)")
            }
        }
    }

    @Test func theOrderOfStoresNeverMatters() async {
        await propertyCheck(count: 300, input: Self.storesGen) { stores in
            let entries = stores.enumerated().map { (store("s\($0.offset)"), Self.settings($0.element)) }
            let forward = try StoreCollection(entries)
            let backward = try StoreCollection(entries.reversed())
            let shuffled = try StoreCollection(entries.shuffled())
            #expect(Self.decisions(forward.effectivePolicy) == Self.decisions(backward.effectivePolicy))
            #expect(Self.decisions(forward.effectivePolicy) == Self.decisions(shuffled.effectivePolicy))
        }
    }

    @Test func clearingAStoreEqualsRemovingIt() async {
        await propertyCheck(count: 300, input: Self.storesGen, Self.storeGen) { stores, extra in
            let without = Self.collection(stores)
            var with = without
            try with.set(Self.settings(extra), for: store("extra"))
            with.clear(store("extra"))
            #expect(with == without)
            #expect(Self.decisions(with.effectivePolicy) == Self.decisions(without.effectivePolicy))

            var clearedSettings = Self.settings(extra)
            clearedSettings.clearAllSettings()
            var viaClearAll = without
            try viaClearAll.set(clearedSettings, for: store("extra"))
            #expect(viaClearAll == without)
        }
    }
}
