import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
public import ServiceLifecycle
import Synchronization

/// The domain shield: every authorized user's DNS goes through the agent, and what their policy
/// shields is answered NXDOMAIN at once, in the verdict; everyone else's DNS is not touched.
///
/// `prepare()` installs the firewall chains (see `Firewall`) before anything else runs; `run()`
/// reads the netfilter queue on a thread of its own until the agent stops. The rules stay when
/// the agent stops — without a reader the kernel drops what they queue, so the filtered users'
/// lookups fail rather than pass — and go only when the last authorization is revoked (or by
/// `make uninstall`). Each packet is judged against a `DomainFilter` per user, rebuilt whenever a
/// policy changes; shielded lookups are counted and written to the state database in batches.
public final class DomainShield: Service, PolicyConsumer, Sendable {
    let configuration: AgentConfiguration
    let database: StateDatabase
    let minter: TokenMinter
    let suffixes: PublicSuffixList
    let firewall: Firewall
    let logger: Logger
    let state = Mutex(State())
    /// Held through a whole rebuild: a change of policy and a SIGHUP reload never interleave.
    let rebuilding = Mutex(())
    let events = Mutex(EventBuffer())
    let outstanding = OutstandingQueries()
    let connections: ConnectionJudge
    /// Copies of watched flows' packets from their servers (the NFLOG group of the DNS queue's
    /// number), and the kernel's connection marks the agent sets from them: a passed opening's
    /// acknowledgement never waits in the queue. Nil where either cannot be had (the server's
    /// packets are then queued, as before).
    let acknowledgements: (log: PacketLog, marks: ConnectionMarks)?
    /// The kernel's connection marks, to refuse connections of a generation about to come round
    /// again (nil where ctnetlink cannot be had).
    let marks: ConnectionMarks?
    let resolvers = SystemResolvers()
    /// The kernel's table of questions judged, asked again without the queue (nil: off by the
    /// configuration, or the kernel would not have it; every question then comes to the queue).
    let fastPath: DNSFastPath?
    let shadows: ShadowLookups
    let safeSearch: SafeSearchAddresses
    /// Sends the block page of a refused plain-HTTP request (nil: a raw socket could not be made,
    /// and such requests are reset bare).
    let pages = try? RawPacketSender()
    /// Names met while judging, told to the usage tracker (`web`) once the verdicts are sent
    /// (nil: no tracker).
    let metUsage: MetUsage?
    /// What each shielded name met lately is counted under, and when the shield presenter was
    /// last told of it (see `note`); emptied when the policy changes.
    let notedNames = Mutex<[NotedKey: Noted]>([:])
    /// The flows (client's address and port, server's) of the last hellos the kernel let go whose
    /// copies the agent refused (see `judgeLoggedAcknowledgement`).
    let refusedHellos = Mutex<[[UInt8]]>([])
    /// The hellos put in the kernel's table lately, with the generation and the moment of each
    /// put (see `offerHello`); at most `offeredHellosKept`.
    let offeredHellos = Mutex<[DNSFastPath.Hello: (generation: UInt64, at: ContinuousClock.Instant)]>([:])
    static let tellingSpacing: Duration = .seconds(1)
    private let flushSignal: AsyncStream<Void>
    /// Told of each shielded name a filtered user looked up (the shield window's notice).
    let shieldEvents: ShieldEvents
    let flushContinuation: AsyncStream<Void>.Continuation
    /// Ends the watch on the browser policies' files.
    let policyWatchStop = try? StopSignal()
    let policiesPutInStep = DispatchSemaphore(value: 0)

