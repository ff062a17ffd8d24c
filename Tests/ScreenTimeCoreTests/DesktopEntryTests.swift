import ScreenTimeCore
import Testing

@Suite struct DesktopEntryTests {
    @Test func readsTheMainGroup() throws {
        let text = """
            # a comment
            [Desktop Entry]
            Type=Application
            Name=GNOME Chess
            Name[de]=Schach
            Exec=gnome-chess %U
            TryExec=gnome-chess
            Categories=GNOME;GTK;Game;BoardGame;
            Keywords=chess;

            [Desktop Action New]
            Name=New Game
            Exec=gnome-chess --new
            """
        let entry = try #require(DesktopEntry(id: "org.gnome.Chess", parsing: text))
        #expect(entry.name == "GNOME Chess")
        #expect(entry.categories == ["GNOME", "GTK", "Game", "BoardGame"])
        #expect(entry.exec == "gnome-chess %U")
        #expect(entry.executable == "gnome-chess")
        #expect(entry.tryExec == "gnome-chess")
        #expect(entry.isListedApplication)
        #expect(entry.identity == .desktopEntry("org.gnome.Chess"))
    }

    @Test func escapesAndQuotes() throws {
        let entry = try #require(
            DesktopEntry(
                id: "x",
                parsing:
                    "[Desktop Entry]\nType=Application\nName=Two\\sWords\nExec=env FOO=1 \"/opt/My App/run\" --x\nCategories=A\\;B;C"
            ))
        #expect(entry.name == "Two Words")
        #expect(entry.executable == "/opt/My App/run")
        #expect(entry.categories == ["A;B", "C"])
    }

    @Test func hiddenAndNoDisplayAreNotListed() throws {
        let hidden = try #require(
            DesktopEntry(id: "h", parsing: "[Desktop Entry]\nType=Application\nName=H\nHidden=true"))
        #expect(hidden.hidden && !hidden.isListedApplication)
        let helper = try #require(
            DesktopEntry(id: "n", parsing: "[Desktop Entry]\nType=Application\nName=N\nNoDisplay=true"))
        #expect(!helper.isListedApplication)
        let link = try #require(DesktopEntry(id: "l", parsing: "[Desktop Entry]\nType=Link\nName=L\nURL=https://x"))
        #expect(!link.isListedApplication)
        #expect(DesktopEntry(id: "e", parsing: "no group here") == nil)
        #expect(DesktopEntry(id: "e", parsing: "[Other]\nName=x") == nil)
    }

    @Test func idsFromPaths() {
        #expect(DesktopEntry.id(forRelativePath: "org.gnome.Chess.desktop") == "org.gnome.Chess")
        #expect(DesktopEntry.id(forRelativePath: "kde4/dolphin.desktop") == "kde4-dolphin")
    }
}
