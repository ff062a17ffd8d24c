import FoundationEssentials
import LinuxSupport
import Logging
public import ServiceLifecycle

/// Publishes the policy again when `/etc/subuid` or `/etc/subgid` change an authorized user's
/// ranges: a subordinate range given to a child later (`usermod --add-subuids`) is the child from
/// that moment.
public final class SubordinateIDWatch: Service, Sendable {
    private let publisher: PolicyPublisher
    private let files: [String]
    private let logger: Logger

    init(publisher: PolicyPublisher, files: [String], logger: Logger) {
        self.publisher = publisher
        self.files = files
        self.logger = logger
    }

    public func run() async throws {
        let watch: FileWatch
        do {
            watch = try FileWatch(files: files)
        } catch {
            // Not fatal: the files are read again at every change of policy.
            logger.warning(
                "changes of the subordinate id files are not watched", metadata: ["error": "\(error.message)"])
            return
        }
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Threads.start("screentime.subids") { [self] in
                    try? watch.run { [self] in
                        let before = publisher.current.generation
                        if publisher.publish(unlessSubordinatesSame: true).generation != before {
                            logger.notice("a user's subordinate ids changed; the policy was published again")
                        }
                    }
                    done.resume()
                }
            }
        } onGracefulShutdown: {
            watch.stop()
        }
    }
}