    struct State {
        /// The policy in force, and each authorized user's filter.
        var snapshot = PolicySnapshot.empty
        var filters: [UInt32: DomainFilter] = [:]
        var lists = WebLists()
        /// What the firewall holds, nil until it was first put in step.
        var installedRules: InstalledRules?
        var firewallProblem: String?
        var queueProblem: String?
        /// What the web filters were built from (users, their web shields, the lists); nil
        /// until the first rebuild, which takes the generation the rules in the kernel have.
        var webFingerprint: Int?
        /// What the users' filters were made from (`filterFingerprint`). A change voids the DNS
        /// fast path's table and moves the generation of the PASSED mark (connections passed
        /// before it are judged again); a policy published again with none of it changed (a
        /// sibling's time limit, another user added to the system) leaves both in force.
        var filterFingerprint: Int?
        var generation: UInt8 = 0
        /// The DNS fast path's generation: moved on with every rebuild of the filters (under
        /// this lock), then in the kernel, so that what was judged under a filter no longer in
        /// force passes no more.
        var fastPathGeneration: UInt64 = 0
        /// Whether the browser policies are in place (nil: not yet put in step), and why not.
        var policiesInstalled: Bool?
        var policiesProblem: String?
        /// YouTube's Restricted Mode the browsers are told to force (0: no safe search).
        var policiesRestrict = 0
        /// What the browsers may do (a guardian's `browsers`), and what was written last.
        var browserSettings = BrowserSettings()
        var policiesSettings: BrowserSettings?
        var reading = false
    }

    struct InstalledRules: Equatable {
        /// Kernel uids whose traffic goes through the filter: authorized users and their
        /// subordinate uids.
        var owners: [ClosedRange<UInt32>]
        var dohAddresses: [String]
        var generation: UInt8
        /// SYNs pass in the kernel but those to the addresses in the kernel's sets.
        var synFastPath = false
        /// Watched flows' server packets are logged to this group, not queued.
        var acknowledgementLog: UInt16?
        /// The DNS fast path's programs, which the rules name.
        var dnsFastPath: Firewall.DNSFastPathPrograms?

        func covers(_ uid: UInt32) -> Bool { owners.contains { $0.contains(uid) } }
    }

    /// The web-category lists, the adult list and the bypass list, as loaded, with the files'
    /// signatures so that an unchanged file is not read again.
    struct WebLists {
        var categories: [ActivityCategoryToken: DomainList] = [:]
        var names: [ActivityCategoryToken: String] = [:]
        var adult = DomainList([DomainName]())
        var bypassNames = DomainList([DomainName]())
        var bypassAddresses: [String] = []
        var signatures: [String: String] = [:]
        /// The services' domains (each a category of its own), for `filterFingerprint`.
        var services = ServiceCatalogue()
        var problems: [String] = []
    }

    struct EventKey: Hashable {
        var uid: UInt32
        var domain: DomainName
        var reason: DomainFilter.Reason
        var category: ActivityCategoryToken?
    }

    /// Shielded names met and not yet written, and whose they may be: the users filtered now,
    /// changed with the filters, under the same lock as the counts. A revocation takes its user's
    /// counts at once, and a count its judge made before it is not taken after: written later,
    /// once the user was authorized again, they would come back.
    struct EventBuffer {
        var counts: [EventKey: (first: Date, last: Date, count: Int)] = [:]
        var dropped = 0
        var filtered: Set<UInt32> = []
        static let capacity = 10_000

        mutating func keep(only users: Set<UInt32>) {
            filtered = users
            counts = counts.filter { users.contains($0.key.uid) }
        }

        /// Counts a name met at `now` for a user filtered now (else nothing); whether the buffer
        /// was empty before (its first count starts a batch).
        mutating func count(_ key: EventKey, at now: Date) -> Bool {
            let wasEmpty = counts.isEmpty
            guard filtered.contains(key.uid) else { return false }
            if let entry = counts[key] {
                counts[key] = (entry.first, now, entry.count + 1)
            } else if counts.count < Self.capacity {
                counts[key] = (now, now, 1)
            } else {
                dropped += 1
            }
            return wasEmpty
        }
    }

