/// Who a caller is to the agent (`ping`'s answer): a guardian, an authorized child or individual,
/// a monitor's extension acting for one, or anyone else.
public enum CallerRole: String, Codable, Sendable, Hashable {
    case guardian, child, individual, user
    /// A monitor's extension: it acts for one child or individual, on its client's stores and
    /// monitors only.
    case `extension`
}

/// Where an ask for more time stands.
public enum TimeRequestState: String, Codable, Sendable, Hashable {
    case pending
    /// Granted, until `until`.
    case granted
    /// Granted, and over.
    case expired
    case denied
}

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
