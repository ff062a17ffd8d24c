import Foundation
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

/// What the shield window shows for a desktop entry's `Icon=`.
@Suite struct ShieldIconTests {
    private func folder() throws -> String {
        let path = NSTemporaryDirectory() + "shield-icons-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aThemesNameStaysAName() {
        #expect(ShieldPresenter.systemIcon("org.gnome.Chess", pixmaps: []) == "org.gnome.Chess")
        #expect(ShieldPresenter.systemIcon("xterm-color", pixmaps: []) == "xterm-color")
    }

    /// xjump's entry says `Icon=xjump-icon.xpm`, and the file is in /usr/share/pixmaps: GTK's
    /// theme lookup of that name showed the "image missing" picture on the shield.
    @Test func aFileNameIsTheFileInTheSystemsPixmaps() throws {
        let pixmaps = try folder()
        defer { try? FileManager.default.removeItem(atPath: pixmaps) }
        _ = FileManager.default.createFile(atPath: pixmaps + "/xjump-icon.xpm", contents: Data("/* XPM */".utf8))
        #expect(
            ShieldPresenter.systemIcon("xjump-icon.xpm", pixmaps: ["/nonexistent", pixmaps]) == pixmaps
                + "/xjump-icon.xpm")
        // None there: the name without its extension, for the theme.
        #expect(ShieldPresenter.systemIcon("supertux.PNG", pixmaps: [pixmaps]) == "supertux")
        // Not a regular file (a link or a folder of that name): not shown from there.
        try FileManager.default.createSymbolicLink(atPath: pixmaps + "/linked.png", withDestinationPath: "/etc/passwd")
        try FileManager.default.createDirectory(atPath: pixmaps + "/folder.svg", withIntermediateDirectories: false)
        #expect(ShieldPresenter.systemIcon("linked.png", pixmaps: [pixmaps]) == "linked")
        #expect(ShieldPresenter.systemIcon("folder.svg", pixmaps: [pixmaps]) == "folder")
    }

    @Test func pathsOnlyInTheSystemsData() {
        #expect(
            ShieldPresenter.systemIcon("/usr/share/icons/hicolor/48x48/apps/x.png")
                == "/usr/share/icons/hicolor/48x48/apps/x.png")
        #expect(ShieldPresenter.systemIcon("/home/kid/x.png") == nil)
        #expect(ShieldPresenter.systemIcon("/usr/share/../../home/kid/x.png") == nil)
        #expect(ShieldPresenter.systemIcon("icons/x.png") == nil)
        #expect(ShieldPresenter.systemIcon(".png", pixmaps: []) == ".png")
        #expect(ShieldPresenter.systemIcon("", pixmaps: []) == nil)
        #expect(ShieldPresenter.systemIcon(nil) == nil)
    }
}
