/// What the domain shield tells of a user's web use, on the queue's thread: each must return at
/// once. The usage tracker counts it.
protocol WebActivity: Sendable {
    /// Address questions for `domain` (its registrable domain) asked by `uid`: one judged in the
    /// queue, or those the DNS fast path passed since it was last told.
    func lookedUp(_ domain: String, uid: UInt32, times: Int)
    /// `domain` used by `uid`'s programs: looked up, or named by a connection's opening.
    func webUsed(_ domain: String, uid: UInt32)
}
