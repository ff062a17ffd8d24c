import Foundation
import ScreenTimeCore
import Testing

@Suite struct EffectivePolicyTests {
    private let games: Set<ActivityCategoryToken> = [category("game")]

    private func policy(_ stores: [StoreKey: (inout StoreSettings) -> Void]) -> EffectivePolicy {
        var collection = StoreCollection()
        for (key, change) in stores { try! collection.update(key, change) }
        return collection.effectivePolicy
    }

    @Test func emptyPolicyShieldsNothing() {
        let policy = EffectivePolicy(stores: [:])
        #expect(policy.isEmpty)
        #expect(policy.applicationShield(for: app("a"), categories: games).isEmpty)
        #expect(policy.webDomainShield(for: [domain("example.com")], categories: []).isEmpty)
        #expect(policy.webContentFilter(for: domainName("example.com"), isAdult: true).isEmpty)
    }

    @Test func shieldInAnyStoreApplies() {
        let policy = policy([
            store("homework"): { $0.shield.applications = [app("chess")] },
            store("bedtime"): { $0.shield.applications = [app("chess"), app("mines")] },
        ])
        #expect(policy.applicationShield(for: app("chess"), categories: []) == [store("bedtime"), store("homework")])
        #expect(policy.applicationShield(for: app("mines"), categories: []) == [store("bedtime")])
        #expect(policy.applicationShield(for: app("editor"), categories: []).isEmpty)
    }

