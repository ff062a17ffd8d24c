/// The addresses one child's resolver returned lately, each with what it was returned for: a
/// shielded name, or a name the child may visit. A connection to an address returned only for
/// shielded names is refused whatever name it later claims (a hard-coded address, `curl
/// --resolve`); an address also returned for an allowed name is shared — a CDN's — and its
/// connections are judged by the name they carry.
///
/// Entries last for the answer's TTL (at least `minimumLifetime`, at most `maximumLifetime`).
/// The book holds at most `capacity` addresses: when full, expired entries go first, then those
/// of allowed names, soonest to expire first.
/// Time is an injected monotonic reading in seconds.
public struct LearnedAddresses: Sendable {
    /// An IPv4 or IPv6 address as a key (IPv4 in the low 32 bits, with a tag of its own).
    public struct Address: Hashable, Sendable, CustomStringConvertible {
        @usableFromInline let high: UInt64
        @usableFromInline let low: UInt64

        /// 4 or 16 bytes; nil for any other length. (Inlinable: made for each packet the queue
        /// judges, and specialized where it is called, not through a generic witness.)
        @inlinable public init?(_ bytes: some Collection<UInt8>) {
            guard bytes.count == 4 || bytes.count == 16 else { return nil }
            var high: UInt64 = bytes.count == 4 ? 0xFFFF_FFFF_FFFF_FFFF : 0
            var low: UInt64 = 0
            for (index, byte) in bytes.enumerated() {
                if bytes.count == 16, index < 8 {
                    high = high << 8 | UInt64(byte)
                } else {
                    low = low << 8 | UInt64(byte)
                }
            }
            self.high = high
            self.low = low
        }

        public var description: String {
            if high == 0xFFFF_FFFF_FFFF_FFFF {
                return (0..<4).map { String((low >> (24 - 8 * UInt64($0))) & 0xFF) }.joined(separator: ".")
            }
            let groups = (0..<8).map { index -> String in
                let word = index < 4 ? high >> (48 - 16 * UInt64(index)) : low >> (48 - 16 * UInt64(index - 4))
                return String(word & 0xFFFF, radix: 16)
            }
            return groups.joined(separator: ":")
        }
    }

    public enum Standing: Hashable, Sendable {
        /// Not returned lately.
        case unknown
        /// Returned for shielded names only.
        case shielded
        /// Returned for a shielded name and for an allowed one.
        case shared
    }

    public static let minimumLifetime: Double = 60
    public static let maximumLifetime: Double = 86_400

    public let capacity: Int
    private var entries: [Address: (shieldedUntil: Double, allowedUntil: Double)] = [:]

    public init(capacity: Int = 16_384) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    /// Notes that the child's resolver returned `address` for a shielded name or an allowed one.
    public mutating func learn(_ address: Address, shielded: Bool, ttl: UInt32, now: Double) {
        let until = now + Self.lifetime(ttl: ttl)
        var entry = entries[address] ?? (-.infinity, -.infinity)
        if shielded {
            entry.shieldedUntil = max(entry.shieldedUntil, until)
        } else {
            entry.allowedUntil = max(entry.allowedUntil, until)
        }
        if entries[address] == nil, entries.count >= capacity { makeRoom(now: now) }
        entries[address] = entry
    }

    /// Like `learn`, but when the book is full (expired entries gone) a new address is not kept:
    /// for a book of what a resolver the child chose says, whose flood must not push out what
    /// it said before (it only ever restricts her).
    /// Says whether it was kept.
    @discardableResult
    public mutating func learnKeepingOldest(_ address: Address, shielded: Bool, ttl: UInt32, now: Double) -> Bool {
        if entries[address] == nil, entries.count >= capacity {
            entries = entries.filter { max($0.value.shieldedUntil, $0.value.allowedUntil) > now }
            guard entries.count < capacity else { return false }
        }
        learn(address, shielded: shielded, ttl: ttl, now: now)
        return true
    }

    /// How long an answer's address is kept, in seconds, for its TTL.
    public static func lifetime(ttl: UInt32) -> Double { min(max(Double(ttl), minimumLifetime), maximumLifetime) }

    /// Until when (the injected clock) `address` counts as returned for a shielded name; nil
    /// for one never returned for one.
    public func shieldedUntil(_ address: Address) -> Double? {
        guard let until = entries[address]?.shieldedUntil, until > -.infinity else { return nil }
        return until
    }

    /// Whether `address` was returned lately for a name the child may visit.
    public func isAllowed(_ address: Address, now: Double) -> Bool {
        (entries[address]?.allowedUntil ?? -.infinity) > now
    }

    public func standing(of address: Address, now: Double) -> Standing {
        guard let entry = entries[address], entry.shieldedUntil > now else { return .unknown }
        return entry.allowedUntil > now ? .shared : .shielded
    }

    /// Drops the expired entries; if that frees less than an eighth, the least worth keeping too.
    private mutating func makeRoom(now: Double) {
        func expiry(_ entry: (shieldedUntil: Double, allowedUntil: Double)) -> Double {
            max(entry.shieldedUntil, entry.allowedUntil)
        }
        entries = entries.filter { expiry($0.value) > now }
        let target = capacity - max(1, capacity / 8)
        guard entries.count > target else { return }
        // Addresses of shielded names are kept before those of allowed ones: a child flooding the
        // book with answers of its own cannot push out what it is kept from.
        let kept = entries.sorted { a, b in
            let (aShielded, bShielded) = (a.value.shieldedUntil > now, b.value.shieldedUntil > now)
            return aShielded != bShielded ? aShielded : expiry(a.value) > expiry(b.value)
        }.prefix(target)
        entries = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
    }
}
