import CGTK
import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC

/// The shield the child sees over a shielded app: its icon, a title and subtitle, a primary
/// button (by default "OK": the window closes, the app stays frozen) and an optional secondary one
/// (by default "Ask for more time"). Its window title is the shield's title text, so assistive
/// tools (and tests) find it; the keyboard alone works (Tab, Enter, Escape); it follows the
/// desktop's light or dark preference unless the configuration sets colours.
///
/// It runs as the child, so everything it says (a button pressed) is the child's word, and
/// killing it changes nothing: the agent shows it again at the next start or focus.
final class ShieldWindow {
    let content: ShieldWindowContent
    private var window: UnsafeMutablePointer<GtkWidget>?
    private var message: UnsafeMutablePointer<GtkWidget>?
    private(set) var closed = false

    init(_ content: ShieldWindowContent) {
        self.content = content
    }

    /// Builds and shows the window.
    func show() {
        let look = content.configuration
        let window = gtk_window_new()!
        self.window = window
        let title = look.title?.text ?? "\(content.name) is shielded"
        gtk_window_set_title(screentime_gtk_window(window), title)
        gtk_window_set_default_size(screentime_gtk_window(window), 520, content.kind == "application" ? 400 : 200)
        gtk_window_set_resizable(screentime_gtk_window(window), 0)
        gtk_widget_add_css_class(window, "screentime-shield")

        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 14)!
        for margin in [gtk_widget_set_margin_top, gtk_widget_set_margin_bottom] { margin(box, 32) }
        for margin in [gtk_widget_set_margin_start, gtk_widget_set_margin_end] { margin(box, 40) }
        gtk_widget_set_valign(box, GTK_ALIGN_CENTER)

        let iconName = look.icon ?? (content.kind == "application" ? "application-x-executable" : "web-browser")
        let icon =
            iconName.hasPrefix("/") ? gtk_image_new_from_file(iconName)! : gtk_image_new_from_icon_name(iconName)!
        gtk_image_set_pixel_size(screentime_gtk_image(icon), content.kind == "application" ? 96 : 48)
        gtk_box_append(screentime_gtk_box(box), icon)

        let titleLabel = label(title, classes: ["title-1", "screentime-title"])
        gtk_box_append(screentime_gtk_box(box), titleLabel)
        let subtitle =
            look.subtitle?.text
            ?? (content.kind == "application"
                ? "Your guardian chose to shield it for now." : "Your guardian chose to shield this site.")
        gtk_box_append(screentime_gtk_box(box), label(subtitle, classes: ["screentime-subtitle"]))
        let message = label("", classes: ["dim-label", "screentime-message"])
        gtk_widget_set_visible(message, 0)
        self.message = message
        gtk_box_append(screentime_gtk_box(box), message)

