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
