import Foundation
import ScreenTimeCore
import Testing

/// The service catalogue: a service's file, what is wrong with a bad one, the files shipped in
/// etc/screentime/services, and a service's apps shielded as a category of their own.
@Suite struct ServiceCatalogueTests {
    static let shipped =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/etc/screentime/services"

    @Test func aServiceFileIsReadWithItsDomainsAndApps() throws {
        let service = try ServiceDefinition(
            id: "YouTube",
            parsing: """
                # Google's video site.
                name = YouTube   # what people call it
                category = Video
                domains = youtube.com youtu.be
                domains = https://www.YouTube.com/watch ytimg.com
                apps = io.freetubeapp.FreeTube snap:freetube io.freetubeapp.FreeTube.desktop

                """)
        #expect(service.id == "youtube")
        #expect(service.name == "YouTube")
        #expect(service.category == "video")
        #expect(service.domains.map(\.ascii) == ["youtube.com", "youtu.be", "www.youtube.com", "ytimg.com"])
        #expect(service.applications == [.desktopEntry("io.freetubeapp.FreeTube"), .snap("freetube")])
        #expect(service.categoryName.name == "service.youtube")
    }

    @Test(arguments: [
        ("x", "domains = a.com", "x.service has no 'name = …' line"),
        ("x", "name = X", "x.service names no domains and no apps"),
        (
            "x", "name = X\ncolour = red",
            "x.service, line 2: unknown key 'colour' (the keys are name, category, domains, apps)"
        ),
        ("x", "name = X\nname = Y\ndomains = a.com", "x.service, line 2: a second name"),
        ("x", "name X", "x.service, line 1: 'name X' is not 'key = value'"),
        ("x", "name = X\ndomains =", "x.service, line 2: 'domains' has no value"),
        ("x", "name = X\ndomains = a..com", "x.service, line 2: "),
        ("x", "name = X\napps = /usr/bin/game", "x.service, line 2: "),
        ("x", "name = X\ncategory = two words\ndomains = a.com", "x.service, line 2: 'two words' is not a category"),
        ("bad/name", "name = X\ndomains = a.com", "'bad/name.service' is not a service file name"),
        ("", "name = X\ndomains = a.com", "'.service' is not a service file name"),
    ])
    func aBadFileSaysWhichLineAndWhy(id: String, text: String, message: String) {
        #expect {
            try ServiceDefinition(id: id, parsing: text)
        } throws: { error in
            guard let error = error as? ScreenTimeCoreError else { return false }
            return error.code == .invalidService && error.message.hasPrefix(message)
        }
    }

    @Test func aCatalogueKeepsTheGoodFilesAndSaysWhatWasWrongWithTheRest() {
        let catalogue = ServiceCatalogue(files: [
            ("tiktok.service", "name = TikTok\ndomains = tiktok.com"),
            ("broken.service", "name = Broken"),
            ("notes.txt", "not a service"),
        ])
        #expect(catalogue.services.keys.sorted() == ["tiktok"])
        #expect(catalogue.problems == ["broken.service names no domains and no apps"])
        #expect(catalogue.service(named: " TikTok ")?.id == "tiktok")
        #expect(catalogue.service(named: "tik") == nil)
    }

    @Test func everyShippedServiceParsesAndTheFamiliesFortyAreThere() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.shipped).sorted()
        let files = try names.map { ($0, try String(contentsOfFile: Self.shipped + "/" + $0, encoding: .utf8)) }
        let catalogue = ServiceCatalogue(files: files)
        #expect(catalogue.problems.isEmpty, "\(catalogue.problems)")
        #expect(catalogue.services.count == names.count && names.count >= 40)
        for wanted in [
            "youtube", "tiktok", "instagram", "snapchat", "discord", "roblox", "minecraft", "fortnite", "steam",
            "twitch", "netflix", "reddit", "whatsapp", "telegram",
        ] {
            #expect(catalogue.services[wanted] != nil, "\(wanted) is missing")
        }
    }

    /// A service's app is shielded by the service's category; a desktop entry cannot put itself in
    /// a service by its own Categories= (it would meet an exception made for the service).
    @Test func aServicesAppIsShieldedAndAnEntryCannotJoinAServiceByItself() throws {
        let chess = ApplicationIndexTests.entry(
            "org.gnome.Chess", "Name=Chess\nExec=gnome-chess\nCategories=Game;service.youtube;\n")
        let tube = ApplicationIndexTests.entry("io.freetubeapp.FreeTube", "Name=FreeTube\nExec=freetube\n")
        let index = ApplicationIndex(entries: [
            (chess, [.init(path: "/usr/games/gnome-chess", sha256: nil)]),
            (tube, [.init(path: "/usr/bin/freetube", sha256: nil)]),
        ])
        let catalogue = ServiceCatalogue(files: [
            ("youtube.service", "name = YouTube\ndomains = youtube.com\napps = io.freetubeapp.FreeTube")
        ])
        let youtube = try #require(catalogue.services["youtube"]).categoryName
        #expect(index.application(.desktopEntry("org.gnome.Chess"))?.categories == [try CategoryName("Game")])
        let shielded = StoreSettings(shield: ShieldSettings(applicationCategories: .specific([category(youtube.name)])))
        let filter = ApplicationFilter(
            policy: EffectivePolicy(stores: [store("a"): shielded]), index: index, minter: testMinter,
            services: catalogue.categoriesByApplication)
        #expect(filter.verdict(for: [.desktopEntry("io.freetubeapp.FreeTube")])?.action == .shield)
        #expect(filter.verdict(for: [.desktopEntry("org.gnome.Chess")]) == nil)
        // Without the catalogue, the app is not the service's.
        let without = ApplicationFilter(
            policy: EffectivePolicy(stores: [store("a"): shielded]), index: index, minter: testMinter)
        #expect(without.verdict(for: [.desktopEntry("io.freetubeapp.FreeTube")]) == nil)
    }
}
