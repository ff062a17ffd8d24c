/// What the domain shield tells of a user's web use, on the queue's thread: each must return at
/// once. The usage tracker counts it.
protocol WebActivity: Sendable {
    /// An address question for `domain` (its registrable domain) asked by `uid`.
    func lookedUp(_ domain: String, uid: UInt32)
    /// `domain` used by `uid`'s programs: looked up, or named by a connection's opening.
    func webUsed(_ domain: String, uid: UInt32)
}
