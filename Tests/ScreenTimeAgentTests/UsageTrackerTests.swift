import Foundation
import LinuxSupport
import ScreenTimeCore
import Testing

@testable import ScreenTimeAgent

/// How the usage tracker turns focus into rows (no root, no display): lengths from the monotonic
/// clock, one application's stretches close together in one row, every application a process can
/// be taken for counted.
@Suite struct UsageTrackerTests {
    static let key = "x11 :5"
    let minter: TokenMinter

    init() throws { minter = try TokenMinter(secret: [UInt8](repeating: 7, count: 32)) }

    private func state() throws -> UsageTracker.State {
        var state = UsageTracker.State()
        state.sessions[Self.key] = UsageTracker.Session(
            kind: .x11, display: ":5", owner: 1001, stop: try StopSignal(), authorityFiles: [])
        return state
    }

    private func application(_ id: String, _ categories: [String] = []) throws -> ForegroundApplication {
        let identity = try ApplicationIdentity.desktopEntry(id: id)
        return ForegroundApplication(
            owner: 1001, identity: identity, token: minter.token(for: identity), name: id, categories: categories)
    }

    private func rows(_ state: UsageTracker.State) -> [StateDatabase.UsageRow] {
        state.rows.values.map(\.stored).sorted { $0.identity < $1.identity }
    }

    @Test func aSpanLastsWhatTheMonotonicClockSaysNotTheWallClock() throws {
        var state = try state()
        UsageTracker.beginFront(&state, Self.key, [try application("org.example.Chess")])
        let front = try #require(state.sessions[Self.key]?.front)
        // Eight seconds on the monotonic clock, however the wall clock moved meanwhile (here: not
        // at all; a clock set back or forward changes nothing either).
        UsageTracker.endFront(&state, Self.key, at: front.startClock + .seconds(8))
        let row = try #require(rows(state).first)
        #expect(row.end.timeIntervalSince(row.start) == 8)
        #expect(row.start == front.startWall)
        #expect(state.sessions[Self.key]?.front == nil)
        #expect(state.rows.values.allSatisfy { !$0.open && $0.dirty })
    }

    @Test func anEndBeforeTheStartCountsNothing() throws {
        // Idle ends a span at the last input, which may be before the span began.
        var state = try state()
        UsageTracker.beginFront(&state, Self.key, [try application("org.example.Chess")])
        let front = try #require(state.sessions[Self.key]?.front)
        UsageTracker.endFront(&state, Self.key, at: front.startClock - .seconds(60))
        let row = try #require(rows(state).first)
        #expect(row.end == row.start)
    }

    @Test func anEndBeforeWhatWasWrittenWhileOpenTakesItBack() throws {
        // A checkpoint wrote the open span up to a minute in; idle then ends it at the last
        // input, 5 s in: the row ends there.
        var state = try state()
        UsageTracker.beginFront(&state, Self.key, [try application("org.example.Chess")])
        let front = try #require(state.sessions[Self.key]?.front)
        let serial = try #require(front.rows.first)
        state.rows[serial]?.stored.end = front.startWall.addingTimeInterval(60)
        UsageTracker.endFront(&state, Self.key, at: front.startClock + .seconds(5))
        let row = try #require(rows(state).first)
        #expect(row.end.timeIntervalSince(row.start) == 5)
    }

    @Test func aRowGrownAgainKeepsWhatItHadBefore() throws {
        // The first stretch's row ends later than the second stretch starts (the wall clock set
        // back between them): ending the second early takes nothing of the first's.
        var state = try state()
        let chess = try application("org.example.Chess")
        UsageTracker.beginFront(&state, Self.key, [chess])
        let first = try #require(state.sessions[Self.key]?.front?.rows.first)
        UsageTracker.endFront(&state, Self.key, at: .now)
        let had = try #require(state.rows[first]?.stored.end).addingTimeInterval(30)
        state.rows[first]?.stored.end = had
        UsageTracker.beginFront(&state, Self.key, [chess])
        let front = try #require(state.sessions[Self.key]?.front)
        #expect(front.rows == [first])
        UsageTracker.endFront(&state, Self.key, at: front.startClock - .seconds(1))
        #expect(state.rows[first]?.stored.end == had)
    }

