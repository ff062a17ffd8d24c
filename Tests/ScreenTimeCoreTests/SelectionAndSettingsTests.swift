import Foundation
import ScreenTimeCore
import Testing

@Suite struct FamilyActivitySelectionTests {
    @Test func jsonIsStableAndSorted() throws {
        var selection = FamilyActivitySelection(includeEntireCategory: true)
        selection.applicationTokens = [app("b"), app("a"), app("c")]
        selection.categoryTokens = [category("game")]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let first = try encoder.encode(selection)
        var shuffled = FamilyActivitySelection(includeEntireCategory: true)
        for token in [app("c"), app("a"), app("b")] { shuffled.applicationTokens.insert(token) }
        shuffled.categoryTokens = [category("game")]
        #expect(try encoder.encode(shuffled) == first)
        let object = try JSONSerialization.jsonObject(with: first) as? [String: Any]
        #expect(
            Set(object?.keys ?? [:].keys) == [
                "applicationTokens", "categoryTokens", "webDomainTokens", "includeEntireCategory",
            ])
        #expect(try JSONDecoder().decode(FamilyActivitySelection.self, from: first) == selection)
    }

    @Test func readsOlderAndNewerForms() throws {
        let token = app("org.gnome.Chess")
        let older = #"{"applicationTokens":[{"data":"\#(token.base64)"}]}"#
        let decoded = try JSONDecoder().decode(FamilyActivitySelection.self, from: Data(older.utf8))
        #expect(decoded.applicationTokens == [token])
        #expect(decoded.categoryTokens.isEmpty && decoded.webDomainTokens.isEmpty && !decoded.includeEntireCategory)
        let newer = #"{"webDomainTokens":[],"futureField":{"x":1},"includeEntireCategory":true}"#
        #expect(try JSONDecoder().decode(FamilyActivitySelection.self, from: Data(newer.utf8)).includeEntireCategory)
        #expect(try JSONDecoder().decode(FamilyActivitySelection.self, from: Data("{}".utf8)).isEmpty)
    }

    @Test func badTokensAreRefused() {
        let bad = #"{"applicationTokens":[{"data":"AAAA"}]}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(FamilyActivitySelection.self, from: Data(bad.utf8))
        }
    }
}

@Suite struct StoreSettingsTests {
    private func tokens(_ count: Int) -> Set<ApplicationToken> { Set((0..<count).map { app("app\($0)") }) }

