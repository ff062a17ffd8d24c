import ScreenTimeCore
import Testing

/// The application a process belongs to, by the systemd unit its desktop started it in.
@Suite struct ApplicationIdentityCgroupTests {
    @Test(arguments: [
        (
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.gnome.Chess-4711.scope",
            ApplicationIdentity.desktopEntry("org.gnome.Chess")
        ),
        (
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-flatpak-org.mozilla.firefox-12345.scope",
            .desktopEntry("org.mozilla.firefox")
        ),
        (
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.kde.konsole-3a1f9e.scope",
            .desktopEntry("org.kde.konsole")
        ),
        (
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-my\\x2dgame-99.scope",
            .desktopEntry("my-game")
        ),
        (
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-kde-org.kde.dolphin@a1b2.service",
            .desktopEntry("org.kde.dolphin")
        ),
        (
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.firefox.firefox-9f1c2d.scope",
            .snap("firefox")
        ),
        (
            "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.gnome.Mines-7.scope/sub",
            .desktopEntry("org.gnome.Mines")
        ),
    ])
    func unitsNameTheirApplication(line: String, expected: ApplicationIdentity) {
        #expect(ApplicationIdentity.fromCgroup(line) == expected)
    }

    @Test(arguments: [
        "0::/user.slice/user-1000.slice/session-3.scope",
        "0::/user.slice/user-1000.slice/user@1000.service/init.scope",
        "0::/system.slice/cron.service",
        "0::/",
        "",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-.scope",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-bad/id-1.scope",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.x.scope",
    ])
    func otherUnitsNameNone(line: String) {
        #expect(ApplicationIdentity.fromCgroup(line) == nil)
    }
}
