public import Foundation
import Synchronization

/// A clock a test sets and moves: handed to what takes `now` from outside.
public final class ManualClock: Sendable {
    private let time: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_900_000_000)) { time = Mutex(start) }

    public var now: Date { time.withLock { $0 } }

    public func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }

    public func set(_ date: Date) { time.withLock { $0 = date } }
}

/// A temporary directory, removed when the value goes.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("st-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
