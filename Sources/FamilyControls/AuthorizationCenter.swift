import FoundationEssentials
import Glibc
import ScreenTimeClient
public import ScreenTimeCore
public import ScreenTimeIPC
import Synchronization

/// How a user takes part (Apple's `FamilyControlsMember`): `.child` (a guardian approves and
/// only a guardian undoes it) or `.individual` (the user restricts themself).
public typealias FamilyControlsMember = ScreenTimeCore.FamilyControlsMember
/// Apple's `AuthorizationStatus`: `.notDetermined`, `.denied`, `.approved`.
public typealias AuthorizationStatus = ScreenTimeCore.AuthorizationStatus
/// What a guardian picked (Apple's `FamilyActivitySelection`): the same JSON as `screentime pick`.
public typealias FamilyActivitySelection = ScreenTimeCore.FamilyActivitySelection

/// Authorizing this program's user (Apple's `AuthorizationCenter`).
///
/// `requestAuthorization(for: .individual)` restricts the user running the program, with no
/// guardian; `.child`, run in the child's session, asks a guardian's name and password on the
/// terminal (as `screentime authorize` does there) — or, run by a guardian, authorizes the `user`
/// named. `authorizationStatus` is `.notDetermined` until a request in this process succeeds, as
/// Apple documents; then what the agent answered.
public final class AuthorizationCenter: @unchecked Sendable {
    /// The center of this process.
    public static let shared = AuthorizationCenter()

    /// What the last request answered, and the agent's words when it failed.
    private let state = Mutex<(status: AuthorizationStatus, failure: String?)>((.notDetermined, nil))
    /// The agent's socket (nil: `$SCREENTIME_SOCKET`, else the default).
    public var socket: String?

    public init(socket: String? = nil) { self.socket = socket }

    /// `.notDetermined` until a request in this process succeeded.
    public var authorizationStatus: AuthorizationStatus {
        state.withLock { $0.status }
    }

    /// Authorizes the user running this program (or, for a guardian, `user`) as `member`. Throws a
    /// `FamilyControlsError`.
    public func requestAuthorization(for member: FamilyControlsMember, user: String? = nil) async throws {
        let client = ScreenTimeClient(socket: socket)
        var request = AuthorizeRequest(user: user, member: member)
        do throws(ScreenTimeIPCError) {
            if member == .child {
                let me = try client.send(PingRequest())
                if me.role != .guardian {
                    request.user = request.user ?? String(me.callerUID)
                    guard let credentials = GuardianPrompt.ask(name: nil) else {
                        throw ScreenTimeIPCError(.authorizationCanceled, "the guardian cancelled")
                    }
                    request.guardian = credentials
                }
            }
            let reply = try client.send(request)
            record(reply.status)
        } catch {
            if error.code == .notAllowed { record(.denied) }
            state.withLock { $0.failure = error.message }
            throw FamilyControlsError(error)
        }
    }

    private func record(_ new: AuthorizationStatus) {
        state.withLock { $0 = (new, nil) }
    }

    /// The agent's words for the last failed request (nil after a success). Not Apple's.
    public var lastErrorMessage: String? { state.withLock { $0.failure } }

    /// Revokes the authorization of the user running this program (an individual's own; a
    /// child's only as a guardian, with `user`).
    public func revokeAuthorization(
        user: String? = nil, completionHandler: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        do throws(ScreenTimeIPCError) {
            _ = try ScreenTimeClient(socket: socket).send(RevokeRequest(user: user))
            record(.notDetermined)
            completionHandler(.success(()))
        } catch {
            state.withLock { $0.failure = error.message }
            completionHandler(.failure(FamilyControlsError(error)))
        }
    }
}

/// Why authorizing failed (Apple's `FamilyControlsError`). The agent's own words for the last
/// failure are in `AuthorizationCenter.lastErrorMessage`.
public enum FamilyControlsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The guardian cancelled (or gave no password).
    case authorizationCanceled
    /// Another authorization is in force (an individual asked while a guardian's is, or the other way round).
    case authorizationConflict
    /// The account cannot be authorized that way (a guardian as a child, a system account).
    case invalidAccountType
    /// What was asked was not right.
    case invalidArgument
    /// The agent cannot be reached, or is busy.
    case networkError
    /// Not allowed: a wrong password, too many tries, or the caller may not do this.
    case restricted
    /// The agent cannot authorize now.
    case unavailable
    /// No way to ask a guardian here.
    case authenticationMethodUnavailable

    init(_ error: ScreenTimeIPCError) {
        switch error.code {
        case .authorizationCanceled: self = .authorizationCanceled
        case .authorizationConflict: self = .authorizationConflict
        case .invalidAccountType: self = .invalidAccountType
        case .agentUnreachable, .busy: self = .networkError
        case .notAllowed, .restricted, .authenticationFailed, .tooManyAttempts: self = .restricted
        case .unavailable: self = .unavailable
        default: self = .invalidArgument
        }
    }

    public var description: String {
        switch self {
        case .authorizationCanceled: "the guardian cancelled"
        case .authorizationConflict: "another authorization is in force"
        case .invalidAccountType: "this account cannot be authorized that way"
        case .invalidArgument: "the request was not valid"
        case .networkError: "the screentime agent cannot be reached"
        case .restricted: "not allowed"
        case .unavailable: "authorization is unavailable"
        case .authenticationMethodUnavailable: "no way to ask a guardian here"
        }
    }
}

/// A guardian's name and password, asked on the terminal with echo off; with no terminal but a
/// desktop, in a small window (`screentime-shield --guardian`); else read as two lines from
/// standard input (scripts and tests).
public enum GuardianPrompt {
    /// nil when the guardian cancelled the dialog.
    public static func ask(name: String?) -> GuardianCredentials? {
        let interactive = isatty(0) == 1
        let environment = ProcessInfo.processInfo.environment
        if !interactive, environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil,
            environment["SCREENTIME_NO_DIALOG"] == nil,
            let input = try? JSONEncoder().encode(GuardianDialogRequest(guardian: name))
        {
            switch Dialog.run(["--guardian"], input: input) {
            case .answered(let output):
                if let credentials = try? JSONDecoder().decode(GuardianCredentials.self, from: output) {
                    return credentials
                }
            case .cancelled: return nil
            case .unavailable: break
            }
        }
        var user = name ?? ""
        if user.isEmpty {
            if interactive { say("A guardian must approve. Guardian's user name: ") }
            user = readLine(strippingNewline: true) ?? ""
        }
        if interactive { say("Password for \(user): ") }
        let password = interactive ? readHidden() : (readLine(strippingNewline: true) ?? "")
        if interactive { say("\n") }
        // An empty name or password is the agent's to refuse, with its own words.
        return GuardianCredentials(user: user.trimmingSpaces(), password: password)
    }

    private static func say(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    private static func readHidden() -> String {
        var original = termios()
        guard tcgetattr(0, &original) == 0 else { return readLine(strippingNewline: true) ?? "" }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(0, TCSANOW, &silent)
        defer { tcsetattr(0, TCSANOW, &original) }
        return readLine(strippingNewline: true) ?? ""
    }
}
