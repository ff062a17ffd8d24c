import LinuxSupport
import ScreenTimeIPC

/// Who sent a request, from SO_PEERCRED and the user database — never from the request.
struct Caller: Sendable {
    enum Role: String, Sendable {
        case guardian, child, individual, user
    }

    var account: UserAccount
    var role: Role

    var isGuardian: Bool { role == .guardian }
}
