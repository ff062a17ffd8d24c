import CGTK
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

/// The other two windows of the desktop's: the picker (`--pick`, Apple's `FamilyActivityPicker`
/// as a dialog) and a guardian's approval (`--guardian`, a name and a password). Each reads what
/// it needs as one JSON line on standard input and writes its answer as one JSON line on standard
/// output; closing it (or Cancel, or Escape) answers nothing and exits 1.
final class PickerDialog {
    private var window: UnsafeMutablePointer<GtkWidget>?
    private var rows: [(check: UnsafeMutablePointer<GtkWidget>, kind: String, key: String, label: String)] = []
    private var domains: [String] = []
    private var domainEntry: UnsafeMutablePointer<GtkWidget>?
    private var domainList: UnsafeMutablePointer<GtkWidget>?
    private var search: UnsafeMutablePointer<GtkWidget>?
    private(set) var finished = false
    private(set) var answer: PickerAnswer?

    func show(_ items: PickerItems) {
        let window = gtk_window_new()!
        self.window = window
        gtk_window_set_title(screentime_gtk_window(window), items.title ?? "Choose apps, categories and sites")
        gtk_window_set_default_size(screentime_gtk_window(window), 520, 560)
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8)!
        for margin in [
            gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start,
            gtk_widget_set_margin_end,
        ] {
            margin(box, 16)
        }
        let search = gtk_search_entry_new()!
        self.search = search
        connect(search, "search-changed") { $0.filter() }
        gtk_box_append(screentime_gtk_box(box), search)
        let list = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2)!
        for application in items.applications {
            add(to: list, kind: "application", key: application.id, label: "\(application.name) (\(application.id))")
        }
        for category in items.categories {
            add(
                to: list, kind: "category", key: category.name,
                label: category.kind == "service"
                    ? "\(category.name) — service (apps and sites)"
                    : "\(category.name) — \(category.kind == "web" ? "web" : "app") category")
        }
        let scroller = gtk_scrolled_window_new()!
        gtk_scrolled_window_set_child(screentime_gtk_scrolled(scroller), list)
        gtk_widget_set_vexpand(scroller, 1)
        gtk_box_append(screentime_gtk_box(box), scroller)
        let domainRow = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6)!
        let entry = gtk_entry_new()!
        domainEntry = entry
        gtk_entry_set_placeholder_text(screentime_gtk_entry(entry), "a site: youtube.com")
        gtk_widget_set_hexpand(entry, 1)
        connect(entry, "activate") { $0.addDomain() }
        let add = gtk_button_new_with_label("Add site")!
        connect(add, "clicked") { $0.addDomain() }
        gtk_box_append(screentime_gtk_box(domainRow), entry)
        gtk_box_append(screentime_gtk_box(domainRow), add)
        gtk_box_append(screentime_gtk_box(box), domainRow)
        let added = gtk_label_new("")!
        domainList = added
        gtk_label_set_wrap(screentime_gtk_label(added), 1)
        gtk_box_append(screentime_gtk_box(box), added)
        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        let cancel = gtk_button_new_with_label("Cancel")!
        connect(cancel, "clicked") { $0.finish(nil) }
        let done = gtk_button_new_with_label("Done")!
        gtk_widget_add_css_class(done, "suggested-action")
        connect(done, "clicked") { dialog in dialog.finish(dialog.picked()) }
        gtk_box_append(screentime_gtk_box(buttons), cancel)
        gtk_box_append(screentime_gtk_box(buttons), done)
        gtk_box_append(screentime_gtk_box(box), buttons)
        gtk_window_set_child(screentime_gtk_window(window), box)
        DialogSignals.onClose(window, self) { $0.finish(nil) }
        DialogSignals.shortcut(window, key: GDK_KEY_Escape, self) { $0.finish(nil) }
        DialogSignals.shortcut(window, key: GDK_KEY_Return, control: true, self) { dialog in
            dialog.finish(dialog.picked())
        }
        gtk_window_present(screentime_gtk_window(window))
    }

    private func add(to list: UnsafeMutablePointer<GtkWidget>, kind: String, key: String, label: String) {
        let check = gtk_check_button_new_with_label(label)!
        gtk_box_append(screentime_gtk_box(list), check)
        rows.append((check, kind, key, label))
    }

    private func filter() {
        guard let search else { return }
        let text = String(cString: gtk_editable_get_text(screentime_gtk_editable(search))).lowercased()
        for row in rows {
            gtk_widget_set_visible(row.check, text.isEmpty || row.label.lowercased().contains(text) ? 1 : 0)
        }
    }

    private func addDomain() {
        guard let domainEntry else { return }
        let text = String(cString: gtk_editable_get_text(screentime_gtk_editable(domainEntry)))
            .trimmingSpaces()
        guard !text.isEmpty, text.contains("."), !domains.contains(text) else { return }
        domains.append(text)
        gtk_editable_set_text(screentime_gtk_editable(domainEntry), "")
        if let domainList {
            gtk_label_set_text(screentime_gtk_label(domainList), "Sites: " + domains.joined(separator: ", "))
        }
    }

    private func picked() -> PickerAnswer {
        var answer = PickerAnswer(applications: [], categories: [], domains: domains)
        for row in rows where gtk_check_button_get_active(screentime_gtk_check(row.check)) != 0 {
            if row.kind == "application" {
                answer.applications.append(row.key)
            } else {
                answer.categories.append(row.key)
            }
        }
        return answer
    }

    private func finish(_ answer: PickerAnswer?) {
        guard !finished else { return }
        self.answer = answer
        finished = true
        if let window { gtk_window_destroy(screentime_gtk_window(window)) }
        window = nil
    }

    private func connect(
        _ widget: UnsafeMutablePointer<GtkWidget>, _ signal: String, _ action: @escaping (PickerDialog) -> Void
    ) {
        DialogSignals.connect(widget, signal, self, action)
    }
}

