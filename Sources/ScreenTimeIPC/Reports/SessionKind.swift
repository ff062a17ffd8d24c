/// What kind of session time is counted in.
public enum SessionKind: String, Codable, Sendable, Hashable {
    /// An X11 display, its focus read by the agent.
    case x11
    /// A sway session, its focus read through sway's IPC.
    case sway
    /// Another Wayland compositor: its focus told by its extension, or counted the conservative way.
    case wayland
    /// Text logins (a console, ssh, su): their whole time counts.
    case tty, ssh, su
}
