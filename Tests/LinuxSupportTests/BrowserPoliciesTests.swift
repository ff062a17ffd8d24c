import Foundation
import LinuxSupport
import Testing

/// The managed browser policies, installed into a directory of the test's own: merged into a
/// guardian's Firefox policies and taken out again leaving them as they were.
@Suite struct BrowserPoliciesTests {
    func json(_ path: String) throws -> NSDictionary {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! NSDictionary
    }

    @Test func installedAloneAndRemovedWithoutATrace() throws {
        let fixture = try Fixture()
        let policies = BrowserPolicies(root: fixture.root, statePath: fixture.root + "/state/browser-policies.json")
        try FileManager.default.createDirectory(atPath: fixture.root + "/state", withIntermediateDirectories: true)
        try policies.install()
        try policies.install()  // again: the same
        let firefox = try json(policies.firefoxPath)["policies"] as! NSDictionary
        #expect(firefox["DNSOverHTTPS"] as? NSDictionary == ["Enabled": false, "Locked": true])
        let preferences = firefox["Preferences"] as! NSDictionary
        #expect(preferences["network.dns.echconfig.enabled"] as? NSDictionary == ["Value": false, "Status": "locked"])
        #expect(
            try json(policies.chromiumPath) == [
                "DnsOverHttpsMode": "off", "EncryptedClientHelloEnabled": false, "QuicAllowed": false,
            ])
        // Chrome's directory only where Chrome is installed.
        #expect(!FileManager.default.fileExists(atPath: policies.chromePath))
        try policies.remove()
        for path in [policies.firefoxPath, policies.chromiumPath, policies.statePath] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path)")
        }
        // And the directories made for them, empty now.
        #expect(!FileManager.default.fileExists(atPath: fixture.root + "/etc/chromium"))
        #expect(!FileManager.default.fileExists(atPath: fixture.root + "/etc/firefox"))
    }

    /// With a child's safe search, Chromium forces it too; without, the keys go again.
    @Test func safeSearchIsForcedInChromiumWhileAChildHasIt() throws {
        let fixture = try Fixture()
        try FileManager.default.createDirectory(atPath: fixture.root + "/state", withIntermediateDirectories: true)
        let state = fixture.root + "/state/browser-policies.json"
        let strict = BrowserPolicies(root: fixture.root, statePath: state, youTubeRestrict: 2)
        try strict.install()
        #expect(
            try json(strict.chromiumPath) == [
                "DnsOverHttpsMode": "off", "EncryptedClientHelloEnabled": false, "QuicAllowed": false,
                "ForceGoogleSafeSearch": true, "ForceYouTubeRestrict": 2, "ForceBingSafeSearch": 2,
            ])
        #expect(strict.isInPlace)
        // Safe search off: the file without it is not in place until written again.
        let plain = BrowserPolicies(root: fixture.root, statePath: state)
        #expect(!plain.isInPlace)
        try plain.install()
        #expect(try json(plain.chromiumPath)["ForceGoogleSafeSearch"] == nil && plain.isInPlace)
        try plain.remove()
    }

    @Test func aGuardiansFirefoxPoliciesAreMergedAndGivenBack() throws {
        let fixture = try Fixture()
        try fixture.write(
            "etc/firefox/policies/policies.json",
            #"{"policies": {"DisableTelemetry": true, "DNSOverHTTPS": {"Enabled": true, "ProviderURL": "https://x/"},"#
                + #" "Preferences": {"browser.startup.homepage": {"Value": "https://school.test", "Status": "default"}}},"#
                + #" "comment": "the guardian's"}"#)
        let policies = BrowserPolicies(root: fixture.root, statePath: fixture.root + "/browser-policies.json")
        let before = try json(policies.firefoxPath)
        try policies.install()
        let merged = try json(policies.firefoxPath)
        let inner = merged["policies"] as! NSDictionary
        #expect(inner["DisableTelemetry"] as? Bool == true)
        #expect(inner["DNSOverHTTPS"] as? NSDictionary == ["Enabled": false, "Locked": true])
        let preferences = inner["Preferences"] as! NSDictionary
        #expect(preferences["browser.startup.homepage"] != nil && preferences["network.http.http3.enable"] != nil)
        #expect(merged["comment"] as? String == "the guardian's")
        try policies.install()
        try policies.remove()
        #expect(try json(policies.firefoxPath) == before)
    }

    /// Private windows off and an allow-list of extensions, in both browsers; a guardian's own
    /// value of a key the agent takes over comes back when the agent's setting goes.
    @Test func privateWindowsAndExtensionsAreSetAndAGuardiansOwnValueComesBack() throws {
        let fixture = try Fixture()
        try fixture.write(
            "etc/firefox/policies/policies.json",
            #"{"policies": {"DisablePrivateBrowsing": false, "DisableTelemetry": true}}"#)
        let state = fixture.root + "/browser-policies.json"
        let chromiumID = String(repeating: "a", count: 16) + String(repeating: "p", count: 16)
        let locked = BrowserPolicies(
            root: fixture.root, statePath: state, privateWindows: false,
            extensionAllowlist: [chromiumID, "uBlock0@raymondhill.net"])
        let before = try json(locked.firefoxPath)
        try locked.install()
        let chromium = try json(locked.chromiumPath)
        #expect(chromium["IncognitoModeAvailability"] as? Int == 1)
        #expect(chromium["ExtensionInstallBlocklist"] as? [String] == ["*"])
        #expect(chromium["ExtensionInstallAllowlist"] as? [String] == [chromiumID])
        let firefox = try json(locked.firefoxPath)["policies"] as! NSDictionary
        #expect(firefox["DisablePrivateBrowsing"] as? Bool == true)
        let extensions = firefox["ExtensionSettings"] as! NSDictionary
        #expect((extensions["*"] as? NSDictionary)?["installation_mode"] as? String == "blocked")
        #expect((extensions["uBlock0@raymondhill.net"] as? NSDictionary)?["installation_mode"] as? String == "allowed")
        #expect(extensions[chromiumID] == nil)
        #expect(locked.isInPlace)

        // Private windows allowed again: the guardian's own `false` is back, the list stays.
        let open = BrowserPolicies(
            root: fixture.root, statePath: state, extensionAllowlist: [chromiumID, "uBlock0@raymondhill.net"])
        #expect(!open.isInPlace)
        try open.install()
        let reopened = try json(open.firefoxPath)["policies"] as! NSDictionary
        #expect(reopened["DisablePrivateBrowsing"] as? Bool == false && reopened["ExtensionSettings"] != nil)
        #expect(try json(open.chromiumPath)["IncognitoModeAvailability"] == nil && open.isInPlace)
        try open.remove()
        #expect(try json(open.firefoxPath) == before)
    }

    @Test(arguments: [
        ("abcdefghijklmnopabcdefghijklmnop", true), ("uBlock0@raymondhill.net", true),
        ("{12345678-1234-1234-1234-123456789abc}", true), ("abcdefghijklmnopabcdefghijklmnoq", false),
        ("short", false), ("@x", false), ("a@", false), ("{not-a-guid}", false), ("a b@c", false), ("", false),
    ])
    func extensionIDs(_ id: String, _ valid: Bool) {
        #expect(BrowserPolicies.isExtensionID(id) == valid)
    }

    @Test func aFileThatIsNotJSONIsLeftAloneWithAClearError() throws {
        let fixture = try Fixture()
        try fixture.write("etc/firefox/policies/policies.json", "{ not json")
        let policies = BrowserPolicies(root: fixture.root, statePath: fixture.root + "/browser-policies.json")
        do {
            try policies.install()
            Issue.record("a broken policies.json was overwritten")
        } catch {
            #expect(error.message.contains("policies.json is not a JSON object"))
        }
        #expect(try String(contentsOfFile: policies.firefoxPath, encoding: .utf8) == "{ not json")
        // Chromium's own file went in regardless.
        #expect(FileManager.default.fileExists(atPath: policies.chromiumPath))
    }
}
