/// `launcher.check`: a guardian asks the agent to start a harmless program (`/bin/true`) through
/// its launcher the way extensions will run — as an unprivileged account, in an empty network
/// namespace, within time and memory limits — and to say how that went.
public struct LauncherCheckRequest: ControlRequest, Hashable {
    public typealias Reply = LauncherCheckReply
    public static let kind = "launcher.check"
    public init() {}
}

public struct LauncherCheckReply: Codable, Sendable, Hashable {
    /// The launcher's pid.
    public var launcher: Int32
    /// The account the program ran as, and its uid.
    public var account: String
    public var uid: UInt32
    /// The program's pid and exit status (128 + a signal that ended it).
    public var pid: Int32
    public var exitStatus: Int32
    /// From the request to the launcher to the program's end.
    public var milliseconds: Int

    public init(launcher: Int32, account: String, uid: UInt32, pid: Int32, exitStatus: Int32, milliseconds: Int) {
        self.launcher = launcher
        self.account = account
        self.uid = uid
        self.pid = pid
        self.exitStatus = exitStatus
        self.milliseconds = milliseconds
    }
}
