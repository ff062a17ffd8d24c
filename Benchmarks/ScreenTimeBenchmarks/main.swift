// Figures for ScreenTimeCore's hot paths, each beside a baseline measured in the same run.
// Nothing here is asserted: `make bench` prints, people read.
import Crypto
import Foundation
import ScreenTimeCore

/// Resident memory now, from /proc (VmRSS), in bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Int(line.split(separator: " ")[1])
    else { return 0 }
    return kilobytes * 1024
}

// Child mode: `ScreenTimeBenchmarks memory list|set FILE` loads the file, builds one structure
// and prints how much resident memory the structure added — each in a fresh process, so one
// structure's freed memory never counts for the other.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "memory" {
    let text = (try? String(contentsOfFile: CommandLine.arguments[3], encoding: .utf8)) ?? ""
    let before = residentBytes()
    if CommandLine.arguments[2] == "list" {
        let list = DomainList(parsing: text)
        print(residentBytes() - before, list.count)
    } else {
        var set: Set<String> = []
        for line in text.split(separator: "\n") { set.insert(line.lowercased()) }
        print(residentBytes() - before, set.count)
    }
    exit(0)
}

// Proc-connector mode: `ScreenTimeBenchmarks proc-connector FORK_STORM` (root; from
// Benchmarks/proc-connector.sh).
if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "proc-connector" {
    do {
        try procConnectorBenchmark(storm: CommandLine.arguments[2])
    } catch {
        print("proc-connector benchmark failed: \(error)")
    }
    exit(0)
}

// Focus mode: `ScreenTimeBenchmarks focus DISPLAY WINDOW WINDOW` (from Benchmarks/focus.sh).
if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "focus" {
    do {
        try focusBenchmark(
            display: CommandLine.arguments[2], windows: CommandLine.arguments[3...].compactMap { UInt32($0) })
    } catch {
        print("focus benchmark failed: \(error)")
    }
    exit(0)
}

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
            [minter.token(for: try CategoryName("cat\(storeIndex)"))], except: [apps[0]])
    }
    try collection.set(settings, for: StoreKey(client: client, name: try StoreName("s\(storeIndex)")))
}
let policy = collection.effectivePolicy
let stores = collection.stores.sorted { $0.key < $1.key }
let queryCategories: Set<ActivityCategoryToken> = [minter.token(for: try CategoryName("game"))]
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
// A web-category list of a million domains: load time, memory and lookups, beside the same
// names in a Set<String> checked suffix by suffix (what a straightforward filter would do).
func childMemory(_ structure: String, _ path: String) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["memory", structure, path]
    let output = Pipe()
    process.standardOutput = output
    guard (try? process.run()) != nil else { return "?" }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return ((Int(text.split(separator: " ").first ?? "") ?? 0) >> 20).description
}
let millionText = (0..<1_000_000).map { "site\($0).example\($0 % 997).com" }.joined(separator: "\n")
let millionPath = FileManager.default.temporaryDirectory.appendingPathComponent("screentime-bench-million.list").path
try millionText.write(toFile: millionPath, atomically: true, encoding: .utf8)
let listMemory = childMemory("list", millionPath)
let setMemory = childMemory("set", millionPath)
let clock = ContinuousClock()
var list: DomainList?
let listLoad = clock.measure { list = DomainList(parsing: millionText) }
var set: Set<String> = []
let setLoad = clock.measure {
    for line in millionText.split(separator: "\n") { set.insert(line.lowercased()) }
}
if let list {
    print(
        "load a 1,000,000-domain list".padding(toLength: 44, withPad: " ", startingAt: 0)
            + "\(listLoad), \(listMemory) MiB   Set<String>: \(setLoad), \(setMemory) MiB")
    let probes = (0..<1_000).map { index in
        try! DNSName(
            labels: ["www", index % 2 == 0 ? "site\(index * 997)" : "other\(index)", "example\(index % 997)", "com"].map
            {
                Array($0.utf8)
            })
    }
    let listLookup = nanosecondsPerOperation(iterations: 200_000) { index in
        sink &+= list.contains(probes[index % probes.count]) ? 1 : 0
    }
    let setLookup = nanosecondsPerOperation(iterations: 200_000) { index in
        let labels = probes[index % probes.count].labels
        var found = false
        for start in labels.indices where !found {
            found = set.contains(String(decoding: Array(labels[start...].joined(separator: [0x2E])), as: UTF8.self))
        }
        sink &+= found ? 1 : 0
    }
    row("look a name up in the million", listLookup, "Set<String>", setLookup)
}
try? FileManager.default.removeItem(atPath: millionPath)