    @Test func fiftyTokensFitAndFiftyOneDoNot() throws {
        var settings = StoreSettings()
        settings.shield.applications = tokens(50)
        try settings.validate()
        settings.shield.applications = tokens(51)
        #expect(
            throws: ScreenTimeCoreError(.tooManyTokens, "shield.applications has 51 items; a store may hold at most 50")
        ) {
            try settings.validate()
        }
    }

    @Test func fiftyExceptionsFitAndFiftyOneDoNot() throws {
        var settings = StoreSettings()
        settings.shield.applicationCategories = .all(except: tokens(50))
        try settings.validate()
        settings.shield.applicationCategories = .specific([category("game")], except: tokens(51))
        #expect(
            throws: ScreenTimeCoreError(
                .tooManyExceptions, "shield.applicationCategories has 51 exceptions; a store may hold at most 50")
        ) {
            try settings.validate()
        }
    }

    @Test func everyTokenSettingIsLimited() throws {
        let domains = Set((0..<51).map { domainName("site\($0).example") })
        let cases: [(String, (inout StoreSettings) -> Void)] = [
            ("shield.webDomains", { $0.shield.webDomains = Set((0..<51).map { domain("site\($0).example") }) }),
            ("application.blockedApplications", { $0.application.blockedApplications = tokens(51) }),
            (
                "shield.webDomainCategories",
                { $0.shield.webDomainCategories = .specific(Set((0..<51).map { category("c\($0)") })) }
            ),
            ("webContent.blockedByFilter", { $0.webContent.blockedByFilter = .auto(domains) }),
            ("webContent.blockedByFilter", { $0.webContent.blockedByFilter = .all(except: domains) }),
            ("webContent.blockedByFilter", { $0.webContent.blockedByFilter = .specific(domains) }),
        ]
        for (setting, change) in cases {
            var settings = StoreSettings()
            change(&settings)
            do {
                try settings.validate()
                Issue.record("\(setting) with 51 entries was accepted")
            } catch {
                #expect(error.message.hasPrefix(setting))
            }
        }
    }

    @Test func clearAllSettingsUnsetsEverything() {
        var settings = StoreSettings()
        settings.shield.applications = [app("a")]
        settings.application.denyAppInstallation = true
        settings.webContent.blockedByFilter = .auto()
        #expect(!settings.isEmpty)
        settings.clearAllSettings()
        #expect(settings.isEmpty)
        #expect(settings.shield.applications == nil)
    }

    @Test func roundTripsThroughJSON() throws {
        var settings = StoreSettings()
        settings.shield.applications = [app("a"), app("b")]
        settings.shield.applicationCategories = .specific([category("game")], except: [app("a")])
        settings.shield.webDomains = [domain("example.com")]
        settings.shield.webDomainCategories = .all(except: [domain("wikipedia.org")])
        settings.application.blockedApplications = [app("c")]
        settings.application.denyAppInstallation = false
        settings.webContent.blockedByFilter = .auto([domainName("bad.example")], except: [domainName("ok.example")])
        let data = try JSONEncoder().encode(settings)
        #expect(try JSONDecoder().decode(StoreSettings.self, from: data) == settings)
        // nil and .none are different: one leaves the setting to other stores' defaults, one says "none".
        var none = StoreSettings()
        none.shield.applicationCategories = ActivityCategoryPolicy.none
        #expect(try JSONDecoder().decode(StoreSettings.self, from: JSONEncoder().encode(none)) == none)
        #expect(none != StoreSettings())
        #expect(try JSONDecoder().decode(StoreSettings.self, from: Data("{}".utf8)).isEmpty)
    }

    @Test func namesAreValidated() throws {
        #expect(StoreName.default.rawValue == "default")
        #expect(try StoreName("school-hours").rawValue == "school-hours")
        for bad in ["", "has space", ".dot", String(repeating: "x", count: 65), "slash/es"] {
            #expect(throws: ScreenTimeCoreError.self) { try StoreName(bad) }
        }
        #expect(StoreName(rawValue: "bad name") == nil)
        #expect(throws: ScreenTimeCoreError.self) { try ClientID("") }
        #expect(try ClientID("org.example.Guardian").rawValue == "org.example.Guardian")
    }
}

@Suite struct StoreCollectionTests {
    @Test func fiftyStoresPerClientAndTheFiftyFirstIsRefused() throws {
        var collection = StoreCollection()
        var settings = StoreSettings()
        settings.shield.applications = [app("a")]
        for index in 0..<50 { try collection.set(settings, for: store("s\(index)")) }
        #expect(throws: ScreenTimeCoreError.self) { try collection.set(settings, for: store("s50")) }
        #expect(collection.storeNames(of: .commandLine).count == 50)
        // Replacing an existing store, and another client's store, are still fine.
        try collection.set(settings, for: store("s0"))
        try collection.set(settings, for: store("s0", client: "org.example.Other"))
        // An emptied store frees its place.
        collection.clear(store("s1"))
        try collection.set(settings, for: store("s50"))
    }

    @Test func invalidSettingsChangeNothing() throws {
        var collection = StoreCollection()
        try collection.update(store("default")) { $0.shield.applications = [app("a")] }
        let before = collection
        #expect(throws: ScreenTimeCoreError.self) {
            try collection.update(store("default")) { $0.shield.applications = Set((0..<51).map { app("x\($0)") }) }
        }
        #expect(collection == before)
    }

    @Test func emptyStoresAreNotKept() throws {
        var collection = StoreCollection()
        try collection.update(store("default")) { $0.shield.applications = [app("a")] }
        try collection.update(store("default")) { $0.shield.applications = nil }
        #expect(collection.stores.isEmpty)
    }

    @Test func removingAClientRemovesItsStores() throws {
        var collection = StoreCollection()
        try collection.update(store("a")) { $0.shield.applications = [app("a")] }
        try collection.update(store("a", client: "org.example.Other")) { $0.shield.applications = [app("a")] }
        collection.removeAll(of: .commandLine)
        #expect(collection.stores.keys.map(\.client.rawValue) == ["org.example.Other"])
    }
}
