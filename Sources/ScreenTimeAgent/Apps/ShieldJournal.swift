import FoundationEssentials
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

/// What the process shield did, on its way to the state database: frozen and thawed processes
/// (so that the next run knows what an earlier one froze, and where each came from) and the
/// events status shows. Collected without waiting on the disk, written in batches off the
/// real-time thread, in the order they happened: one writer at a time takes a batch and writes
/// it before the next batch is taken.
final class ShieldJournal: Sendable {
    private struct Batch {
        var frozen: [StateDatabase.FrozenProcess] = []
        var thawed: [(pid: Int32, startTime: UInt64)] = []
        var events: [StateDatabase.ApplicationEvent] = []
        var names: [String: TokenName] = [:]
        var isEmpty: Bool { frozen.isEmpty && thawed.isEmpty && events.isEmpty }
    }

    private let database: StateDatabase
    private let logger: Logger
    private let pending = Mutex(Batch())
    /// Held while a batch is taken and written.
    private let writing = Mutex(())
    private let signal: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init(database: StateDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
        (signal, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func frozen(_ record: StateDatabase.FrozenProcess) {
        pending.withLock { $0.frozen.append(record) }
        continuation.yield()
    }

    func thawed(pid: Int32, startTime: UInt64) {
        pending.withLock { $0.thawed.append((pid, startTime)) }
        continuation.yield()
    }

    func event(_ event: StateDatabase.ApplicationEvent, name: (String, TokenName)?) {
        pending.withLock {
            $0.events.append(event)
            if let (token, name) = name { $0.names[token] = name }
        }
        continuation.yield()
    }

    /// Writes what is waiting; events of users `keep` rejects are dropped (a revocation deleted
    /// theirs, and lookups counted just before it must not bring them back).
    func flush(keep: (UInt32) -> Bool) {
        writing.withLock { _ in
            let batch = pending.withLock { pending in
                defer { pending = Batch() }
                return pending
            }
            guard !batch.isEmpty else { return }
            do {
                try database.recordShieldChanges(
                    frozen: batch.frozen, thawed: batch.thawed, events: batch.events.filter { keep($0.uid) },
                    names: batch.names)
            } catch {
                logger.error("cannot record what the process shield did", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes batches as they come, until `finish()`.
    func run(keep: @escaping (UInt32) -> Bool) async {
        for await _ in signal { flush(keep: keep) }
    }

    func finish() { continuation.finish() }
}
