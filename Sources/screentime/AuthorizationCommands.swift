import ArgumentParser
import FoundationEssentials
import Glibc
import ScreenTimeClient
import ScreenTimeCore
import ScreenTimeIPC

struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove everything kept of a user who is no longer authorized (guardians).",
        discussion: """
            For an account revoked, or deleted or renamed while authorized: its record leaves \
            `status`, and an account given the same uid later inherits nothing. An authorization in \
            force is revoked first (`screentime revoke --user NAME`).
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user: its name as authorized, or its uid.") var user: String

    func run() throws {
        let reply = try perform(connection, ForgetRequest(user: user))
        if output.json { return try printJSON(reply) }
        print(
            reply.forgotten
                ? "forgot \(reply.user.name) (uid \(reply.user.uid))"
                : "nothing was kept of \(reply.user.name) (uid \(reply.user.uid))")
    }
}

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Lift a guardian's lock on a child, and the lockout its session got after too many wrong guardian passwords (guardians)."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user whose session was locked out.") var user: String

    func run() throws {
        let reply = try perform(connection, UnlockRequest(user: user))
        if output.json { return try printJSON(reply) }
        if reply.lockLifted == true { print("\(reply.user.name) is unlocked (a guardian's lock was lifted)") }
        print(
            reply.hadFailures
                ? "\(reply.user.name) may try guardian passwords again"
                : "\(reply.user.name) had no wrong guardian passwords to forget")
    }
}

struct Authorize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Authorize a child account (as a guardian, or in the child's session with a guardian's password), or yourself as an individual."
    )

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "The child's user name. In the child's own session, a guardian's name and password are asked.")
    var child: String?

    @Flag(help: "Restrict yourself (you can revoke it yourself).")
    var individual = false

    @Option(help: "The guardian approving in the child's session (asked if not given).")
    var guardian: String?

    @Flag(
        inversion: .prefixedNo,
        help: "Whether the child may see the names of what is shielded (--show-names, --no-show-names).")
    var showNames: Bool?

    func validate() throws {
        guard (child != nil) != individual else { throw ValidationError("give either --child USER or --individual") }
    }

    func run() throws {
        var request = AuthorizeRequest(member: individual ? .individual : .child, showNamesToChild: showNames)
        if let child {
            request.user = child
            let me = try perform(connection, PingRequest())
            let target = UserLookup.uid(of: child)
            if me.role != .guardian && target == me.callerUID {
                request.guardian = try Terminal.askGuardian(name: guardian)
            }
        }
        let reply = try perform(connection, request)
        if output.json { return try printJSON(reply) }
        print("\(reply.user.name): \(reply.status.rawValue) as \(reply.member?.rawValue ?? "-")")
    }
}

struct Revoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Revoke an authorization (your own as an individual; a child's only as a guardian). Its stores are cleared."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The user (default: you).") var user: String?

    func run() throws {
        let reply = try perform(connection, RevokeRequest(user: user))
        if output.json { return try printJSON(reply) }
        print("\(reply.user.name): \(reply.status.rawValue)")
    }
}
