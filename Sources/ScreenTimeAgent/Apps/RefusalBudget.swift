/// How many refusals of programs no guardian installed are written down per user: a child can
/// start thousands of one-byte-different copies a second, and each written refusal is a hash of
/// the file, a log line, an event row and a token name in the state database. Each user has a
/// bucket of `burst` refusals refilled at `perSecond`; past it a refusal is only counted (the
/// program is refused all the same), and the count is said once with the next one written.
/// Time is a monotonic reading in seconds.
struct RefusalBudget {
    static let burst = 60.0
    static let perSecond = 1.0
    /// Users kept at once (a bucket is forgotten when full again, or when the table is full).
    static let users = 1024

    private var buckets: [UInt32: (tokens: Double, at: Double, unwritten: Int)] = [:]

    /// Whether to write this refusal down, and how many before it were not.
    mutating func admit(_ uid: UInt32, now: Double) -> (write: Bool, unwritten: Int) {
        var bucket = buckets[uid] ?? (Self.burst, now, 0)
        bucket.tokens = min(Self.burst, bucket.tokens + max(0, now - bucket.at) * Self.perSecond)
        bucket.at = now
        guard bucket.tokens >= 1 else {
            bucket.unwritten += 1
            store(uid, bucket, now: now)
            return (false, bucket.unwritten)
        }
        bucket.tokens -= 1
        let unwritten = bucket.unwritten
        bucket.unwritten = 0
        store(uid, bucket, now: now)
        return (true, unwritten)
    }

    private mutating func store(_ uid: UInt32, _ bucket: (tokens: Double, at: Double, unwritten: Int), now: Double) {
        if buckets[uid] == nil, buckets.count >= Self.users {
            // Full buckets with nothing unsaid are as good as none.
            buckets = buckets.filter { $0.value.unwritten > 0 || $0.value.tokens + (now - $0.value.at) < Self.burst }
            if buckets.count >= Self.users { buckets.removeAll() }
        }
        buckets[uid] = bucket
    }
}
