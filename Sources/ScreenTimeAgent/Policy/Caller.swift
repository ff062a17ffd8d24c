import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Who sent a request, from SO_PEERCRED and the user database — never from the request — or,
/// for an extension the agent started, from the channel it was given.
struct Caller: Sendable {
    enum Role: String, Sendable {
        case guardian, child, individual, user
        /// A monitor's extension: it acts for `account` (a child or an individual), on its
        /// client's stores and monitors only.
        case `extension`
    }

    var account: UserAccount
    var role: Role
    /// The only client an extension may act as.
    var authority: ClientID? = nil
    /// The program the caller runs, as the kernel tells it: its client.
    var program: ClientProgram? = nil

    var isGuardian: Bool { role == .guardian }
}
