/// The SYN fast path's kernel sets: one per family, of the addresses learned for shielded names.
extension Firewall {
    /// The kernel set of one family's addresses learned for shielded names (the SYN fast path).
    public func shieldedAddressSet(_ family: Family) -> String { chain + (family == .ipv4 ? "-sh4" : "-sh6") }
    /// Entries each set may hold. The kernel's memory grows with the entries there, not with this.
    public static let shieldedAddressSetCapacity: UInt32 = 1 << 20
    /// How long an entry added without a time of its own lasts.
    public static let shieldedAddressSetTimeout: UInt32 = 60

}