/// A guardian's name and password, asked in the child's session.
final class GuardianDialog {
    private var window: UnsafeMutablePointer<GtkWidget>?
    private var name: UnsafeMutablePointer<GtkWidget>?
    private var password: UnsafeMutablePointer<GtkWidget>?
    private(set) var finished = false
    private(set) var answer: GuardianCredentials?

    func show(_ request: GuardianDialogRequest) {
        let window = gtk_window_new()!
        self.window = window
        gtk_window_set_title(screentime_gtk_window(window), request.title ?? "A guardian must approve")
        gtk_window_set_default_size(screentime_gtk_window(window), 420, 240)
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 10)!
        for margin in [
            gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start,
            gtk_widget_set_margin_end,
        ] {
            margin(box, 20)
        }
        let text = gtk_label_new(request.text ?? "A guardian types their name and password here.")!
        gtk_label_set_wrap(screentime_gtk_label(text), 1)
        gtk_box_append(screentime_gtk_box(box), text)
        let name = gtk_entry_new()!
        self.name = name
        gtk_entry_set_placeholder_text(screentime_gtk_entry(name), "Guardian's user name")
        if let given = request.guardian { gtk_editable_set_text(screentime_gtk_editable(name), given) }
        gtk_box_append(screentime_gtk_box(box), name)
        let password = gtk_password_entry_new()!
        self.password = password
        DialogSignals.connect(password, "activate", self) { $0.approve() }
        gtk_box_append(screentime_gtk_box(box), password)
        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        let cancel = gtk_button_new_with_label("Cancel")!
        DialogSignals.connect(cancel, "clicked", self) { $0.finish(nil) }
        let approve = gtk_button_new_with_label("Approve")!
        gtk_widget_add_css_class(approve, "suggested-action")
        DialogSignals.connect(approve, "clicked", self) { $0.approve() }
        gtk_box_append(screentime_gtk_box(buttons), cancel)
        gtk_box_append(screentime_gtk_box(buttons), approve)
        gtk_box_append(screentime_gtk_box(box), buttons)
        gtk_window_set_child(screentime_gtk_window(window), box)
        DialogSignals.onClose(window, self) { $0.finish(nil) }
        DialogSignals.shortcut(window, key: GDK_KEY_Escape, self) { $0.finish(nil) }
        gtk_window_present(screentime_gtk_window(window))
        gtk_widget_grab_focus(request.guardian == nil ? name : password)
    }

    private func approve() {
        guard let name, let password else { return }
        finish(
            GuardianCredentials(
                user: String(cString: gtk_editable_get_text(screentime_gtk_editable(name))),
                password: String(cString: gtk_editable_get_text(screentime_gtk_editable(password)))))
    }

    private func finish(_ answer: GuardianCredentials?) {
        guard !finished else { return }
        self.answer = answer
        finished = true
        if let window { gtk_window_destroy(screentime_gtk_window(window)) }
        window = nil
    }
}

/// Signals to Swift closures: each connection's closure is kept under a number, passed to GLib as
/// the handler's data; one C function per signature looks it up. The main thread alone uses them.
enum DialogSignals {
    nonisolated(unsafe) static var actions: [Int: () -> Void] = [:]
    nonisolated(unsafe) static var next = 1

    private static func keep(_ action: @escaping () -> Void) -> UnsafeMutableRawPointer? {
        let number = next
        next += 1
        actions[number] = action
        return UnsafeMutableRawPointer(bitPattern: number)
    }

    /// A signal with no arguments and no result (`clicked`, `activate`, `search-changed`).
    static func connect<Target: AnyObject>(
        _ widget: UnsafeMutablePointer<GtkWidget>, _ signal: String, _ target: Target,
        _ action: @escaping (Target) -> Void
    ) {
        let data = keep { [weak target] in if let target { action(target) } }
        let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            DialogSignals.actions[Int(bitPattern: data)]?()
        }
        _ = screentime_gtk_connect(
            UnsafeMutableRawPointer(widget), signal, unsafeBitCast(handler, to: GCallback.self), data)
    }

    /// A key pressed anywhere in the window.
    static func shortcut<Target: AnyObject>(
        _ window: UnsafeMutablePointer<GtkWidget>, key: Int32, control: Bool = false, _ target: Target,
        _ action: @escaping (Target) -> Void
    ) {
        let data = keep { [weak target] in if let target { action(target) } }
        screentime_gtk_add_shortcut(
            window, guint(key), control ? GDK_CONTROL_MASK : GdkModifierType(rawValue: 0),
            { _, _, data in
                DialogSignals.actions[Int(bitPattern: data)]?()
                return 1
            }, data)
    }

    /// The window manager's close button: the action, and the window is not destroyed by GTK (the
    /// action does it).
    static func onClose<Target: AnyObject>(
        _ window: UnsafeMutablePointer<GtkWidget>, _ target: Target, _ action: @escaping (Target) -> Void
    ) {
        let data = keep { [weak target] in if let target { action(target) } }
        let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean = { _, data in
            DialogSignals.actions[Int(bitPattern: data)]?()
            return 1
        }
        _ = screentime_gtk_connect(
            UnsafeMutableRawPointer(window), "close-request", unsafeBitCast(handler, to: GCallback.self), data)
    }
}
