import ScreenTimeCore
import Synchronization

/// The registrable domain each name counts under in usage (`www.bbc.co.uk` → `bbc.co.uk`),
/// remembered for the names met lately: a page asks the same few names again and again, and
/// validating a name and finding its public suffix took a third of a query's time and half of a
/// connection's judging. Asked on the queue's thread, for lookups and connections alike.
final class RegistrableDomains: Sendable {
    let suffixes: PublicSuffixList
    private let known = Mutex<[DNSName: String]>([:])
    /// Bounded: a child inventing names starts it afresh, no more.
    static let kept = 4_096

    init(suffixes: PublicSuffixList) { self.suffixes = suffixes }

    /// The registrable domain of `name`, nil for a name that is no host name.
    func of(_ name: DNSName) -> String? {
        let lower = name.lowercased
        if let domain = known.withLock({ $0[lower] }) { return domain }
        guard let host = lower.domainName else { return nil }
        let domain = (suffixes.registrableDomain(of: host) ?? host).rawValue
        known.withLock { names in
            if names.count >= Self.kept { names.removeAll(keepingCapacity: true) }
            names[lower] = domain
        }
        return domain
    }
}

/// Names a filtered user's programs used, met while judging their packets (a question asked, a
/// connection's opening), kept until the verdicts have gone back and then told to the usage
/// tracker: no packet waits for a name's registrable domain to be found and noted. At most
/// `capacity` wait; more are not counted (a queue's batch is far fewer).
final class MetUsage: Sendable {
    struct Met: Sendable {
        var names: [DNSName]
        var uid: UInt32
        /// Address questions among them (0 for a connection's names).
        var lookups: Int
    }

    private let met = Mutex<[Met]>([])
    static let capacity = 4_096

    func note(_ names: [DNSName], uid: UInt32, lookups: Int) {
        met.withLock { met in
            if met.count < Self.capacity { met.append(Met(names: names, uid: uid, lookups: lookups)) }
        }
    }

    /// What was noted since the last call, oldest first.
    func take() -> [Met] {
        met.withLock { met in
            let taken = met
            met = []
            return taken
        }
    }
}
