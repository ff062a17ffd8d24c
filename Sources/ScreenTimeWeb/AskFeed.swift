import FoundationEssentials
import ScreenTimeIPC

/// The pending asks of each signed-in session, looked at once a second however many of its pages
/// are open (a phone and a laptop of one guardian are two sessions; ten tabs of one are one
/// look, not ten). Each open page's event stream subscribes; the look stops with the last one.
actor AskFeed {
    enum Event: Sendable, Equatable {
        /// The pending asks' ids, as the pages write them.
        case asks(String)
        /// Nothing changed for a while: a comment keeps the connection open through proxies.
        case stillHere
        /// The session ended (signed out, revoked, expired): the page goes to the sign-in.
        case signedOut
    }

    private struct Watch {
        var shown: String
        var subscribers: [UUID: AsyncStream<Event>.Continuation] = [:]
        var task: Task<Void, Never>?
    }

    private let agent: any AgentConnection
    private var watches: [String: Watch] = [:]
    /// How often the agent is asked, and after how many unchanged looks a page is told so.
    private let period: Duration
    private let quietLooks: Int

    init(agent: any AgentConnection, period: Duration = .seconds(1), quietLooks: Int = 15) {
        self.agent = agent
        self.period = period
        self.quietLooks = quietLooks
    }

    /// A page's stream of events, starting from `shown` (what the agent said when it opened).
    func subscribe(_ token: String, shown: String) -> (id: UUID, events: AsyncStream<Event>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(4))
        var watch = watches[token] ?? Watch(shown: shown)
        watch.subscribers[id] = continuation
        if watch.task == nil { watch.task = Task { await self.look(token) } }
        watches[token] = watch
        continuation.onTermination = { _ in Task { await self.unsubscribe(token, id) } }
        return (id, stream)
    }

    func unsubscribe(_ token: String, _ id: UUID) {
        guard var watch = watches[token] else { return }
        watch.subscribers[id]?.finish()
        watch.subscribers[id] = nil
        if watch.subscribers.isEmpty {
            watch.task?.cancel()
            watches[token] = nil
        } else {
            watches[token] = watch
        }
    }

    /// How many sessions are looked at now (for tests and benchmarks).
    var sessionsWatched: Int { watches.count }

    private func look(_ token: String) async {
        var quiet = 0
        while !Task.isCancelled, watches[token] != nil {
            do {
                try await Task.sleep(for: period)
            } catch {
                return
            }
            let event: Event
            do {
                let asks = try await agent.send(TimeRequestsRequest(pending: true), session: token).requests
                event = .asks(Pages.ids(asks.map(\.id)))
            } catch {
                event = error.code == .notAuthorized ? .signedOut : .stillHere
            }
            guard var watch = watches[token] else { return }
            switch event {
            case .asks(let ids) where ids != watch.shown:
                watch.shown = ids
                watches[token] = watch
                quiet = 0
                for subscriber in watch.subscribers.values { subscriber.yield(event) }
            case .signedOut:
                for subscriber in watch.subscribers.values {
                    subscriber.yield(event)
                    subscriber.finish()
                }
                watches[token] = nil
                return
            default:
                quiet += 1
                if quiet % quietLooks == 0 {
                    for subscriber in watch.subscribers.values { subscriber.yield(.stillHere) }
                }
            }
        }
    }
}
