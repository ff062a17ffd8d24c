import CLauncher
import CLinuxShim
import FoundationEssentials
import Glibc
import ScreenTimeCore
import Synchronization

/// One message on the launcher's socket pair (a datagram of JSON): the launcher says `ready`
/// once it kept only its capabilities; the agent sends `launch`; the launcher answers `started`
/// or `refused`, and says `exited` when a program it started ends.
struct LauncherMessage: Codable, Sendable {
    struct Exit: Codable, Sendable {
        var pid: Int32
        /// The exit status, or 128 + the signal that ended it.
        var status: Int32
    }

    var ready: Int32?
    var launch: LaunchRequest?
    var started: Int32?
    var refused: String?
    var exited: Exit?
    /// The agent asks that a program the launcher started be killed now (no answer; its `exited`
    /// follows).
    var stop: Int32?
    /// The request a `launch` is, and a `started` or `refused` answers.
    var id: UInt64?

    /// Larger is refused (a datagram must fit the socket's buffer anyway).
    static let maximumSize = 65_536

    /// Exactly one of the known keys, or an error that says what was wrong.
    static func decode(_ bytes: [UInt8]) throws(SystemError) -> LauncherMessage {
        let object = (try? JSONValue(parsing: bytes))?.objectValue
        let known = ["ready", "launch", "started", "refused", "exited", "stop"]
        guard let keys = object?.keys.filter({ $0 != "id" }), keys.count == 1,
            let key = keys.first, known.contains(key)
        else {
            throw SystemError(.launch, "not a launcher message (one of launch, started, refused, exited)")
        }
        do {
            return try JSONDecoder().decode(LauncherMessage.self, from: Data(bytes))
        } catch {
            throw SystemError(.launch, "a malformed '\(key)' message: \(error)")
        }
    }

    func encoded() -> [UInt8] { Array((try? JSONEncoder().encode(self)) ?? Data()) }
}