        let buttons = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8)!
        gtk_widget_set_margin_top(buttons, 10)
        let primary = gtk_button_new_with_label(look.primaryButtonLabel?.text ?? "OK")!
        gtk_widget_add_css_class(primary, "suggested-action")
        gtk_widget_add_css_class(primary, "screentime-primary")
        connect(primary, "clicked", .primary)
        gtk_box_append(screentime_gtk_box(buttons), primary)
        if let secondary = look.secondaryButtonLabel {
            let button = gtk_button_new_with_label(secondary.text)!
            gtk_widget_add_css_class(button, "flat")
            gtk_widget_add_css_class(button, "screentime-secondary")
            connect(button, "clicked", .secondary)
            gtk_box_append(screentime_gtk_box(buttons), button)
        }
        gtk_box_append(screentime_gtk_box(box), buttons)
        gtk_window_set_child(screentime_gtk_window(window), box)

        style(look)
        // Escape is the primary button, as closing a dialog is; Enter activates the focused one.
        let keys = gtk_event_controller_key_new()!
        _ = screentime_gtk_connect(
            UnsafeMutableRawPointer(keys), "key-pressed", unsafeBitCast(keyPressed, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque())
        gtk_widget_add_controller(window, keys)
        _ = screentime_gtk_connect(
            UnsafeMutableRawPointer(window), "close-request", unsafeBitCast(closeRequested, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque())
        gtk_window_set_default_widget(screentime_gtk_window(window), primary)
        gtk_widget_grab_focus(primary)
        gtk_window_present(screentime_gtk_window(window))
        if let seconds = content.closesAfter {
            g_timeout_add_seconds(
                guint(max(1, seconds)),
                { data in
                    guard let data else { return 0 }
                    Unmanaged<ShieldWindow>.fromOpaque(data).takeUnretainedValue().close()
                    return 0
                }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    enum Button: String {
        case primary, secondary
    }

    /// A button was pressed: the agent is told; the primary button closes the window.
    func pressed(_ button: Button) {
        let event = ShieldWindowEvent(pressed: button.rawValue)
        if let data = try? JSONEncoder().encode(event) {
            Answers.write(data)
        }
        if button == .primary, content.primaryCloses { close() }
    }

    /// Shows a line from the agent (what a guardian decided).
    func show(message text: String) {
        guard let message else { return }
        gtk_label_set_text(screentime_gtk_label(message), text)
        gtk_widget_set_visible(message, 1)
    }

    func close() {
        guard !closed else { return }
        closed = true
        if let window { gtk_window_destroy(screentime_gtk_window(window)) }
        window = nil
    }

    // MARK: building

    private func label(_ text: String, classes: [String]) -> UnsafeMutablePointer<GtkWidget> {
        let label = gtk_label_new(text)!
        gtk_label_set_wrap(screentime_gtk_label(label), 1)
        gtk_label_set_justify(screentime_gtk_label(label), GTK_JUSTIFY_CENTER)
        gtk_label_set_max_width_chars(screentime_gtk_label(label), 48)
        for name in classes { gtk_widget_add_css_class(label, name) }
        return label
    }

    private func connect(_ button: UnsafeMutablePointer<GtkWidget>, _ signal: String, _ which: Button) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void =
            which == .primary
            ? { _, data in
                guard let data else { return }
                Unmanaged<ShieldWindow>.fromOpaque(data).takeUnretainedValue().pressed(.primary)
            }
            : { _, data in
                guard let data else { return }
                Unmanaged<ShieldWindow>.fromOpaque(data).takeUnretainedValue().pressed(.secondary)
            }
        _ = screentime_gtk_connect(
            UnsafeMutableRawPointer(button), signal, unsafeBitCast(callback, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque())
    }

    /// The configuration's colours, as CSS on this window only.
    private func style(_ look: ShieldConfigurationData) {
        var css = ""
        // Text with no colour of its own, on a background that has one: black or white, whichever
        // reads on it.
        let contrast = look.backgroundColor.map { Self.isDark($0) ? "#ffffff" : "#1e1e1e" }
        if let background = look.backgroundColor {
            css += "window.screentime-shield { background-color: \(background); }\n"
        }
        if let color = look.title?.color ?? contrast { css += ".screentime-title { color: \(color); }\n" }
        if let color = look.subtitle?.color ?? contrast {
            css += ".screentime-subtitle, .screentime-message { color: \(color); }\n"
        }
        if let color = look.primaryButtonBackgroundColor {
            css += "button.screentime-primary { background: \(color); background-image: none; }\n"
        }
        if let color = look.primaryButtonLabel?.color {
            css += "button.screentime-primary label { color: \(color); }\n"
        }
        if let color = look.secondaryButtonLabel?.color ?? contrast {
            css += "button.screentime-secondary label { color: \(color); }\n"
        }
        guard !css.isEmpty, let display = gdk_display_get_default() else { return }
        let provider = gtk_css_provider_new()!
        gtk_css_provider_load_from_data(provider, css, -1)
        gtk_style_context_add_provider_for_display(
            display, screentime_gtk_style_provider(provider), guint(GTK_STYLE_PROVIDER_PRIORITY_APPLICATION))
    }
}

/// Escape presses the primary button.
private let keyPressed:
    @convention(c) (UnsafeMutableRawPointer?, guint, guint, GdkModifierType, UnsafeMutableRawPointer?)
        -> gboolean = { _, keyval, _, _, data in
            guard let data, keyval == guint(GDK_KEY_Escape) else { return 0 }
            Unmanaged<ShieldWindow>.fromOpaque(data).takeUnretainedValue().pressed(.primary)
            return 1
        }

/// The window manager's close button: as the primary button.
private let closeRequested: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean = {
    _, data in
    guard let data else { return 0 }
    let shield = Unmanaged<ShieldWindow>.fromOpaque(data).takeUnretainedValue()
    if !shield.closed { shield.pressed(.primary) }
    return 1
}

extension ShieldWindow {
    /// Whether a `#rrggbb` colour is dark (its relative luminance under one half).
    static func isDark(_ color: String) -> Bool {
        let hex = color.dropFirst()
        guard hex.count == 6, let value = UInt32(hex, radix: 16) else { return false }
        let (red, green, blue) = (Double(value >> 16 & 0xff), Double(value >> 8 & 0xff), Double(value & 0xff))
        return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255 < 0.5
    }
}
