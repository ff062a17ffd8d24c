// Figures for ScreenTimeCore's hot paths, each beside a baseline measured in the same run.
// Nothing here is asserted: `make bench` prints, people read.
import Crypto
import Foundation
import ScreenTimeCore

/// Median nanoseconds per operation over several rounds.
func nanosecondsPerOperation(rounds: Int = 7, iterations: Int, _ body: (Int) -> Void) -> Double {
    let clock = ContinuousClock()
    var samples: [Double] = []
    for _ in 0..<rounds {
        let elapsed = clock.measure {
            for index in 0..<iterations { body(index) }
        }
        let (seconds, attoseconds) = elapsed.components
        samples.append((Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(iterations))
    }
    return samples.sorted()[samples.count / 2]
}

func row(_ what: String, _ subject: Double, _ baselineName: String, _ baseline: Double) {
    let ratio = baseline / subject
    print(
        what.padding(toLength: 44, withPad: " ", startingAt: 0)
            + String(format: "%10.1f ns   %@ %10.1f ns   (%.1f×)", subject, baselineName, baseline, ratio))
}

/// Keeps results alive so the optimiser cannot drop the work.
nonisolated(unsafe) var sink = 0

let minter = try TokenMinter(secret: Array(repeating: UInt8(3), count: 32))
let client = try ClientID("bench")

// 50 stores of 50 shielded apps each, a category policy in every fifth store: the largest policy
// Apple's limits allow one client.
var collection = StoreCollection()
var allApps: [ApplicationToken] = []
for storeIndex in 0..<50 {
    var settings = StoreSettings()
    let apps = (0..<50).map { minter.token(for: .desktopEntry("org.bench.app\(storeIndex).\($0)")) }
    allApps += apps
    settings.shield.applications = Set(apps)
    if storeIndex % 5 == 0 {
        settings.shield.applicationCategories = .specific(
            [minter.token(for: try ActivityCategory("cat\(storeIndex)"))], except: [apps[0]])
    }
    try collection.set(settings, for: StoreKey(client: client, name: try StoreName("s\(storeIndex)")))
}
let policy = collection.effectivePolicy
let stores = collection.stores.sorted { $0.key < $1.key }
let queryCategories: Set<ActivityCategoryToken> = [minter.token(for: try ActivityCategory("game"))]
let unknownApps = (0..<1_000).map { minter.token(for: .desktopEntry("org.bench.other\($0)")) }
let queries = (0..<1_000).map { $0 % 2 == 0 ? allApps[$0 * 2] : unknownApps[$0] }

print("ScreenTimeCore benchmarks (median of 7 rounds; lower is better)\n")

let indexed = nanosecondsPerOperation(iterations: 200_000) { index in
    sink &+= policy.applicationShield(for: queries[index % queries.count], categories: queryCategories).count
}
// Baseline: judging every store on each query, as a merge without an index would.
let scanned = nanosecondsPerOperation(iterations: 20_000) { index in
    let app = queries[index % queries.count]
    var count = 0
    for (_, settings) in stores {
        if settings.shield.applications?.contains(app) == true
            || settings.shield.applicationCategories?.covers(app, categories: queryCategories) == true
        {
            count += 1
        }
    }
    sink &+= count
}
row("app shield query, 50 stores × 50 apps", indexed, "per-store scan", scanned)

let rebuild = nanosecondsPerOperation(rounds: 5, iterations: 20) { _ in
    sink &+= collection.effectivePolicy.isEmpty ? 0 : 1
}
print(
    "rebuild the merged policy (2,500 tokens)".padding(toLength: 44, withPad: " ", startingAt: 0)
        + String(format: "%10.1f µs", rebuild / 1_000))

// Token minting: the minter continues a copy of an HMAC keyed once; the baseline keys it anew
// for every token, as HMAC's one-shot API does.
let identities = (0..<1_000).map { ApplicationIdentity.desktopEntry("org.bench.mint\($0)") }
let key = SymmetricKey(data: Array(repeating: UInt8(3), count: 32))
let preKeyed = nanosecondsPerOperation(iterations: 100_000) { index in
    sink &+= minter.token(for: identities[index % identities.count]).hashValue & 1
}
let oneShot = nanosecondsPerOperation(iterations: 100_000) { index in
    var message = Array("application".utf8)
    message.append(0)
    message += identities[index % identities.count].canonical.utf8
    sink &+= Array(HMAC<SHA256>.authenticationCode(for: message, using: key)).count
}
row("mint an application token", preKeyed, "one-shot HMAC", oneShot)

// Domains: canonical form and registrable domain by Debian's Public Suffix List.
let listPath = "/usr/share/publicsuffix/public_suffix_list.dat"
if let text = try? String(contentsOfFile: listPath, encoding: .utf8) {
    let clock = ContinuousClock()
    var list: PublicSuffixList?
    let parse = clock.measure { list = try? PublicSuffixList(parsing: text) }
    if let list {
        print(
            "parse Debian's public suffix list".padding(toLength: 44, withPad: " ", startingAt: 0)
                + "\(parse) for \(list.ruleCount) rules")
        let names = (0..<1_000).map { try! DomainName("host\($0).sub.example\($0 % 50).co.uk") }
        let registrable = nanosecondsPerOperation(iterations: 100_000) { index in
            sink &+= list.registrableDomain(of: names[index % names.count])?.ascii.utf8.count ?? 0
        }
        let canonical = nanosecondsPerOperation(iterations: 100_000) { index in
            sink &+= (try? DomainName("WWW.Host\(index % 1_000).Example.co.uk."))?.ascii.utf8.count ?? 0
        }
        row("registrable domain of a name", registrable, "canonicalise typed", canonical)
    }
} else {
    print("(\(listPath) is missing: run 'sudo make deps' for the domain figures)")
}
print("\n(sink \(sink & 1))")
