import FoundationEssentials

extension ApplicationIdentity {
    /// The application a process belongs to by the systemd unit its desktop launched it in, read
    /// from a line of `/proc/PID/cgroup` (or the path alone); nil when the unit names none.
    ///
    /// Desktops that follow systemd's XDG convention start each application in a unit of its own:
    /// `app[-<launcher>]-<ApplicationID>-<random>.scope` or
    /// `app[-<launcher>]-<ApplicationID>[@<random>].service`, with `-` in the ID escaped as `\x2d`
    /// (`app-gnome-org.gnome.Chess-4711.scope`, `app-flatpak-org.mozilla.firefox-12.scope`).
    /// Snaps run in `snap.<name>.<app>-<uuid>.scope`. The innermost matching unit wins.
    public static func fromCgroup(_ line: String) -> ApplicationIdentity? {
        // "0::/user.slice/…" → the path; a bare path is taken as it is.
        let path = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).last ?? Substring(line)
        for component in path.split(separator: "/").reversed() {
            if let identity = fromUnit(String(component)) { return identity }
        }
        return nil
    }

    private static func fromUnit(_ unit: String) -> ApplicationIdentity? {
        if unit.hasPrefix("snap."), unit.hasSuffix(".scope") {
            let parts = unit.dropFirst("snap.".count).split(separator: ".")
            guard parts.count >= 3, let name = parts.first else { return nil }
            return try? snap(name: String(name))
        }
        var body: Substring
        if unit.hasPrefix("app-"), unit.hasSuffix(".scope") {
            body = unit.dropFirst(4).dropLast(".scope".count)
            // The trailing random part: digits or a hex string, after the last dash.
            guard let dash = body.lastIndex(of: "-") else { return nil }
            body = body[..<dash]
        } else if unit.hasPrefix("app-"), unit.hasSuffix(".service") {
            body = unit.dropFirst(4).dropLast(".service".count)
            if let at = body.lastIndex(of: "@") { body = body[..<at] }
        } else {
            return nil
        }
        // What is left is "<launcher>-<ID>" or "<ID>"; the ID's own dashes are escaped, so a dash
        // here ends the launcher.
        if let dash = body.firstIndex(of: "-") { body = body[body.index(after: dash)...] }
        let id = String(body.replacing("\\x2d", with: "-"))
        return try? desktopEntry(id: id)
    }
}
