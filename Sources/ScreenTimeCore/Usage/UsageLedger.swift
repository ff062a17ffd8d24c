public import FoundationEssentials

/// Foreground spans in, totals out.
///
/// Totals are the length of the *union* of the matching spans, so time is never counted twice:
/// two sessions of the same app at once, or two apps of one category side by side on two seats,
/// count once for the app or the category. Spans are kept sorted by start; a query looks only at
/// spans that can reach into its interval.
public struct UsageLedger: Hashable, Sendable, Codable {
    public private(set) var spans: [UsageSpan] = []
    private var longestSpan: TimeInterval = 0

    public init() {}

    public init(_ spans: some Sequence<UsageSpan>) {
        for span in spans { record(span) }
    }

    public mutating func record(_ span: UsageSpan) {
        let index = spans.partitioningIndex { $0.start > span.start }
        spans.insert(span, at: index)
        longestSpan = max(longestSpan, span.duration)
    }

    /// Drops spans that ended before `date` (reports keep what they need; the rest is not kept).
    public mutating func removeSpans(endingBefore date: Date) {
        spans.removeAll { $0.end < date }
        longestSpan = spans.map(\.duration).max() ?? 0
    }

    /// The time the matching usage took within `interval`.
    public func total(_ filter: UsageFilter = .everything, during interval: DateInterval) -> TimeInterval {
        unionLength(overlapping(interval).filter { filter.matches($0) }, within: interval)
    }

    /// The time each application was used within `interval`.
    public func totalsByApplication(during interval: DateInterval) -> [ApplicationToken: TimeInterval] {
        totals(during: interval) { span in
            if case .application(let token) = span.subject { [token] } else { [] }
        }
    }

    /// The time each web domain was used within `interval`.
    public func totalsByWebDomain(during interval: DateInterval) -> [WebDomainToken: TimeInterval] {
        totals(during: interval) { span in
            if case .webDomain(let token) = span.subject { [token] } else { [] }
        }
    }

    /// The time each category was used within `interval` (an app in two categories counts in both).
    public func totalsByCategory(during interval: DateInterval) -> [ActivityCategoryToken: TimeInterval] {
        totals(during: interval) { Array($0.categories) }
    }

    /// Usage split into hours, days or weeks of `calendar`.
    public func segments(_ segmentation: SegmentInterval, calendar: ZonedCalendar) -> [UsageSegment] {
        segmentation.intervals(calendar: calendar).map { interval in
            UsageSegment(
                interval: interval,
                totalActivityDuration: total(during: interval),
                applications: totalsByApplication(during: interval),
                categories: totalsByCategory(during: interval),
                webDomains: totalsByWebDomain(during: interval)
            )
        }
    }

    private func overlapping(_ interval: DateInterval) -> ArraySlice<UsageSpan> {
        // Spans are sorted by start: those starting at or after the interval's end cannot reach
        // into it, nor can those starting more than the longest span before its start.
        let upper = spans.partitioningIndex { $0.start >= interval.end }
        let earliest = interval.start.addingTimeInterval(-longestSpan)
        let lower = spans[..<upper].partitioningIndex { $0.start >= earliest }
        return spans[lower..<upper]
    }

    private func totals<Key: Hashable>(during interval: DateInterval, keys: (UsageSpan) -> [Key]) -> [Key: TimeInterval]
    {
        var grouped: [Key: [UsageSpan]] = [:]
        for span in overlapping(interval) {
            for key in keys(span) { grouped[key, default: []].append(span) }
        }
        return grouped.compactMapValues { spans in
            let length = unionLength(spans, within: interval)
            return length > 0 ? length : nil
        }
    }

    private func unionLength(_ spans: some Sequence<UsageSpan>, within interval: DateInterval) -> TimeInterval {
        let clipped =
            spans
            .map { (max($0.start, interval.start), min($0.end, interval.end)) }
            .filter { $0.0 < $0.1 }
            .sorted { $0.0 < $1.0 }
        var total: TimeInterval = 0
        var current: (Date, Date)?
        for (start, end) in clipped {
            if let (currentStart, currentEnd) = current, start <= currentEnd {
                current = (currentStart, max(currentEnd, end))
            } else {
                if let (currentStart, currentEnd) = current { total += currentEnd.timeIntervalSince(currentStart) }
                current = (start, end)
            }
        }
        if let (currentStart, currentEnd) = current { total += currentEnd.timeIntervalSince(currentStart) }
        return total
    }
}

/// How a report splits a stretch of time (Apple's `DeviceActivityFilter.SegmentInterval`).
public enum SegmentInterval: Hashable, Sendable {
    case hourly(during: DateInterval)
    case daily(during: DateInterval)
    case weekly(during: DateInterval)

    /// The segments, by the calendar's own hours, days and weeks (a DST day is 23 or 25 hours
    /// long), clipped to the stretch.
    public func intervals(calendar: ZonedCalendar) -> [DateInterval] {
        let (component, during): (Calendar.Component, DateInterval) =
            switch self {
            case .hourly(let during): (.hour, during)
            case .daily(let during): (.day, during)
            case .weekly(let during): (.weekOfYear, during)
            }
        var result: [DateInterval] = []
        var cursor = during.start
        while cursor < during.end, let unit = calendar.dateInterval(of: component, for: cursor), unit.end > cursor {
            result.append(DateInterval(start: cursor, end: min(unit.end, during.end)))
            cursor = unit.end
        }
        return result
    }
}

/// The usage of one segment of a report.
public struct UsageSegment: Hashable, Sendable, Codable {
    public var interval: DateInterval
    public var totalActivityDuration: TimeInterval
    public var applications: [ApplicationToken: TimeInterval]
    public var categories: [ActivityCategoryToken: TimeInterval]
    public var webDomains: [WebDomainToken: TimeInterval]
}

extension Collection {
    /// The first index whose element satisfies `belongsInSecondPartition`, for a collection
    /// partitioned so that all such elements come last (binary search).
    func partitioningIndex(where belongsInSecondPartition: (Element) -> Bool) -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if belongsInSecondPartition(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
