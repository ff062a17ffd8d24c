import Foundation
import Logging
import Synchronization
import Testing

@testable import ScreenTimeAgent

/// The control socket's record of connections turned away: a line at once, then at most one an
/// interval with the count, naming a few of the uids.
@Suite struct RefusalLogTests {
    final class Lines: Sendable {
        let written = Mutex<[String]>([])
    }

    /// Each message with its metadata, sorted, as "key=value" after it.
    struct Capture: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
            file: String, function: String, line: UInt
        ) {
            let pairs = (metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            lines.written.withLock { $0.append(([message.description] + pairs).joined(separator: " ")) }
        }
    }

    @Test func aFloodIsOneLineAtOnceThenOneAnIntervalNamingAFewUIDs() {
        let lines = Lines()
        let logger = Logger(label: "test") { _ in Capture(lines: lines) }
        var log = RefusalLog()
        let start = ContinuousClock.now
        log.note(1000, logger: logger, now: start)
        // Her subordinate uids, one connection each.
        for uid in UInt32(100_000)..<100_050 { log.note(uid, logger: logger, now: start + .seconds(1)) }
        #expect(lines.written.withLock { $0.count } == 1)
        log.writeIfDue(logger: logger, now: start + .seconds(9))
        #expect(lines.written.withLock { $0.count } == 1)
        log.writeIfDue(logger: logger, now: start + .seconds(10))
        let written = lines.written.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.first == "turned connections away: busy count=1 uids=1000")
        let named = (100_000..<100_008).map(String.init).joined(separator: ",")
        #expect(written.last == "turned connections away: busy count=50 uids=\(named),and others")
        // Nothing turned away since: nothing more is written.
        log.writeIfDue(logger: logger, now: start + .seconds(30))
        #expect(lines.written.withLock { $0.count } == 2)
    }
}