// The DNS filter's hot path: one queued query judged as the agent judges it, by a policy of 50
// shielded domains and a web category, beside judging by tokens minted per query.
if let suffixes = try? PublicSuffixList(parsing: String(contentsOfFile: listPath, encoding: .utf8)) {
    var webSettings = StoreSettings()
    let shieldedDomains = try (0..<50).map { try DomainName("blocked\($0).example") }
    webSettings.shield.webDomains = Set(shieldedDomains.map { minter.token(for: $0) })
    let gamesCategory = minter.token(for: try CategoryName("games"))
    webSettings.shield.webDomainCategories = .specific([gamesCategory])
    let webPolicy = try StoreCollection([(StoreKey(client: client, name: .default), webSettings)]).effectivePolicy
    let gamesList = DomainList(parsing: (0..<1_000).map { "game\($0).example\n" }.joined())
    let filter = DomainFilter(
        policy: webPolicy, names: Dictionary(uniqueKeysWithValues: shieldedDomains.map { (minter.token(for: $0), $0) }),
        categoryLists: [gamesCategory: gamesList], adultList: DomainList([DomainName]()))
    /// An IPv4/UDP packet from 127.0.0.1:40000 to 127.0.0.1:53 carrying a query for `name`.
    func queryPacket(_ name: String) throws -> [UInt8] {
        let dns = DNSMessage(id: 7, flags: 0x0100, questions: [.init(name: DNSName(try DomainName(name)), type: 1)])
            .serialized()
        let udpLength = 8 + dns.count
        let total = 20 + udpLength
        return [
            0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
        ]
            + [0x9C, 0x40, 0, 53, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0] + dns
    }
    let packets = try (0..<1_000).map { index in
        try queryPacket(
            index % 4 == 0
                ? "www.blocked\(index % 50).example"
                : index % 4 == 1 ? "cdn.game\(index).example" : "www.allowed\(index).example")
    }
    let judged = nanosecondsPerOperation(iterations: 100_000) { index in
        guard let packet = try? DNSPacket(parsing: packets[index % packets.count]),
            let message = try? DNSMessage(parsing: packet.payload)
        else { return }
        if filter.verdict(for: message) != nil {
            sink &+= packet.reply(carrying: [DNSMessage.nxdomain(answering: message).serialized()]).count
        } else {
            sink &+= 1
        }
    }
    let minted = nanosecondsPerOperation(iterations: 100_000) { index in
        guard let packet = try? DNSPacket(parsing: packets[index % packets.count]),
            let message = try? DNSMessage(parsing: packet.payload), let name = message.questions.first?.name.domainName
        else { return }
        let candidates = suffixes.shieldCandidates(for: name).map { minter.token(for: $0) }
        let categories: Set<ActivityCategoryToken> = gamesList.contains(name) ? [gamesCategory] : []
        if !webPolicy.webDomainShield(for: candidates, categories: categories).isEmpty {
            sink &+= packet.reply(carrying: [DNSMessage.nxdomain(answering: message).serialized()]).count
        } else {
            sink &+= 1
        }
    }
    row("judge a queued DNS query (parse, filter)", judged, "tokens per query", minted)

    // A connection's opening as the queue judges it: a captured TLS ClientHello in a TCP segment,
    // parsed, its server name read and judged by the same filter, beside the DNS query above.
    let helloPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/ScreenTimeCoreTests/Fixtures/ClientHellos/curl.bin")
    if let hello = try? [UInt8](Data(contentsOf: helloPath)) {
        let total = 40 + hello.count
        let segment =
            [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]
            + [0x9C, 0x40, 0x01, 0xBB, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0xFF, 0xFF, 0, 0, 0, 0] + hello
        let opened = nanosecondsPerOperation(iterations: 100_000) { _ in
            guard let packet = try? DNSPacket(parsing: segment),
                case .names(let names, _) = ConnectionOpening.read(packet.payload)
            else { return }
            sink &+= names.contains { filter.verdict(for: $0) != nil } ? 1 : 2
        }
        row("judge a TLS hello (parse, name, filter)", opened, "a DNS query", judged)
    }
}
print("\n(sink \(sink & 1))")
