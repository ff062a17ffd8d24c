import FoundationEssentials
import Glibc
import ScreenTimeCore

/// The managed browser policies that keep a browser's names where the agent can read them:
/// DNS over HTTPS off and locked (a custom DoH provider in the profile is then ignored),
/// Encrypted ClientHello off, QUIC off. Installed while any child is authorized, removed when
/// the last is revoked. Policies are system-wide: every user's browser gets them.
///
/// - Firefox (Debian's firefox-esr reads `/etc/firefox/policies/policies.json`; the
///   `/etc/firefox-esr/policies` path is ignored, measured): the agent's keys are merged into
///   whatever a guardian already has there, and on removal each key gets back what it had (the
///   previous values are kept in a file of the agent's state), the file itself going only if
///   the agent made it.
/// - Chromium (`/etc/chromium/policies/managed/`) and Google Chrome
///   (`/etc/opt/chrome/policies/managed/`, where Chrome is installed): a file of the agent's own.
///
/// While a child has safe search, Chromium and Chrome also force it (ForceGoogleSafeSearch,
/// ForceYouTubeRestrict, ForceBingSafeSearch); Firefox has no such policy (the agent's answers
/// hold it at the name there).
///
/// `root` prefixes every path, so tests install into a directory of their own.
public struct BrowserPolicies: Sendable {
    public let root: String
    /// Where the Firefox keys' previous values are kept between install and removal.
    public let statePath: String
    /// YouTube's Restricted Mode to force with safe search: 0 none (no safe search), 1 moderate,
    /// 2 strict (Chromium's ForceYouTubeRestrict values).
    public let youTubeRestrict: Int
    /// Whether private windows are allowed (Chromium's incognito, Firefox's private browsing).
    public let privateWindows: Bool
    /// The browser extensions that may be installed; nil: any. Chromium's IDs (32 letters a–p)
    /// go to Chromium and Chrome, the others (`name@example.org`, `{GUID}`) to Firefox.
    public let extensionAllowlist: [String]?

    public init(
        root: String, statePath: String, youTubeRestrict: Int = 0, privateWindows: Bool = true,
        extensionAllowlist: [String]? = nil
    ) {
        self.root = root.hasSuffix("/") ? String(root.dropLast()) : root
        self.statePath = statePath
        self.youTubeRestrict = min(2, max(0, youTubeRestrict))
        self.privateWindows = privateWindows
        self.extensionAllowlist = extensionAllowlist
    }

