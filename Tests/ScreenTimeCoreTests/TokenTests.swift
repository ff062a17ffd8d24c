import Foundation
import ScreenTimeCore
import Testing

@Suite struct TokenTests {
    @Test func encodesAsBase64DataObject() throws {
        let token = app("org.mozilla.firefox")
        let json = String(decoding: try JSONEncoder().encode(token), as: UTF8.self)
        #expect(json == #"{"data":"\#(token.base64)"}"#)
        #expect(Data(base64Encoded: token.base64)?.count == 32)
        #expect(try JSONDecoder().decode(ApplicationToken.self, from: Data(json.utf8)) == token)
    }

    @Test func bytesRoundTrip() throws {
        let token = domain("example.com")
        #expect(try WebDomainToken(bytes: token.bytes) == token)
        #expect(try WebDomainToken(base64: token.base64) == token)
    }

    @Test(arguments: [#"{"data":"AAAA"}"#, #"{"data":"not base64!"}"#, #"{"data":42}"#, #"{}"#])
    func rejectsMalformedJSON(_ json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ApplicationToken.self, from: Data(json.utf8)) }
    }

    @Test func rejectsWrongLength() {
        #expect(throws: ScreenTimeCoreError(.invalidToken, "a application token has 32 bytes, this one has 31")) {
            try ApplicationToken(bytes: [UInt8](repeating: 1, count: 31))
        }
    }

    @Test func sameIdentityGivesSameTokenOnOnePC() throws {
        let other = try TokenMinter(secret: Array(repeating: UInt8(7), count: 32))
        #expect(other.token(for: .desktopEntry("org.gnome.Chess")) == app("org.gnome.Chess"))
        #expect(app("org.gnome.Chess") != app("org.gnome.Mines"))
    }

    @Test func anotherPCGivesAnotherToken() throws {
        let other = try TokenMinter(secret: TokenMinter.generateSecret())
        #expect(other.token(for: .desktopEntry("org.gnome.Chess")) != app("org.gnome.Chess"))
    }

    @Test func kindsNeverShareTokens() throws {
        // The same text as a category and as a domain gives unrelated bytes.
        let asCategory = testMinter.token(for: try CategoryName("games"))
        let asDomain = testMinter.token(for: try DomainName("games"))
        #expect(asCategory.bytes != asDomain.bytes)
    }

    @Test func tokenRevealsNothingOfTheIdentity() {
        let token = app("org.mozilla.firefox")
        #expect(!token.description.contains("firefox"))
        #expect(!String(decoding: token.bytes, as: UTF8.self).contains("firefox"))
        #expect(!token.base64.contains("firefox"))
    }

    @Test func secretMustBeLongEnough() {
        #expect(throws: ScreenTimeCoreError.self) { try TokenMinter(secret: [UInt8](repeating: 1, count: 31)) }
        #expect(TokenMinter.generateSecret().count == 32)
        #expect(TokenMinter.generateSecret() != TokenMinter.generateSecret())
    }

    @Test func tokensSortStably() {
        let tokens = (0..<20).map { app("app\($0)") }
        #expect(tokens.sorted() == tokens.shuffled().sorted())
        #expect(
            tokens.sorted().map(\.base64)
                == tokens.sorted().map(\.base64).sorted { a, b in
                    Data(base64Encoded: a)!.lexicographicallyPrecedes(Data(base64Encoded: b)!)
                })
    }
}

@Suite struct ApplicationIdentityTests {
    @Test func desktopEntryDropsSuffix() throws {
        #expect(
            try ApplicationIdentity.desktopEntry(id: "org.mozilla.firefox.desktop")
                == .desktopEntry("org.mozilla.firefox"))
        #expect(try ApplicationIdentity.desktopEntry(id: "firefox-esr").canonical == "desktop:firefox-esr")
    }

    @Test func flatpakIsItsDesktopEntry() throws {
        #expect(try ApplicationIdentity.flatpak(id: "org.gnome.Chess") == .desktopEntry("org.gnome.Chess"))
        #expect(throws: ScreenTimeCoreError.self) { try ApplicationIdentity.flatpak(id: "chess") }
    }

    @Test func snapAndExecutable() throws {
        #expect(try ApplicationIdentity.snap(name: "spotify").canonical == "snap:spotify")
        let hex = String(repeating: "AB", count: 32)
        #expect(try ApplicationIdentity.executable(sha256: hex).canonical == "exe:sha256:" + hex.lowercased())
    }

    @Test(arguments: ["", ".hidden", "has space", "a/b", String(repeating: "x", count: 256), "semi;colon"])
    func rejectsBadDesktopIDs(_ id: String) {
        #expect(throws: ScreenTimeCoreError.self) { try ApplicationIdentity.desktopEntry(id: id) }
    }

    @Test(arguments: ["", "UPPER", "-dash", String(repeating: "a", count: 41), "under_score"])
    func rejectsBadSnapNames(_ name: String) {
        #expect(throws: ScreenTimeCoreError.self) { try ApplicationIdentity.snap(name: name) }
    }

    @Test(arguments: ["abc", String(repeating: "g", count: 64), String(repeating: "a", count: 63)])
    func rejectsBadDigests(_ hex: String) {
        #expect(throws: ScreenTimeCoreError.self) { try ApplicationIdentity.executable(sha256: hex) }
    }

    @Test func canonicalRoundTripsThroughJSON() throws {
        let identities: [ApplicationIdentity] = [
            .desktopEntry("org.gnome.Chess"), .snap("spotify"), .executable(String(repeating: "0f", count: 32)),
        ]
        let data = try JSONEncoder().encode(identities)
        #expect(try JSONDecoder().decode([ApplicationIdentity].self, from: data) == identities)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ApplicationIdentity.self, from: Data(#""bundle:com.example""#.utf8))
        }
    }

    @Test func categoriesFoldCase() throws {
        #expect(try CategoryName(" Game ").name == "game")
        #expect(testMinter.token(for: try CategoryName("Game")) == category("game"))
        #expect(try CategoryName("X-GNOME-Utilities").name == "x-gnome-utilities")
        #expect(throws: ScreenTimeCoreError.self) { try CategoryName("") }
        #expect(throws: ScreenTimeCoreError.self) { try CategoryName("two words") }
    }
}
