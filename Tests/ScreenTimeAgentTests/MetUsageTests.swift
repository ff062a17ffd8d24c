import ScreenTimeCore
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// The usage met while judging, told after the verdicts: by registrable domain, every lookup
/// counted, and none dropped when more wait than a batch holds (a helper's attack: one segment of
/// DNS over TCP can carry thousands of questions).
@Suite struct MetUsageTests {
    final class Recorder: WebActivity {
        let lookups = Mutex<[String: Int]>([:])
        let used = Mutex<Set<String>>([])
        func lookedUp(_ domain: String, uid: UInt32, times: Int) {
            lookups.withLock { $0["\(uid) \(domain)", default: 0] += times }
        }
        func webUsed(_ domain: String, uid: UInt32) { _ = used.withLock { $0.insert("\(uid) \(domain)") } }
    }

    static func name(_ text: String) -> DNSName { DNSName(try! DomainName(text)) }

    @Test func namesAreToldByRegistrableDomainOnlyWhenAskedOrWhenFull() throws {
        let recorder = Recorder()
        let met = MetUsage(
            web: recorder,
            domains: RegistrableDomains(suffixes: try PublicSuffixList(parsing: "com\nco.uk\n")))
        met.note([Self.name("www.bbc.co.uk")], uid: 7, lookups: 1)
        met.note([Self.name("cdn.example.com"), Self.name("example.com")], uid: 7, lookups: 0)
        // Nothing told before the verdicts have gone back.
        #expect(recorder.used.withLock { $0.isEmpty })
        met.tell()
        #expect(recorder.lookups.withLock { $0 } == ["7 bbc.co.uk": 1])
        #expect(recorder.used.withLock { $0 } == ["7 bbc.co.uk", "7 example.com"])
        // A flood past the capacity, then her real lookup: all of the flood counted, told as the
        // table filled, and hers after.
        for _ in 0..<(MetUsage.capacity + 10) { met.note([Self.name("f.flood.com")], uid: 8, lookups: 1) }
        #expect(recorder.lookups.withLock { $0["8 flood.com"] } == MetUsage.capacity)
        met.note([Self.name("hidden.com")], uid: 8, lookups: 1)
        met.tell()
        #expect(recorder.lookups.withLock { $0["8 flood.com"] } == MetUsage.capacity + 10)
        #expect(recorder.lookups.withLock { $0["8 hidden.com"] } == 1)
        met.tell()
        #expect(recorder.lookups.withLock { $0["8 hidden.com"] } == 1)
    }
}
