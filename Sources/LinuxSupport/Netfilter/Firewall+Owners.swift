// The uid ranges the rules match packets' owners against, and the matches they are written with.
extension Firewall {
    /// The ranges as `--uid-owner` writes them, each once, lowest first.
    static func ranges(_ owners: [ClosedRange<UInt32>]) -> [String] {
        Set(owners).sorted(by: { $0.lowerBound < $1.lowerBound }).map { range in
            range.count == 1 ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
        }
    }

    /// The highest uid a socket's owner can have (4294967295 is "no uid").
    public static let highestUID: UInt32 = 4_294_967_294

    /// The uids in none of `owners` (which may overlap), as the fewest ranges, lowest first.
    public static func others(than owners: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var others: [ClosedRange<UInt32>] = []
        var next: UInt32? = 0  // the lowest uid not yet placed (nil: past the highest)
        for range in owners.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            guard let from = next else { break }
            if range.lowerBound > from { others.append(from...(range.lowerBound - 1)) }
            if range.upperBound >= from { next = range.upperBound >= highestUID ? nil : range.upperBound + 1 }
        }
        if let from = next { others.append(from...highestUID) }
        return others
    }

    /// A u32 match for a TCP segment with no data and a TCP header of `tcpWords` 32-bit words
    /// (exact: the IP length is the headers' length; no IP options or IPv6 extension headers),
    /// with `flags` (a mask and value for the flags byte, "&0x02=0"), or any flags for nil.
    static func noData(_ family: Family, tcpWords words: Int, flags: String?) -> String {
        family == .ipv4
            ? "0>>24=0x45&&0&0xFFFF=\(20 + 4 * words)&&32>>28=\(words)" + (flags.map { "&&32>>16\($0)" } ?? "")
            : "4>>8&0xFF=6&&4>>16=\(4 * words)&&52>>28=\(words)" + (flags.map { "&&52>>16\($0)" } ?? "")
    }

    /// The kernel's `limit` match takes at most this many packets a second, and bursts of at most
    /// this many: a higher rate makes iptables refuse the whole ruleset.
    public static let highestRateLimit = 10_000

    /// The match that lets `rate` packets a second through, in bursts of five times that (at most
    /// `highestRateLimit`), followed by a space; empty for 0, no limit.
    static func limit(_ rate: Int) -> String {
        guard rate > 0 else { return "" }
        let rate = min(rate, highestRateLimit)
        return "-m limit --limit \(rate)/sec --limit-burst \(min(rate * 5, highestRateLimit)) "
    }
}
