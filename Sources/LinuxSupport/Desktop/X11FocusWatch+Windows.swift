import CLinuxShim
import CXCB
import FoundationEssentials
import Glibc
import Synchronization

// What is in front.
extension X11FocusWatch {
    /// What is in front now; nil when no window is active and that has not lasted (`settled`).
    /// `pointer`: a button or wheel was used lately, or the pointer kept moving, and the window
    /// under the pointer is in use too (one that never takes the keyboard, shown beside the
    /// active one, is played with the mouse).
    func inFront(settled: Bool, pointer: Bool) -> (windows: [Window], conservative: Bool)? {
        if readsFocus {
            let active = cxcb_active_window(session)
            if active != 0, cxcb_is_viewable(session, active) != 0 {
                var windows = [window(active)]
                if pointer {
                    // The window the clicks go to, and the one shown there (a window above it
                    // that lets them through, its input shape empty, shows what she plays); not
                    // the window manager's frames (a click on a title bar).
                    let manager = cxcb_frame_owner_pid(session, active)
                    for under in [cxcb_window_under_pointer(session), cxcb_window_shown_under_pointer(session)]
                    where under != 0 {
                        let found = window(under)
                        if found.pid == nil || found.pid != manager { add(found, to: &windows) }
                    }
                }
                let keyboard = cxcb_input_focus(session)
                if keyboard != 0, keyboard != active, cxcb_is_viewable(session, keyboard) != 0 {
                    add(window(keyboard), to: &windows)
                }
                // Another client's window shown inside the active one (reparented into it: a game
                // inside an allowed app's window) is in front too; more inside it than the agent
                // looks at (a window a child filled with decoys): every client of the display.
                var everyClient = !addShown(inside: active, to: &windows)
                // Another client holding the keyboard (a grab: the focus stays, the keys go to
                // it) is in front too, with what shows inside its window; every client, when
                // where the keys go is not known.
                var grabbing: UInt32 = 0
                switch cxcb_keyboard_grab(session, &grabbing) {
                case 1 where grabbing != 0:
                    add(window(grabbing), to: &windows)
                    if !addShown(inside: grabbing, to: &windows) { everyClient = true }
                case 2: everyClient = true
                default: break
                }
                if everyClient { addClients(to: &windows) }
                return (windows, false)
            }
            if !settled { return nil }
        }
        var ids = [UInt32](repeating: 0, count: 512)
        let count = cxcb_mapped_windows(session, &ids, ids.count)
        var windows: [Window] = []
        for id in ids.prefix(count) {
            // One whose client's pid the server cannot tell counts too (once), as unidentified.
            let found = window(id)
            if !windows.contains(where: { $0.pid == found.pid }) { windows.append(found) }
        }
        // And every client of the display: a window shown inside another's (or past the 512
        // looked at) is a client's too.
        addClients(to: &windows)
        return (windows, true)
    }

    /// `window`, unless a window of its process is there already.
    func add(_ window: Window, to windows: inout [Window]) {
        if !windows.contains(where: { $0.pid == window.pid }) { windows.append(window) }
    }

    /// The windows other clients show inside `window`; false when more is inside than is looked at.
    func addShown(inside window: UInt32, to windows: inout [Window]) -> Bool {
        var inside = [UInt32](repeating: 0, count: 16)
        var complete: Int32 = 1
        let count = cxcb_foreign_windows_inside(session, window, &inside, inside.count, &complete)
        for id in inside.prefix(count) { add(self.window(id), to: &windows) }
        return complete != 0
    }

    /// Every client of the display the server can name the pid of (not the server itself), once,
    /// besides `windows`.
    func addClients(to windows: inout [Window]) {
        var pids = [Int32](repeating: 0, count: 512)
        let count = cxcb_client_pids(session, &pids, pids.count)
        for pid in pids.prefix(count) where pid != server.pid && !windows.contains(where: { $0.pid == pid }) {
            windows.append(Window(id: 0, pid: pid))
        }
    }

    /// A window and its client's pid, as the server knows it: one round trip, on every look at
    /// what is in front (what the client claims of itself is not asked).
    func window(_ id: UInt32) -> Window {
        let pid = cxcb_window_pid(session, id)
        return Window(id: id, pid: pid > 0 ? pid : nil)
    }
}