    /// A Chromium extension's ID: 32 letters from a to p.
    public static func isChromiumExtensionID(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "p") }
    }

    /// A Chromium extension's ID, or a Firefox add-on's (`name@example.org` or `{GUID}`).
    public static func isExtensionID(_ id: String) -> Bool {
        if isChromiumExtensionID(id) { return true }
        let bytes = Array(id.utf8)
        guard (3...80).contains(bytes.count) else { return false }
        if bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") {
            return bytes.count == 38
                && bytes.dropFirst().dropLast().allSatisfy { $0 == UInt8(ascii: "-") || isHex($0) }
        }
        let parts = id.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
            && id.utf8.allSatisfy { isAlphanumeric($0) || "._+-@".utf8.contains($0) }
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte)
    }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte)
    }

    public var firefoxPath: String { root + "/etc/firefox/policies/policies.json" }
    public var chromiumPath: String { root + "/etc/chromium/policies/managed/screentime.json" }
    public var chromePath: String { root + "/etc/opt/chrome/policies/managed/screentime.json" }

    /// Every key of Firefox's `policies` the agent may set: what a guardian had there before is
    /// kept, and given back when the agent's key goes.
    static let firefoxManagedKeys = ["DNSOverHTTPS", "DisablePrivateBrowsing", "ExtensionSettings"]

    /// The Firefox policies set, by key of `policies` (`Preferences` entries by pref name).
    var firefoxPolicies: [String: Any] {
        var policies: [String: Any] = ["DNSOverHTTPS": ["Enabled": false, "Locked": true]]
        if !privateWindows { policies["DisablePrivateBrowsing"] = true }
        if let list = extensionAllowlist {
            var settings: [String: Any] = [
                "*": [
                    "installation_mode": "blocked",
                    "blocked_install_message": "A guardian allows only some extensions on this computer.",
                ]
            ]
            for id in list where !Self.isChromiumExtensionID(id) { settings[id] = ["installation_mode": "allowed"] }
            policies["ExtensionSettings"] = settings
        }
        return policies
    }
    static var firefoxPreferences: [String: Any] {
        [
            "network.dns.echconfig.enabled": ["Value": false, "Status": "locked"],
            "network.dns.http3_echconfig.enabled": ["Value": false, "Status": "locked"],
            "network.http.http3.enable": ["Value": false, "Status": "locked"],
        ]
    }
    var chromiumPolicies: [String: Any] {
        var policies: [String: Any] = [
            "DnsOverHttpsMode": "off", "EncryptedClientHelloEnabled": false, "QuicAllowed": false,
        ]
        if youTubeRestrict > 0 {
            policies["ForceGoogleSafeSearch"] = true
            policies["ForceYouTubeRestrict"] = youTubeRestrict
            policies["ForceBingSafeSearch"] = 2
        }
        if !privateWindows { policies["IncognitoModeAvailability"] = 1 }
        if let list = extensionAllowlist {
            policies["ExtensionInstallBlocklist"] = ["*"]
            policies["ExtensionInstallAllowlist"] = list.filter(Self.isChromiumExtensionID)
        }
        return policies
    }

    /// Puts the policies in place (again: idempotent). Throws naming the file that could not be
    /// read or written; what could be installed stays installed.
    public func install() throws(SystemError) {
        var problems: [String] = []
        do { try installFirefox() } catch { problems.append(error.message) }
        for (path, wanted) in [(chromiumPath, true), (chromePath, Files.exists(root + "/opt/google/chrome"))]
        where wanted {
            do throws(SystemError) {
                let data = Self.json(chromiumPolicies).serialized()
                try Files.makeDirectory(parent(path), mode: 0o755)
                try Files.writeAtomically(data + [0x0A], to: path, mode: 0o644)
            } catch {
                problems.append(error.message)
            }
        }
        if !problems.isEmpty { throw SystemError(.badFile, problems.joined(separator: "; ")) }
    }

    /// Whether every policy is in place as `install()` puts it: a file removed or changed by
    /// someone else (a package's upgrade, a test, a person) is noticed and written again.
    public var isInPlace: Bool {
        // JSON values compare as their sorted serializations.
        func same(_ found: Any?, _ wanted: Any) -> Bool {
            guard let found else { return false }
            return JSONValue(found).map { $0 == Self.json(wanted) } ?? false
        }
        for (path, wanted) in [(chromiumPath, true), (chromePath, Files.exists(root + "/opt/google/chrome"))]
        where wanted {
            guard let document = try? readJSON(path), same(document, chromiumPolicies) else { return false }
        }
        guard let firefox = try? readJSON(firefoxPath), let policies = firefox["policies"] as? [String: Any],
            let preferences = policies["Preferences"] as? [String: Any]
        else { return false }
        // Each managed key as the agent sets it, or as it was before the agent where it sets none.
        let previous = (try? readJSON(statePath))?["policies"] as? [String: Any] ?? [:]
        let ours = firefoxPolicies
        for key in Self.firefoxManagedKeys {
            if let wanted = ours[key] ?? previous[key] {
                guard same(policies[key], wanted) else { return false }
            } else if policies[key] != nil {
                return false
            }
        }
        return Self.firefoxPreferences.allSatisfy { same(preferences[$0.key], $0.value) }
    }

    /// The files `install()` writes, for a watch on them.
    public var paths: [String] {
        [firefoxPath, chromiumPath] + (Files.exists(root + "/opt/google/chrome") ? [chromePath] : [])
    }

    /// Takes the policies away: the agent's own files go, Firefox's keys get back what they had.
    public func remove() throws(SystemError) {
        for path in [chromiumPath, chromePath] where Files.exists(path) { _ = Files.remove(path) }
        defer {
            // The directories the policies needed go too, where nothing else is in them.
            for directory in [
                "/etc/chromium/policies/managed", "/etc/chromium/policies", "/etc/chromium",
                "/etc/opt/chrome/policies/managed", "/etc/opt/chrome/policies", "/etc/firefox/policies", "/etc/firefox",
            ] {
                _ = rmdir(root + directory)
            }
        }
        guard let saved = try readJSON(statePath) else { return }
        guard Files.exists(firefoxPath) else {
            _ = Files.remove(statePath)
            return
        }
        guard var document = try readJSON(firefoxPath) else { return }
        var policies = document["policies"] as? [String: Any] ?? [:]
        let previous = saved["policies"] as? [String: Any] ?? [:]
        for key in Self.firefoxManagedKeys {
            policies[key] = previous[key]
        }
        var preferences = policies["Preferences"] as? [String: Any] ?? [:]
        let previousPreferences = saved["preferences"] as? [String: Any] ?? [:]
        for key in Self.firefoxPreferences.keys { preferences[key] = previousPreferences[key] }
        policies["Preferences"] = preferences.isEmpty ? nil : preferences
        if saved["existed"] as? Bool != true, policies.isEmpty, document.count == 1 {
            _ = Files.remove(firefoxPath)
        } else {
            document["policies"] = policies
            try writeJSON(document, to: firefoxPath)
        }
        _ = Files.remove(statePath)
    }

    private func installFirefox() throws(SystemError) {
        let existing = try readJSON(firefoxPath)
        var document = existing ?? [:]
        var policies = document["policies"] as? [String: Any] ?? [:]
        if document["policies"] != nil, document["policies"] as? [String: Any] == nil {
            throw SystemError(.badFile, "\(firefoxPath): 'policies' is not an object; not changed")
        }
        var preferences = policies["Preferences"] as? [String: Any] ?? [:]
        // The values before the agent's, kept once: installing again must not save its own.
        if try readJSON(statePath) == nil {
            var saved: [String: Any] = ["existed": existing != nil]
            saved["policies"] = policies.filter { Self.firefoxManagedKeys.contains($0.key) }
            saved["preferences"] = preferences.filter { Self.firefoxPreferences.keys.contains($0.key) }
            try writeJSON(saved, to: statePath)
        }
        // A managed key the agent does not set now has what it had before the agent.
        let previous = (try readJSON(statePath))?["policies"] as? [String: Any] ?? [:]
        let ours = firefoxPolicies
        for key in Self.firefoxManagedKeys where ours[key] == nil { policies[key] = previous[key] }
        policies.merge(ours) { _, ours in ours }
        preferences.merge(Self.firefoxPreferences) { _, ours in ours }
        policies["Preferences"] = preferences
        document["policies"] = policies
        try Files.makeDirectory(parent(firefoxPath), mode: 0o755)
        try writeJSON(document, to: firefoxPath)
    }

    /// A JSON object from a file; nil when there is no file. A file that is not a JSON object
    /// is an error: a guardian's policies are never overwritten with ours.
    private func readJSON(_ path: String) throws(SystemError) -> [String: Any]? {
        guard Files.exists(path) else { return nil }
        let bytes = try Files.read(path, limit: 4 << 20)
        guard let dictionary = (try? JSONValue(parsing: bytes))?.any as? [String: Any] else {
            throw SystemError(.badFile, "\(path) is not a JSON object; not changed")
        }
        return dictionary
    }

    private func writeJSON(_ object: [String: Any], to path: String) throws(SystemError) {
        try Files.writeAtomically(Self.json(object).serialized(pretty: true) + [0x0A], to: path, mode: 0o644)
    }

    /// Policies (Swift's own types: strings, booleans, integers, arrays, objects) as JSON.
    private static func json(_ value: Any) -> JSONValue { JSONValue(value) ?? .null }

    private func parent(_ path: String) -> String {
        String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }
}
