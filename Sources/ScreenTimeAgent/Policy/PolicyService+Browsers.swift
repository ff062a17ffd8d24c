import FoundationEssentials
import LinuxSupport
import ScreenTimeIPC

// What the browsers on this PC may do while a child is authorized.
extension PolicyService {
    /// `browsers`: the settings, for anyone; changed by a guardian. The whole change is checked
    /// before anything is kept: one bad extension ID changes nothing.
    func browsers(_ request: BrowsersRequest, caller: Caller) throws -> BrowsersReply {
        var (settings, changedBy, changedAt) = try database.browserSettings()
        if request.changes {
            guard caller.isGuardian else {
                throw ScreenTimeIPCError(.notAllowed, "only a guardian changes what the browsers may do")
            }
            for id in (request.allowExtensions ?? []) + (request.removeExtensions ?? [])
            where !BrowserPolicies.isExtensionID(id) {
                throw ScreenTimeIPCError(
                    .invalidArgument,
                    "'\(id.prefix(80))' is not an extension's ID (Chromium: 32 letters a to p; Firefox: name@example.org or {GUID})"
                )
            }
            if let allowed = request.privateWindows { settings.privateWindows = allowed }
            var list = settings.extensions ?? []
            for id in request.allowExtensions ?? [] where !list.contains(id) { list.append(id) }
            list.removeAll { (request.removeExtensions ?? []).contains($0) }
            guard list.count <= BrowserSettings.maximumExtensions else {
                throw ScreenTimeIPCError(
                    .invalidArgument, "at most \(BrowserSettings.maximumExtensions) extensions can be on the list")
            }
            switch request.anyExtensions {
            case true?: settings.extensions = nil
            case false?: settings.extensions = list
            case nil:
                // Adding to the list limits installs to it; taking from it keeps what was.
                settings.extensions =
                    request.allowExtensions != nil || settings.extensions != nil ? list : settings.extensions
            }
            let date = now()
            try database.saveBrowserSettings(settings, by: caller.account.name, at: date)
            (changedBy, changedAt) = (caller.account.name, date)
            logger.notice(
                "browser settings changed",
                metadata: [
                    "by": "\(caller.account.name)", "privateWindows": "\(settings.privateWindows)",
                    "extensions": "\(settings.extensions.map { "\($0.count) allowed" } ?? "any")",
                ])
            domainShield?.browserSettingsChanged(settings)
        }
        let inForce = try database.authorizations().contains { $0.status == .approved && $0.member == .child }
        return BrowsersReply(settings: settings, inForce: inForce, changedBy: changedBy, changedAt: changedAt)
    }
}
