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
/// tracker (`tell`): no packet waits for a name's registrable domain to be found and noted. When
/// `capacity` wait (one segment of DNS over TCP can carry thousands of questions), they are told
/// at once, before the verdicts: none is dropped.
final class MetUsage: Sendable {
    struct Met: Sendable {
        var names: [DNSName]
        var uid: UInt32
        /// Address questions among them (0 for a connection's names).
        var lookups: Int
    }

    private let met = Mutex<[Met]>([])
    let web: any WebActivity
    let domains: RegistrableDomains
    static let capacity = 4_096

    init(web: any WebActivity, domains: RegistrableDomains) {
        self.web = web
        self.domains = domains
    }

    func note(_ names: [DNSName], uid: UInt32, lookups: Int) {
        let full = met.withLock { met in
            met.append(Met(names: names, uid: uid, lookups: lookups))
            return met.count >= Self.capacity
        }
        if full { tell() }
    }

    /// Tells the usage tracker what was noted since it was last told, oldest first.
    func tell() {
        let taken = met.withLock { met in
            let taken = met
            met = []
            return taken
        }
        for entry in taken {
            for domain in Set(entry.names.compactMap(domains.of)) {
                if entry.lookups > 0 { web.lookedUp(domain, uid: entry.uid, times: entry.lookups) }
                web.webUsed(domain, uid: entry.uid)
            }
        }
    }
}
