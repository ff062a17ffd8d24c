import Dispatch
import LinuxSupport
import ScreenTimeCore
import Synchronization

/// When a child asks for a shielded name, the agent answers NXDOMAIN at once and asks the same
/// resolver the same name itself, in the background, to learn the addresses behind it: for their
/// TTL, that child's connections to them are refused whatever name they claim (`curl --resolve`,
/// an address written into a program). The child's own answer is never delayed by this.
///
/// Bounded: at most `maximumWaiting` lookups wait, each name is asked at most once a minute per
/// child, one lookup at a time, each given a second.
final class ShadowLookups: Sendable {
    private struct State {
        var waiting = 0
        var recent: [String: Double] = [:]
    }

    static let maximumWaiting = 32
    static let repeatAfter: Double = 60
    static let timeout: Duration = .seconds(1)

    private let judge: ConnectionJudge
    private let queue = DispatchQueue(label: "screentime.dns.shadow")
    private let state = Mutex(State())

    init(judge: ConnectionJudge) {
        self.judge = judge
    }

    /// Asks `resolver` (the address and port the child's query went to) for the A and AAAA
    /// records of `name`, and notes them as shielded for `owner`.
    func lookUp(_ name: DNSName, owner: UInt32, resolver: [UInt8], port: UInt16) {
        let key = "\(owner) \(name.lowercased)"
        let now = judge.now
        let admitted = state.withLock { state -> Bool in
            if let last = state.recent[key], now - last < Self.repeatAfter { return false }
            guard state.waiting < Self.maximumWaiting else { return false }
            if state.recent.count >= 4096 { state.recent = state.recent.filter { now - $0.value < Self.repeatAfter } }
            if state.recent.count >= 4096 { return false }
            state.recent[key] = now
            state.waiting += 1
            return true
        }
        guard admitted else { return }
        queue.async { [self] in
            defer { state.withLock { $0.waiting -= 1 } }
            for type in [DNSMessage.typeA, DNSMessage.typeAAAA] {
                let query = DNSMessage(
                    id: UInt16.random(in: 0...UInt16.max), flags: 0x0100,
                    questions: [DNSMessage.Question(name: name, type: type)])
                guard
                    let reply = try? DatagramExchange.ask(
                        query.serialized(), address: resolver, port: port, timeout: Self.timeout),
                    let answers = try? DNSMessage.answers(in: reply)
                else { continue }
                judge.learn(answers.addresses, owner: owner, shielded: true)
            }
        }
    }
}
