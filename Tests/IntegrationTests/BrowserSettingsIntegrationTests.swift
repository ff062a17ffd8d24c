import Foundation
import LinuxSupport
import ScreenTimeTestThreads
import Testing

/// What the browsers may do, set by a guardian with `screentime browsers`: written into the
/// managed policies (the world's own directory) while a child is authorized, refused to a child,
/// a bad ID said and nothing changed.
@Suite(.threadsOfTheirOwn, .enabled(if: isRoot, "needs root: users, the agent"))
struct BrowserSettingsIntegrationTests {
    func json(_ path: String) -> NSDictionary? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).flatMap {
            try? JSONSerialization.jsonObject(with: $0) as? NSDictionary
        }
    }

    @Test func privateWindowsAndExtensionsAreTheGuardiansToSetAndInForceWhileAChildIs() throws {
        let world = try AgentWorld()
        defer { world.tearDown() }
        let chromium = world.directory + "/root/etc/chromium/policies/managed/screentime.json"
        let firefox = world.directory + "/root/etc/firefox/policies/policies.json"
        let id = String(repeating: "b", count: 32)

        let set = try world.cli(
            as: world.guardian, "browsers", "--private-windows", "off", "--allow-extension", id, "--allow-extension",
            "uBlock0@raymondhill.net")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("private windows: off") && set.stdout.contains("  uBlock0@raymondhill.net"))
        #expect(set.stdout.contains("not in force now"), "\(set.stdout)")
        // Nothing in force before a child is authorized.
        #expect(!FileManager.default.fileExists(atPath: chromium))

        #expect(try world.cli(as: world.guardian, "authorize", "--child", world.child).status == 0)
        #expect(eventually(5) { json(chromium)?["IncognitoModeAvailability"] as? Int == 1 })
        #expect(json(chromium)?["ExtensionInstallAllowlist"] as? [String] == [id])
        let policies = json(firefox)?["policies"] as? NSDictionary
        #expect(policies?["DisablePrivateBrowsing"] as? Bool == true)
        #expect((policies?["ExtensionSettings"] as? NSDictionary)?["uBlock0@raymondhill.net"] != nil)

        // The child may read them, not change them; a bad ID changes nothing.
        let read = try world.cli(as: world.child, "browsers")
        #expect(read.status == 0 && read.stdout.contains("in force: a child is authorized"), "\(read.stdout)")
        let child = try world.cli(as: world.child, "browsers", "--private-windows", "on")
        #expect(child.status == 77 && child.stderr.contains("only a guardian"), "\(child.status) \(child.stderr)")
        let bad = try world.cli(as: world.guardian, "browsers", "--private-windows", "on", "--allow-extension", "x y")
        #expect(bad.status != 0 && bad.stderr.contains("'x y' is not an extension's ID"), "\(bad.stderr)")
        #expect(json(chromium)?["IncognitoModeAvailability"] as? Int == 1)

        // Back to any extension and private windows allowed: the keys go, the rest stays.
        let open = try world.cli(as: world.guardian, "browsers", "--private-windows", "on", "--extensions", "any")
        #expect(open.status == 0 && open.stdout.contains("extensions: any"), "\(open.stdout)")
        #expect(eventually(5) { json(chromium)?["IncognitoModeAvailability"] == nil })
        #expect(json(chromium)?["ExtensionInstallAllowlist"] == nil && json(chromium)?["DnsOverHttpsMode"] != nil)
        #expect((json(firefox)?["policies"] as? NSDictionary)?["ExtensionSettings"] == nil)
    }
}