    /// - Parameters:
    ///   - web: told each lookup of a name and each connection to one (the usage tracker's web time).
    ///   - shieldEvents: told each shielded name met (the shield presenter's notice).
    init(
        configuration: AgentConfiguration, database: StateDatabase, minter: TokenMinter, suffixes: PublicSuffixList,
        web: (any WebActivity)?, shieldEvents: ShieldEvents, logger: Logger
    ) {
        self.shieldEvents = shieldEvents
        let safeHosts = SafeSearchAddresses(resolvers: resolvers)
        safeSearch = safeHosts
        let firewall = Firewall(
            chain: configuration.firewallChain, queue: configuration.dnsQueue, mark: configuration.connectionMark,
            rateLimit: configuration.dnsRateLimit, connectionRateLimit: configuration.connectionRateLimit)
        // Sockets for the kernel's sets, opened now (the sets are made with the rules); none on a
        // kernel without ipset, whose SYNs all come to the queue.
        let sets = try? (
            v4: AddressSet(name: firewall.shieldedAddressSet(.ipv4), family: 4),
            v6: AddressSet(name: firewall.shieldedAddressSet(.ipv6), family: 6)
        )
        acknowledgements =
            configuration.acknowledgementLog ? try? (PacketLog(group: configuration.dnsQueue), ConnectionMarks()) : nil
        marks = acknowledgements?.marks ?? (try? ConnectionMarks())
        fastPath = Self.loadFastPath(configuration, logger: logger)
        let metUsage = web.map { MetUsage(web: $0, domains: RegistrableDomains(suffixes: suffixes)) }
        self.metUsage = metUsage
        connections = ConnectionJudge(safeHosts: safeHosts, shieldedSets: sets) { names, owner in
            metUsage?.note(names, uid: owner, lookups: 0)
        }
        self.configuration = configuration
        self.database = database
        self.minter = minter
        self.suffixes = suffixes
        self.firewall = firewall
        self.logger = logger
        shadows = ShadowLookups(judge: connections, resolvers: resolvers)
        (flushSignal, flushContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // What a guardian last set for the browsers, written with the policies from the start.
        if let saved = try? database.browserSettings().settings { state.withLock { $0.browserSettings = saved } }
    }

    // MARK: status

    func report(uid: UInt32) throws -> DomainShieldReport? {
        let (filter, installed, lists, firewallProblem, queueProblem, reading, policiesProblem) = state.withLock {
            (
                $0.filters[uid], $0.installedRules, $0.lists, $0.firewallProblem, $0.queueProblem, $0.reading,
                $0.policiesProblem
            )
        }
        guard let filter else { return nil }
        var problems = [firewallProblem, queueProblem, policiesProblem].compactMap { $0 } + lists.problems
        problems += SystemResolvers.unseenLookups()
        if !filter.unnamedDomains.isEmpty {
            problems.append(
                "\(filter.unnamedDomains.count) shielded domain token(s) have no known name and are not enforced")
        }
        if !filter.categoriesWithoutList.isEmpty {
            problems.append(
                "\(filter.categoriesWithoutList.count) shielded web categor(y/ies) have no list in \(configuration.categoriesDirectory)"
            )
        }
        if let level = filter.safeSearch {
            let known = Dictionary(safeSearch.known, uniquingKeysWith: { first, _ in first })
            let missing = SafeSearch.targets(level).map(\.description).filter { (known[$0] ?? 0) == 0 }
            if !missing.isEmpty {
                problems.append(
                    "safe search: the PC's resolver has given no address for \(missing.map { String($0.dropLast()) }.joined(separator: ", ")) yet; the child's lookups of those sites get no answer until it does"
                )
            }
        }
        flushEvents()
        let recent = try database.shieldEvents(uid: uid, kind: .domain, limit: 20).map {
            ShieldEventReport(
                first: $0.first, last: $0.last, count: $0.count, token: $0.token, reason: $0.reason,
                category: $0.category)
        }
        return DomainShieldReport(
            filtering: reading && (installed?.covers(uid) ?? false), problems: problems, recentLookups: recent,
            refusedConnections: connections.refusals(of: uid))
    }

    /// The name of a web category's token, for reports.
    func categoryName(_ token: String) -> String? {
        guard let token = try? ActivityCategoryToken(base64: token) else { return nil }
        return state.withLock { $0.lists.names[token] }
    }

    // MARK: running

    /// Reads the DNS queue until the agent stops. Failure policy: a queue that cannot be bound
    /// (another process holds it) or whose reading fails is tried again, after 1 s, then 2, 4…
    /// at most 30 s apart, while the status names the problem; meanwhile the rules stay and send
    /// the filtered users' DNS to a queue nobody reads, so their lookups fail rather than pass.
    /// The agent goes on serving guardians and enforcing app shields.
    public func run() async throws {
        let reloads = Self.hangups()
        async let flushing: Void = flushLoop()
        async let reloading: Void = reloadLoop(reloads)
        async let watchingPolicies: Void = watchBrowserPolicies()
        async let readingAcknowledgements: Void = readAcknowledgements()
        var delay = Self.firstRetry
        var judged = 0
        var overruns = 0
        while !Task.isShuttingDownGracefully {
            let queue: NetfilterQueue
            do {
                queue = try NetfilterQueue(
                    number: configuration.dnsQueue, handler: { [self] packet in judge(packet) },
                    afterVerdicts: { [metUsage] in metUsage?.tell() })
            } catch {
                await retry(
                    after: "the DNS queue cannot be read, so filtered users' lookups fail: \(error.message)", &delay)
                continue
            }
            state.withLock {
                $0.reading = true
                $0.queueProblem = nil
            }
            logger.info("reading the DNS queue", metadata: ["queue": "\(configuration.dnsQueue)"])
            let failure = await read(queue)
            state.withLock { $0.reading = false }
            judged += queue.judged
            overruns += queue.overruns
            guard let failure, !Task.isShuttingDownGracefully else { break }
            await retry(after: "reading the DNS queue failed, so filtered users' lookups fail: \(failure)", &delay)
        }
        flushContinuation.finish()
        reloads.continuation.finish()
        policyWatchStop?.raise()
        policiesPutInStep.signal()
        acknowledgements?.log.stop()
        _ = await (flushing, reloading, watchingPolicies, readingAcknowledgements)
        flushEvents()
        fastPath?.unmount()
        logger.info(
            "stopped reading the DNS queue; its rules stay, so filtered lookups fail until the agent is back",
            metadata: ["judged": "\(judged)", "overruns": "\(overruns)"])
    }

    /// Shows the problem, waits `delay` (or until the agent stops) and doubles it, up to `lastRetry`.
    func retry(after problem: String, _ delay: inout Duration) async {
        state.withLock { $0.queueProblem = problem }
        logger.error("\(problem); trying again", metadata: ["in": "\(delay)"])
        let wait = delay
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
        delay = min(delay * 2, Self.lastRetry)
    }

    static let firstRetry: Duration = .seconds(1)
    static let lastRetry: Duration = .seconds(30)

    /// Reads a bound queue on a thread of its own until the agent stops (nil) or reading fails
    /// (what failed).
    func read(_ queue: NetfilterQueue) async -> String? {
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
                Threads.start("screentime.dns") { [self] in
                    do {
                        try queue.run()
                        done.resume(returning: nil)
                    } catch {
                        logger.error("reading the DNS queue failed", metadata: ["error": "\(error)"])
                        done.resume(returning: "\(error)")
                    }
                }
            }
        } onGracefulShutdown: {
            queue.stop()
        }
    }

    /// Writes events a second after the first of a batch; sleeps while nothing happens.
    func flushLoop() async {
        for await _ in flushSignal {
            try? await Task.sleep(for: .seconds(1))
            flushEvents()
        }
    }

    func reloadLoop(
        _ hangups: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    )
        async
    {
        for await _ in hangups.stream {
            logger.notice("SIGHUP: reloading the web lists")
            reload()
        }
    }

    /// SIGHUP, as a stream: `kill -HUP` reloads the lists.
    static func hangups() -> (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        Hangup.leaveToDispatch()
        let source = DispatchSource.makeSignalSource(signal: Hangup.number)
        source.setEventHandler { continuation.yield() }
        nonisolated(unsafe) let cancellable = source
        continuation.onTermination = { _ in cancellable.cancel() }
        source.resume()
        return (stream, continuation)
    }
}
