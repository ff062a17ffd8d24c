/// `denyInstalls`: Apple's `application.denyAppInstallation` for one store: with it, the user
/// runs only programs a guardian installed (not the user's own files, nothing in a directory the
/// user can write); scripts still run through installed interpreters.
public struct DenyInstallsRequest: ControlRequest, Hashable {
    public typealias Reply = StoreReply
    public static let kind = "denyInstalls"
    public var target: StoreTarget
    public var deny: Bool

    public init(target: StoreTarget, deny: Bool) {
        self.target = target
        self.deny = deny
    }
}
