import LinuxSupport
import ScreenTimeCore
import ScreenTimeIPC

/// Who sent a request, from SO_PEERCRED and the user database — never from the request — or,
/// for an extension the agent started, from the channel it was given.
struct Caller: Sendable {
    /// What the caller is, as `ping` tells it.
    typealias Role = CallerRole

    var account: UserAccount
    var role: Role
    /// The only client an extension may act as.
    var authority: ClientID? = nil
    /// The program the caller runs, as the kernel tells it: its client.
    var program: ClientProgram? = nil

    var isGuardian: Bool { role == .guardian }
}
