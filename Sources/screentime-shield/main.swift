// screentime-shield: the window a child sees when a shielded app is started or brought to the
// front, or a shielded site looked up. The agent starts it in the child's session, as the child,
// through its launcher, and writes what to show as one JSON line on its standard input
// (ShieldWindowContent); later lines update it (ShieldWindowUpdate). Buttons pressed are written
// as JSON lines on standard output (ShieldWindowEvent). Exit status: 0 closed; 64 no or bad input;
// 69 no display.
//
// `screentime-shield --pick` is the picker dialog (PickerItems in, PickerAnswer out), and
// `screentime-shield --guardian` asks a guardian's name and password (GuardianDialogRequest in,
// GuardianCredentials out), for FamilyControls' FamilyActivityPicker and AuthorizationCenter on a
// desktop; each exits 1 when cancelled. `screentime-shield --focus-relay` relays what KWin's
// screentime-focus script tells of the window in front, for the agent (no window).
import CGTK
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

/// Where this program's answers go: its standard output as given, kept on a descriptor of its own
/// that no program it starts inherits (GTK may start a D-Bus daemon that lives on): whoever reads
/// the answers sees their end when this program ends. Standard output itself becomes /dev/null.
enum Answers {
    static let descriptor: Int32 = {
        let kept = fcntl(1, F_DUPFD_CLOEXEC, 3)
        let null = open("/dev/null", O_WRONLY)
        if kept >= 0, null >= 0 { dup2(null, 1) }
        if null >= 0 { close(null) }
        return kept >= 0 ? kept : 1
    }()

    static func write(_ data: Data) { writeAll(descriptor, Array(data) + [10]) }
}

/// Writes all of `bytes` (a pipe may take them in parts); gives up on an error.
func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) {
    var done = 0
    while done < bytes.count {
        let wrote = bytes[done...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if wrote < 0, errno == EINTR { continue }
        guard wrote > 0 else { return }
        done += wrote
    }
}
// First: no one but root may trace this window or write into it (it runs through a lock).
screentime_undumpable()
_ = Answers.descriptor

/// Reads standard input up to the first newline (at most 64 KiB).
func firstLine() -> [UInt8]? {
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while line.count < 65_536 {
        let got = read(0, &byte, 1)
        if got < 0, errno == EINTR { continue }
        guard got == 1 else { return line.isEmpty ? nil : line }
        if byte == 10 { return line }
        line.append(byte)
    }
    return nil
}

func fail(_ message: String, _ status: Int32) -> Never {
    writeAll(2, Array("screentime-shield: \(message)\n".utf8))
    exit(status)
}

let mode = CommandLine.arguments.dropFirst().first
if mode == "--focus-relay" {
    // KWin's focus, from its script over the session bus, relayed to the agent (see CGTK).
    exit(screentime_focus_relay(Answers.descriptor))
}
if mode == "--pick" || mode == "--guardian" {
    guard let line = firstLine() else { fail("expected what to ask as one JSON line on standard input", 64) }
    guard gtk_init_check() != 0 else { fail("cannot open the display (DISPLAY or WAYLAND_DISPLAY)", 69) }
    if mode == "--pick" {
        guard let items = try? JSONDecoder().decode(PickerItems.self, from: Data(line)) else {
            fail("expected PickerItems as JSON", 64)
        }
        let dialog = PickerDialog()
        dialog.show(items)
        while !dialog.finished { g_main_context_iteration(nil, 1) }
        guard let answer = dialog.answer, let data = try? JSONEncoder().encode(answer) else { exit(1) }
        Answers.write(data)
    } else {
        guard let request = try? JSONDecoder().decode(GuardianDialogRequest.self, from: Data(line)) else {
            fail("expected GuardianDialogRequest as JSON", 64)
        }
        let dialog = GuardianDialog()
        dialog.show(request)
        while !dialog.finished { g_main_context_iteration(nil, 1) }
        guard let answer = dialog.answer, let data = try? JSONEncoder().encode(answer) else { exit(1) }
        Answers.write(data)
    }
    exit(0)
}

guard let line = firstLine(), let decoded = try? JSONDecoder().decode(ShieldWindowContent.self, from: Data(line))
else {
    fail("expected what to show as one JSON line on standard input", 64)
}
var content = decoded
let (look, problems) = content.configuration.sanitized()
content.configuration = look
for problem in problems { writeAll(2, Array("screentime-shield: \(problem)\n".utf8)) }

guard gtk_init_check() != 0 else { fail("cannot open the display (DISPLAY or WAYLAND_DISPLAY)", 69) }
if ProcessInfo.processInfo.environment["SCREENTIME_COLOR_SCHEME"] == "dark"
    || screentime_gtk_desktop_prefers_dark() != 0
{
    screentime_gtk_prefer_dark(1)
}

let shield = ShieldWindow(content)
shield.show()

/// Later lines from the agent: a message to show, or close.
final class Updates {
    var buffer: [UInt8] = []
}
let updates = Updates()
_ = g_unix_fd_add(
    0, GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue),
    { _, _, _ in
        var chunk = [UInt8](repeating: 0, count: 4096)
        let got = read(0, &chunk, chunk.count)
        guard got > 0 else { return 0 }  // the agent's end closed: nothing more comes
        updates.buffer += chunk[..<got]
        while let newline = updates.buffer.firstIndex(of: 10) {
            let line = Array(updates.buffer[..<newline])
            updates.buffer.removeSubrange(...newline)
            guard let update = try? JSONDecoder().decode(ShieldWindowUpdate.self, from: Data(line)) else { continue }
            if let message = update.message { shield.show(message: message) }
            if update.close == true { shield.close() }
        }
        if updates.buffer.count > 65_536 { updates.buffer = [] }
        return 1
    }, nil)

while !shield.closed { g_main_context_iteration(nil, 1) }
exit(0)
