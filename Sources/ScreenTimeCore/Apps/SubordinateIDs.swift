/// A set of uids (or gids) as ranges: a user's own and its subordinate ones.
public struct UIDRanges: Sendable, Hashable {
    public private(set) var ranges: [ClosedRange<UInt32>]

    public init(_ ranges: [ClosedRange<UInt32>] = []) {
        self.ranges = []
        for range in ranges { insert(range) }
    }

    public mutating func insert(_ range: ClosedRange<UInt32>) {
        ranges.append(range)
        ranges.sort { $0.lowerBound < $1.lowerBound }
    }

    public func contains(_ id: UInt32) -> Bool { ranges.contains { $0.contains(id) } }

    public var isEmpty: Bool { ranges.isEmpty }
}

/// `/etc/subuid` or `/etc/subgid`: the ranges of ids each user may map into user namespaces it
/// makes (with `newuidmap`). A process running as one of a child's subordinate uids is the child.
///
/// Lines are `OWNER:START:COUNT`, the owner a name or a numeric id; comments and malformed lines
/// are skipped (and counted), ranges that would overflow are cut at the top id.
public struct SubordinateIDs: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        /// The owner as written: a user name, or digits.
        public var owner: String
        public var range: ClosedRange<UInt32>
    }

    public private(set) var entries: [Entry] = []
    public private(set) var skippedLines = 0

    public init() {}

    public init(parsing text: String) {
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = trimmed.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[0].isEmpty, let start = UInt32(fields[1]), let count = UInt32(fields[2]),
                count > 0
            else {
                skippedLines += 1
                continue
            }
            let (end, overflow) = start.addingReportingOverflow(count - 1)
            entries.append(Entry(owner: String(fields[0]), range: start...(overflow ? UInt32.max : end)))
        }
    }

    /// The ranges of a user, known by name and uid.
    public func ranges(ofUser name: String, uid: UInt32) -> [ClosedRange<UInt32>] {
        entries.filter { $0.owner == name || $0.owner == String(uid) }.map(\.range)
    }
}