    @Test func categoryShieldCoversTheAppsOfThatCategory() {
        let policy = policy([store("default"): { $0.shield.applicationCategories = .specific([category("game")]) }])
        #expect(policy.applicationShield(for: app("chess"), categories: games) == [store("default")])
        #expect(
            policy.applicationShield(for: app("chess"), categories: [category("game"), category("education")]) == [
                store("default")
            ])
        #expect(policy.applicationShield(for: app("editor"), categories: [category("development")]).isEmpty)
        #expect(policy.applicationShield(for: app("uncategorised"), categories: []).isEmpty)
    }

    @Test func allExceptShieldsEverythingButTheExceptions() {
        let policy = policy([store("default"): { $0.shield.applicationCategories = .all(except: [app("calculator")]) }])
        #expect(policy.applicationShield(for: app("chess"), categories: games) == [store("default")])
        #expect(policy.applicationShield(for: app("uncategorised"), categories: []) == [store("default")])
        #expect(policy.applicationShield(for: app("calculator"), categories: []).isEmpty)
    }

    @Test func grantedTimeLiftsEveryStoresShieldOnThatTokenButNotABlock() throws {
        var collection = StoreCollection()
        try collection.update(store("limits")) { $0.shield.applications = [app("chess")] }
        try collection.update(store("downtime")) { $0.shield.applicationCategories = .all(except: [app("calculator")]) }
        try collection.update(store("school")) {
            $0.shield.applicationCategories = .specific([category("game")])
            $0.shield.webDomains = [domain("youtube.com")]
            $0.shield.webDomainCategories = .specific([category("video")])
            $0.application.blockedApplications = [app("mines")]
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let later = now.addingTimeInterval(600)
        let granted = collection.policyInForce(
            grants: [
                TimeGrant(.application(app("chess")), until: later),
                TimeGrant(.application(app("mines")), until: later),
                TimeGrant(.webDomain(domain("youtube.com")), until: later),
            ], at: now)
        #expect(granted.applicationShield(for: app("chess"), categories: games).isEmpty)
        #expect(granted.applicationShield(for: app("editor"), categories: []) == [store("downtime")])
        #expect(granted.applicationBlock(for: app("mines")) == [store("school")], "a block is not lifted")
        #expect(
            granted.webDomainShield(for: [domain("www.youtube.com"), domain("youtube.com")], categories: []).isEmpty)
        #expect(
            granted.webDomainShield(for: [domain("youtube.com")], categories: [category("video")]).isEmpty,
            "nor by its category")
        #expect(
            granted.webDomainShield(for: [domain("vimeo.com")], categories: [category("video")]) == [store("school")])
        // Without the grant, or once it ended, all of it applies.
        for ungranted in [collection.effectivePolicy, collection.policyInForce(grants: [], at: now)] {
            #expect(!ungranted.applicationShield(for: app("chess"), categories: games).isEmpty)
            #expect(!ungranted.webDomainShield(for: [domain("youtube.com")], categories: []).isEmpty)
        }
        let ended = collection.policyInForce(grants: [TimeGrant(.application(app("chess")), until: now)], at: now)
        #expect(!ended.applicationShield(for: app("chess"), categories: games).isEmpty)
    }

    @Test func moreScreenTimeLiftsDowntimeAndTheScreenTimeLimitButNoOtherStore() throws {
        var collection = StoreCollection()
        try collection.update(.downtime) { $0.shield.applicationCategories = .all(except: [app("calculator")]) }
        try collection.update(.screenTime) { $0.shield.webDomainCategories = .all() }
        try collection.update(store("school")) { $0.shield.applications = [app("chess")] }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let granted = collection.policyInForce(grants: [TimeGrant(.screenTime, until: now + 60)], at: now)
        #expect(granted.applicationShield(for: app("editor"), categories: []).isEmpty)
        #expect(granted.webDomainShield(for: [domain("example.com")], categories: []).isEmpty)
        #expect(granted.applicationShield(for: app("chess"), categories: []) == [store("school")])
        let after = collection.policyInForce(grants: [TimeGrant(.screenTime, until: now + 60)], at: now + 60)
        #expect(after.applicationShield(for: app("editor"), categories: []) == [.downtime])
    }

    @Test func aLoginLockIsInForceUntilItEndsAndAScreenTimeGrantLiftsItForItsTime() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let locks = [(reason: "downtime", until: now + 3_600), (reason: "screen time", until: now + 600)]
        #expect(
            LoginLock.inForce(locks: locks, grants: [], at: now) == LoginLock(reason: "downtime", until: now + 3_600))
        #expect(LoginLock.inForce(locks: locks, grants: [], at: now + 3_600) == nil, "ended")
        let grants = [
            TimeGrant(.screenTime, until: now + 300), TimeGrant(.screenTime, until: now + 900),
            TimeGrant(.application(app("chess")), until: now + 2_000),
        ]
        #expect(LoginLock.inForce(locks: locks, grants: grants, at: now)?.grantedUntil == now + 900)
        #expect(LoginLock.inForce(locks: locks, grants: grants, at: now + 900)?.grantedUntil == nil, "the grant ended")
    }

    @Test func anExceptionNeverLiftsAnotherStoresShield() {
        let policy = policy([
            store("school"): {
                $0.shield.applicationCategories = .specific([category("game")], except: [app("chess")])
            },
            store("bedtime"): { $0.shield.applications = [app("chess")] },
            store("weekend"): { $0.shield.applicationCategories = .all(except: [app("chess")]) },
        ])
        // School excepts chess from its games shield, weekend from everything; bedtime still shields it.
        #expect(policy.applicationShield(for: app("chess"), categories: games) == [store("bedtime")])
        #expect(policy.applicationShield(for: app("mines"), categories: games) == [store("school"), store("weekend")])
    }

    @Test func overlappingExceptionsInOneStore() {
        let policy = policy([
            store("default"): {
                $0.shield.applications = [app("chess")]
                $0.shield.applicationCategories = .specific([category("game")], except: [app("chess")])
            }
        ])
        // The exception narrows the category shield only; the token shield of the same store holds.
        #expect(policy.applicationShield(for: app("chess"), categories: games) == [store("default")])
    }

    @Test func emptySelectionsShieldNothing() {
        let policy = policy([
            store("default"): {
                $0.shield.applications = []
                $0.shield.applicationCategories = .specific([])
                $0.shield.webDomains = []
                $0.shield.webDomainCategories = ActivityCategoryPolicy.none
            }
        ])
        #expect(policy.applicationShield(for: app("a"), categories: games).isEmpty)
        #expect(policy.webDomainShield(for: [domain("example.com")], categories: [category("social")]).isEmpty)
    }

    @Test func blockedApplicationsAreSeparateFromShields() {
        let policy = policy([store("default"): { $0.application.blockedApplications = [app("steam")] }])
        #expect(policy.applicationBlock(for: app("steam")) == [store("default")])
        #expect(policy.applicationShield(for: app("steam"), categories: []).isEmpty)
        #expect(policy.applicationBlock(for: app("chess")).isEmpty)
    }

    @Test func denyAppInstallationIsReported() {
        let policy = policy([
            store("a"): { $0.application.denyAppInstallation = true },
            store("b"): { $0.application.denyAppInstallation = false },
        ])
        #expect(policy.appInstallationDenied == [store("a")])
    }

    @Test func domainShieldCoversSubdomainsThroughCandidates() throws {
        let list = try PublicSuffixList(parsing: "com\nio\ngithub.io\n")
        let policy = policy([
            store("default"): { $0.shield.webDomains = [domain("youtube.com"), domain("github.io")] }
        ])
        func shield(_ name: String) -> [StoreKey] {
            let candidates = list.shieldCandidates(for: domainName(name)).map(testMinter.token(for:))
            return policy.webDomainShield(for: candidates, categories: [])
        }
        #expect(shield("www.youtube.com") == [store("default")])
        #expect(shield("youtube.com") == [store("default")])
        #expect(shield("a.b.youtube.com") == [store("default")])
        #expect(shield("alice.github.io") == [store("default")])
        #expect(shield("notyoutube.com").isEmpty)
        #expect(shield("wikipedia.org").isEmpty)
    }

    @Test func webDomainCategories() {
        let social = category("social")
        let policy = policy([
            store("a"): {
                $0.shield.webDomainCategories = .specific([social], except: [domain("school-forum.example")])
            },
            store("b"): { $0.shield.webDomainCategories = .all(except: [domain("wikipedia.org")]) },
        ])
        #expect(
            policy.webDomainShield(for: [domain("chat.example")], categories: [social]) == [store("a"), store("b")])
        #expect(policy.webDomainShield(for: [domain("school-forum.example")], categories: [social]) == [store("b")])
        #expect(policy.webDomainShield(for: [domain("wikipedia.org")], categories: []).isEmpty)
    }

    @Test func filterPolicies() {
        let policy = policy([
            store("auto"): {
                $0.webContent.blockedByFilter = .auto(
                    [domainName("casino.example")], except: [domainName("art.example")])
            },
            store("specific"): { $0.webContent.blockedByFilter = .specific([domainName("chat.example")]) },
        ])
        #expect(policy.webContentFilter(for: domainName("adult.example"), isAdult: true) == [store("auto")])
        #expect(policy.webContentFilter(for: domainName("www.casino.example"), isAdult: false) == [store("auto")])
        // The exception overrides the adult list and the domains of its own store.
        #expect(policy.webContentFilter(for: domainName("art.example"), isAdult: true).isEmpty)
        #expect(policy.webContentFilter(for: domainName("m.chat.example"), isAdult: false) == [store("specific")])
        #expect(policy.webContentFilter(for: domainName("news.example"), isAdult: false).isEmpty)

        let allowList = self.policy([
            store("strict"): { $0.webContent.blockedByFilter = .all(except: [domainName("school.example")]) },
            store("auto"): { $0.webContent.blockedByFilter = .auto(except: [domainName("news.example")]) },
        ])
        #expect(allowList.webContentFilter(for: domainName("www.school.example"), isAdult: false).isEmpty)
        // Excepted by auto, but the strict store still blocks it.
        #expect(allowList.webContentFilter(for: domainName("news.example"), isAdult: true) == [store("strict")])
    }

    @Test func clientsAreKeptApart() {
        let policy = policy([
            store("default", client: "org.example.School"): { $0.shield.applications = [app("chess")] },
            store("default"): { $0.shield.applications = [app("chess")] },
        ])
        #expect(
            policy.applicationShield(for: app("chess"), categories: [])
                == [
                    store("default", client: "org.example.School"), store("default"),
                ].sorted())
    }
}