    @Test func theSameApplicationAgainWithinASecondGrowsItsRow() throws {
        var state = try state()
        let chess = try application("org.example.Chess")
        UsageTracker.beginFront(&state, Self.key, [chess])
        UsageTracker.endFront(&state, Self.key, at: .now)
        UsageTracker.beginFront(&state, Self.key, [chess])
        UsageTracker.endFront(&state, Self.key, at: .now)
        #expect(state.rows.count == 1)
    }

    @Test func switchingByScriptCannotGrowTheTableFast() throws {
        var state = try state()
        let chess = try application("org.example.Chess")
        let editor = try application("org.example.Editor")
        // Rows a second apart and more: each its own row, until the session started
        // `rowsPerMinute` in a minute; then stretches a minute apart share rows.
        for index in 0..<100 {
            let application = index % 2 == 0 ? chess : editor
            UsageTracker.beginFront(&state, Self.key, [application])
            let serial = try #require(state.sessions[Self.key]?.front?.rows.first)
            UsageTracker.endFront(&state, Self.key, at: .now)
            // As if it ended 2 s ago: too far apart for the normal merge.
            state.rows[serial]?.stored.start.addTimeInterval(-2)
            state.rows[serial]?.stored.end.addTimeInterval(-2)
        }
        #expect(state.rows.count == UsageTracker.rowsPerMinute)
    }

    @Test func everyApplicationTheProcessCanBeTakenForCounts() throws {
        var state = try state()
        UsageTracker.beginFront(
            &state, Self.key, [try application("org.example.Chess", ["game"]), try application("org.example.Calc")])
        let front = try #require(state.sessions[Self.key]?.front)
        UsageTracker.endFront(&state, Self.key, at: front.startClock + .seconds(5))
        let all = rows(state)
        #expect(all.map(\.identity) == ["org.example.Calc", "org.example.Chess"])
        #expect(all.allSatisfy { $0.end.timeIntervalSince($0.start) == 5 })
        #expect(all.last?.categories == ["game"])
    }

    @Test func nothingInFrontCountsNothing() throws {
        var state = try state()
        UsageTracker.beginFront(&state, Self.key, [])
        #expect(state.sessions[Self.key]?.front == nil)
        #expect(state.rows.isEmpty)
    }

    @Test func lookupsAreCountedPerDayAndDomain() {
        let first = Date(timeIntervalSince1970: 1_790_000_000)
        var merged = StateDatabase.DomainLookups(
            uid: 1001, day: UsageTracker.day(first), domain: "example.org", count: 1, first: first, last: first)
        merged = UsageTracker.merged(
            merged,
            StateDatabase.DomainLookups(
                uid: 1001, day: merged.day, domain: "example.org", count: 2, first: first.addingTimeInterval(-5),
                last: first.addingTimeInterval(9)))
        #expect(merged.count == 3)
        #expect(merged.first == first.addingTimeInterval(-5))
        #expect(merged.last == first.addingTimeInterval(9))
        #expect(UsageTracker.day(Date(timeIntervalSince1970: 0)) == "1970-01-01")
    }

    /// The day of a lookup, by arithmetic, is the day Foundation's Gregorian calendar in UTC
    /// says, around every boundary: midnights, month ends, leap days, centuries, before 1970.
    @Test func theDayOfALookupIsTheCalendarsUTCDay() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        func expected(_ date: Date) -> String {
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
        }
        var generator = SystemRandomNumberGenerator()
        var dates = (0..<20_000).map { _ in
            Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800...4_102_444_800, using: &generator)))
        }
        // Each side of midnight on days that end months, leap days and centuries.
        for text in ["1900-03-01", "2000-02-29", "2000-03-01", "2024-02-29", "2026-12-31", "2100-03-01", "1969-12-31"] {
            let parts = text.split(separator: "-").map { Int($0)! }
            let midnight = calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))!
            dates += [midnight, midnight.addingTimeInterval(-0.001), midnight.addingTimeInterval(86_399.999)]
        }
        for date in dates {
            #expect(UsageTracker.day(date) == expected(date), "\(date.timeIntervalSince1970)")
        }
    }
}
