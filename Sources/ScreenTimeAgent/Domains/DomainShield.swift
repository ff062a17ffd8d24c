import Foundation
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
    private let configuration: AgentConfiguration
    private let database: StateDatabase
    private let minter: TokenMinter
    private let suffixes: PublicSuffixList
    private let firewall: Firewall
    private let logger: Logger
    private let state = Mutex(State())
    /// Held through a whole rebuild: a change of policy and a SIGHUP reload never interleave.
    private let rebuilding = Mutex(())
    private let events = Mutex(EventBuffer())
    private let outstanding = OutstandingQueries()
    private let connections: ConnectionJudge
    private let resolvers = SystemResolvers()
    private let shadows: ShadowLookups
    private let flushSignal: AsyncStream<Void>
    /// Told, on the queue's thread, of each address question a filtered user asks and each name
    /// their programs use — looked up, or named by a connection's opening (its registrable domain
    /// and owner): the usage tracker's web time.
    private let web: (any WebActivity)?
    /// Told of each shielded name a filtered user looked up (the shield window's notice).
    private let shieldEvents: ShieldEvents
    private let flushContinuation: AsyncStream<Void>.Continuation
    /// Ends the watch on the browser policies' files.
    private let policyWatchStop = try? StopSignal()
    private let policiesPutInStep = DispatchSemaphore(value: 0)

    private struct State {
        /// The policy in force, and each authorized user's filter.
        var snapshot = PolicySnapshot.empty
        var filters: [UInt32: DomainFilter] = [:]
        var lists = WebLists()
        /// What the firewall holds, nil until it was first put in step.
        var installedRules: InstalledRules?
        var firewallProblem: String?
        var queueProblem: String?
        /// What the web filters were built from (users, their web shields, the lists), and the
        /// generation of the PASSED mark: a change makes connections passed before it judged again.
        var webFingerprint: Int?
        var generation: UInt8 = 0
        /// Whether the browser policies are in place (nil: not yet put in step), and why not.
        var policiesInstalled: Bool?
        var policiesProblem: String?
        var reading = false
    }

    struct InstalledRules: Equatable {
        /// Kernel uids whose traffic goes through the filter: authorized users and their
        /// subordinate uids.
        var owners: [ClosedRange<UInt32>]
        var dohAddresses: [String]
        var generation: UInt8

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
        var problems: [String] = []
    }

    private struct EventKey: Hashable {
        var uid: UInt32
        var domain: DomainName
        var reason: DomainFilter.Reason
        var category: ActivityCategoryToken?
    }

    private struct EventBuffer {
        var counts: [EventKey: (first: Date, last: Date, count: Int)] = [:]
        var dropped = 0
        static let capacity = 10_000
    }

    /// - Parameters:
    ///   - web: told each lookup of a name and each connection to one (the usage tracker's web time).
    ///   - shieldEvents: told each shielded name met (the shield presenter's notice).
    init(
        configuration: AgentConfiguration, database: StateDatabase, minter: TokenMinter, suffixes: PublicSuffixList,
        web: (any WebActivity)?, shieldEvents: ShieldEvents, logger: Logger
    ) {
        self.web = web
        self.shieldEvents = shieldEvents
        connections = ConnectionJudge { [web] names, owner in
            guard let web else { return }
            let domains = names.compactMap { $0.lowercased.domainName }.map { suffixes.registrableDomain(of: $0) ?? $0 }
            for domain in Set(domains) { web.webUsed(domain.rawValue, uid: owner) }
        }
        self.configuration = configuration
        self.database = database
        self.minter = minter
        self.suffixes = suffixes
        self.firewall = Firewall(
            chain: configuration.firewallChain, queue: configuration.dnsQueue, mark: configuration.connectionMark,
            rateLimit: configuration.dnsRateLimit, connectionRateLimit: configuration.connectionRateLimit)
        self.logger = logger
        shadows = ShadowLookups(judge: connections, resolvers: resolvers)
        (flushSignal, flushContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: policy

    /// Puts a policy snapshot in force: builds every authorized user's filter, then installs the
    /// rules. Returns once they are.
    package func apply(_ snapshot: PolicySnapshot) {
        rebuilding.withLock { _ in rebuild(snapshot) }
    }

    /// Reloads the lists (SIGHUP) and rebuilds with the policy in force.
    func reload() {
        rebuilding.withLock { _ in rebuild(state.withLock { $0.snapshot }) }
    }

    private func rebuild(_ snapshot: PolicySnapshot) {
        let lists = reloadLists()
        var filters: [UInt32: DomainFilter] = [:]
        for (uid, user) in snapshot.users {
            filters[uid] = filter(user, names: snapshot.names, lists: lists)
        }
        // Filters go in before the rules name a new user, never after: a user's first packets
        // must meet its filter (a user without one is let through, as after a revocation).
        let fingerprint = Self.webFingerprint(snapshot, lists: lists)
        // At start, the generation the rules in the kernel have (a restart changes no policy).
        let inherited = state.withLock { $0.webFingerprint == nil } ? firewall.installedGeneration() : nil
        let (installed, generation) = state.withLock { state -> (InstalledRules?, UInt8) in
            if let inherited, state.webFingerprint == nil { state.generation = inherited }
            state.snapshot = snapshot
            state.filters = filters
            state.lists = lists
            // The web shields changed: connections passed under the old ones go off the fast path.
            if let old = state.webFingerprint, old != fingerprint {
                state.generation = (state.generation &+ 1) % Firewall.generations
            }
            state.webFingerprint = fingerprint
            return (state.installedRules, state.generation)
        }
        let wanted = InstalledRules(
            owners: snapshot.allUIDRanges, dohAddresses: lists.bypassAddresses, generation: generation)
        connections.keep(owners: Set(snapshot.users.keys))
        updateBrowserPolicies(wanted: !snapshot.users.isEmpty)
        // Installed again only when the users or the DoH addresses change (or the last try failed).
        guard installed != wanted else { return }
        var problem: String?
        do {
            if wanted.owners.isEmpty {
                try firewall.remove()
            } else {
                try firewall.install(
                    owners: wanted.owners, dohAddresses: wanted.dohAddresses, generation: wanted.generation)
            }
            logger.info("firewall rules in step", metadata: ["uids": "\(wanted.owners)", "chain": "\(firewall.chain)"])
        } catch {
            problem = "the firewall rules could not be installed: \(error.message)"
            logger.error("\(problem ?? "")")
        }
        state.withLock {
            $0.installedRules = problem == nil ? wanted : installed
            $0.firewallProblem = problem
        }
    }

    /// A digest of what the users' web filters are made of, to tell when they change.
    private static func webFingerprint(_ snapshot: PolicySnapshot, lists: WebLists) -> Int {
        var hasher = Hasher()
        for uid in snapshot.users.keys.sorted() {
            guard let policy = snapshot.users[uid]?.policy else { continue }
            hasher.combine(uid)
            for (token, stores) in policy.webDomainsShieldedByToken.sorted(by: { $0.key.base64 < $1.key.base64 }) {
                hasher.combine(token.base64)
                hasher.combine(stores)
            }
            for (store, shield) in policy.webDomainCategoryShields.sorted(by: { $0.store < $1.store }) {
                hasher.combine(store)
                hasher.combine(shield)
            }
            for (store, filter) in policy.webContentFilters.sorted(by: { $0.store < $1.store }) {
                hasher.combine(store)
                hasher.combine(filter)
            }
        }
        for (path, signature) in lists.signatures.sorted(by: { $0.key < $1.key }) {
            hasher.combine(path)
            hasher.combine(signature)
        }
        return hasher.finalize()
    }

    /// Installs the managed browser policies while any user is filtered, removes them after the
    /// last (see `BrowserPolicies`); again after a failure.
    private func updateBrowserPolicies(wanted: Bool) {
        guard !configuration.browserPolicies.isEmpty,
            state.withLock({ $0.policiesInstalled != wanted || $0.policiesProblem != nil })
        else { return }
        let policies = BrowserPolicies(
            root: configuration.browserPolicies, statePath: configuration.stateDirectory + "/browser-policies.json")
        var problem: String?
        do {
            if wanted { try policies.install() } else { try policies.remove() }
            logger.info(
                wanted ? "browser policies installed" : "browser policies removed",
                metadata: ["firefox": "\(policies.firefoxPath)"])
        } catch {
            problem = "the browser policies could not be \(wanted ? "installed" : "removed"): \(error.message)"
            logger.error("\(problem ?? "")")
        }
        state.withLock {
            $0.policiesInstalled = wanted
            $0.policiesProblem = problem
        }
        policiesPutInStep.signal()
    }

    private func filter(_ user: PolicySnapshot.User, names known: [String: TokenName], lists: WebLists) -> DomainFilter
    {
        let policy = user.policy
        var tokens = Set(policy.webDomainsShieldedByToken.keys.map(\.base64))
        for shield in policy.webDomainCategoryShields { tokens.formUnion(shield.policy.exceptions.map(\.base64)) }
        var names: [WebDomainToken: DomainName] = [:]
        for token in tokens {
            guard let name = known[token], name.kind == .domain else { continue }
            if let token = try? WebDomainToken(base64: token), let domain = try? DomainName(name.identity) {
                names[token] = domain
            }
        }
        let filter = DomainFilter(
            policy: policy, names: names, categoryLists: lists.categories, adultList: lists.adult,
            bypassList: lists.bypassNames)
        if !filter.unnamedDomains.isEmpty || !filter.categoriesWithoutList.isEmpty {
            logger.warning(
                "some web shields cannot be enforced",
                metadata: [
                    "uid": "\(user.uid)", "domainsWithoutName": "\(filter.unnamedDomains.count)",
                    "categoriesWithoutList": "\(filter.categoriesWithoutList.count)",
                ])
        }
        return filter
    }

    /// Reads the lists whose files changed since the last read; keeps the rest.
    private func reloadLists() -> WebLists {
        var lists = state.withLock { $0.lists }
        var seen: [String: String] = [:]
        var problems: [String] = []
        let directory = configuration.categoriesDirectory
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasSuffix(".list")
        }.sorted()
        var categories: [ActivityCategoryToken: DomainList] = [:]
        var names: [ActivityCategoryToken: String] = [:]
        var adult = DomainList([DomainName]())
        for file in files {
            let path = directory + "/" + file
            let name = String(file.dropLast(".list".count))
            guard let category = try? CategoryName(name) else {
                problems.append("\(path): '\(name)' is not a category name")
                continue
            }
            let token = minter.token(for: category)
            let signature = Files.signature(path)
            var list: DomainList
            if let old = lists.categories[token], lists.signatures[path] == signature {
                list = old
            } else {
                guard let bytes = try? Files.read(path, limit: 512 << 20) else {
                    problems.append("cannot read \(path)")
                    continue
                }
                list = DomainList(parsing: String(decoding: bytes, as: UTF8.self))
                logger.info(
                    "web category list loaded",
                    metadata: ["list": "\(path)", "domains": "\(list.count)", "skipped": "\(list.skippedLines.count)"])
            }
            seen[path] = signature
            categories[token] = list
            names[token] = category.name
            if category.name == "adult" { adult = list }
        }
        lists.categories = categories
        lists.names = names
        lists.adult = adult

        let bypassPath = configuration.bypassList
        let bypassSignature = Files.signature(bypassPath)
        if lists.signatures[bypassPath] != bypassSignature {
            if let bytes = try? Files.read(bypassPath, limit: 16 << 20) {
                let (names, addresses) = Self.parseBypass(String(decoding: bytes, as: UTF8.self))
                lists.bypassNames = DomainList(parsing: names.joined(separator: "\n"))
                lists.bypassAddresses = addresses
            } else {
                lists.bypassNames = DomainList([DomainName]())
                lists.bypassAddresses = []
                if Files.exists(bypassPath) { problems.append("cannot read \(bypassPath)") }
            }
        }
        seen[bypassPath] = bypassSignature
        lists.signatures = seen
        lists.problems = problems
        for problem in problems { logger.warning("\(problem)") }
        return lists
    }

    /// A DoH list line is a name or an IPv4/IPv6 address; `#` starts a comment.
    static func parseBypass(_ text: String) -> (names: [String], addresses: [String]) {
        var names: [String] = []
        var addresses: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let word = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .trimmingCharacters(in: .whitespaces)
            guard !word.isEmpty else { continue }
            if IPAddress.isLiteral(word) {
                addresses.append(word)
            } else {
                names.append(word)
            }
        }
        return (names, addresses)
    }

    // MARK: packets

    /// The verdict on one queued packet: a filtered user's DNS query, a reply to one, or the
    /// opening of another of its connections (see `ConnectionJudge`).
    func judge(_ packet: NetfilterQueue.Packet) -> NetfilterQueue.Verdict {
        if packet.incoming {
            let generation = state.withLock { $0.installedRules?.generation ?? 0 }
            guard firewall.standing(ofMark: packet.mark, generation: generation) == .watched else {
                return judgeReply(packet)
            }
            let (decision, owner) = connections.acknowledgement(
                try? DNSPacket(parsing: packet.bytes), generation: generation)
            return verdict(decision, mark: packet.mark, owner: owner, generation: generation)
        }
        guard let sender = packet.uid else {
            // A segment of a watched flow whose socket its process closed (TCP sends the opening
            // again alone): compared with the opening judged, as any other.
            let generation = state.withLock { $0.installedRules?.generation ?? 0 }
            guard firewall.standing(ofMark: packet.mark, generation: generation) == .watched else { return .drop }
            let (decision, owner) = connections.unowned(try? DNSPacket(parsing: packet.bytes))
            return verdict(decision, mark: packet.mark, owner: owner, generation: generation)
        }
        // The sender's uid may be a subordinate one: the filter is its owner's.
        guard
            let (uid, filter, generation) = state.withLock({ state in
                state.snapshot.owner(ofKernelUID: sender).flatMap { owner in
                    state.filters[owner].map { (owner, $0, state.installedRules?.generation ?? 0) }
                }
            })
        else {
            // Not (or no longer) a filtered user: the rules lag a revocation by a moment.
            return .accept
        }
        let parsed = try? DNSPacket(parsing: packet.bytes)
        let standing = firewall.standing(ofMark: packet.mark, generation: generation)
        if let parsed, parsed.destinationPort == 53, standing == nil || standing == .dns {
            return judgeQuery(parsed, uid: uid, filter: filter)
        }
        let decision = connections.judge(
            parsed, bytes: packet.bytes, owner: uid, standing: standing, filter: filter, generation: generation)
        return verdict(decision, mark: packet.mark, owner: uid, generation: generation)
    }

    /// A connection judge's decision as the queue's verdict: a standing for the flow goes back
    /// through NF_REPEAT as the packet's mark, which the rules keep on the connection.
    private func verdict(
        _ decision: ConnectionJudge.Decision, mark: UInt32, owner: UInt32?, generation: UInt8
    ) -> NetfilterQueue.Verdict {
        let others = mark & ~Firewall.markMask
        switch decision {
        case .accept: return .accept
        case .drop: return .drop
        case .pass: return .repeatMarked(others | firewall.mark(.passed, generation: generation))
        case .watch: return .repeatMarked(others | firewall.mark(.watched))
        case .pending: return .repeatMarked(others | firewall.mark(.pending))
        case .refuse(let refusal):
            if let owner {
                if let name = refusal.name, let verdict = refusal.verdict {
                    note(uid: owner, name: name, verdict: verdict)
                }
                connections.count(refusal, owner: owner)
            }
            logger.debug(
                "connection refused", metadata: ["uid": "\(owner.map(String.init) ?? "-")", "why": "\(refusal.reason)"])
            return .repeatMarked(others | firewall.mark(.refused))
        }
    }

    /// The verdict on a DNS query. What cannot be judged is dropped: the sender's lookup fails,
    /// as it would while the agent is down.
    private func judgeQuery(_ parsed: DNSPacket, uid: UInt32, filter: DomainFilter) -> NetfilterQueue.Verdict {
        guard let messages = try? parsed.messages() else { return .drop }
        guard !messages.isEmpty else { return .accept }
        var answers: [[UInt8]] = []
        for bytes in messages {
            guard let message = try? DNSMessage(parsing: bytes) else { return .drop }
            // Counted for usage reports: each address question (A or AAAA) is a lookup.
            if let question = message.questions.first, question.type == 1 || question.type == 28,
                let web, let name = question.name.lowercased.domainName
            {
                let domain = suffixes.registrableDomain(of: name) ?? name
                web.lookedUp(domain.rawValue, uid: uid)
                web.webUsed(domain.rawValue, uid: uid)
            }
            if let (question, verdict) = filter.verdict(for: message) {
                answers.append(DNSMessage.nxdomain(answering: message).serialized())
                note(uid: uid, name: question.name, verdict: verdict)
                // The addresses behind the name, learned in the background, are refused to this
                // child for their TTL.
                if verdict.reason != .bypass {
                    shadows.lookUp(
                        question.name, owner: uid, resolver: Array(parsed.destination), port: parsed.destinationPort)
                }
            }
        }
        // Its reply comes back queued (its connection is marked), to be judged as this user's:
        // the server's, or the NXDOMAIN written here in its place.
        for bytes in messages where bytes.count >= 2 {
            outstanding.remember(Self.key(parsed, id: bytes, reply: false), owner: uid)
        }
        if answers.isEmpty { return .accept }
        // Part of a TCP segment shielded, or a connection not open yet: nothing can be answered
        // in place, and nothing may pass.
        guard answers.count == messages.count, !parsed.opensConnection else { return .drop }
        return .replace(parsed.reply(carrying: answers))
    }

    /// The verdict on a reply to a filtered user (queued by its connection's mark): a reply
    /// whose answers lead to a shielded name — `allowed.test CNAME shielded.test` and its
    /// addresses, a DNAME, an SVCB or HTTPS target — becomes NXDOMAIN for the asker, and an HTTPS
    /// or SVCB answer offering ECH keys becomes an empty answer, so the browser's hello shows the
    /// name (a TCP reply, which cannot be rewritten in place, is dropped). The addresses are
    /// noted for the asker: refused when returned for a shielded name. A reply to no question a
    /// filtered user asked lately is dropped.
    private func judgeReply(_ packet: NetfilterQueue.Packet) -> NetfilterQueue.Verdict {
        guard let parsed = try? DNSPacket(parsing: packet.bytes), let messages = try? parsed.messages() else {
            return .drop
        }
        // The rest of a TCP connection (its handshake, its acknowledgements).
        guard !messages.isEmpty else { return .accept }
        var rewrite: (message: DNSMessage, shielded: Bool)?
        // From one of the system's resolvers (port 53), or from one the child chose.
        let trusted = parsed.sourcePort == 53 && resolvers.contains(parsed.source)
        for bytes in messages {
            guard bytes.count >= 2, let owner = outstanding.owner(of: Self.key(parsed, id: bytes, reply: true)),
                let filter = state.withLock({ $0.filters[owner] }),
                let answers = try? DNSMessage.answers(in: bytes)
            else { return .drop }
            var shielded = false
            for name in answers.names {
                guard let verdict = filter.verdict(for: name) else { continue }
                note(uid: owner, name: name, verdict: verdict)
                shielded = true
                // A reply may carry the alias alone (`alias.test CNAME blocked.test`, no address):
                // the shielded target's addresses are learned by the agent's own lookup.
                if verdict.reason != .bypass {
                    shadows.lookUp(name, owner: owner, resolver: Array(parsed.source), port: parsed.sourcePort)
                }
                break
            }
            connections.learn(answers.addresses, owner: owner, shielded: shielded, trusted: trusted)
            if shielded || answers.offersECH {
                guard let message = try? DNSMessage(parsing: bytes) else { return .drop }
                rewrite = (message, shielded || rewrite?.shielded == true)
            }
        }
        guard let rewrite else { return .accept }
        let answer =
            rewrite.shielded
            ? DNSMessage.nxdomain(answering: rewrite.message) : DNSMessage.noData(answering: rewrite.message)
        guard messages.count == 1, let rewritten = parsed.forwarded(carrying: answer.serialized()) else {
            return .drop
        }
        return .replace(rewritten)
    }

    /// A question's key, from the question's packet or from its reply's.
    private static func key(_ packet: DNSPacket, id bytes: ArraySlice<UInt8>, reply: Bool) -> OutstandingQueries.Key {
        let id = UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1])
        return reply
            ? OutstandingQueries.Key(
                client: Array(packet.destination), clientPort: packet.destinationPort, server: Array(packet.source),
                serverPort: packet.sourcePort, id: id)
            : OutstandingQueries.Key(
                client: Array(packet.source), clientPort: packet.sourcePort, server: Array(packet.destination),
                serverPort: packet.destinationPort, id: id)
    }

    /// The name an event is counted under: for a domain shield, the shield's own name (the
    /// nearest one above the name that the user's policy shields: `play.google.com`, not
    /// `google.com`), so status shows what the guardian wrote; else the registrable domain.
    private func eventDomain(_ domain: DomainName, uid: UInt32, verdict: DomainFilter.Verdict) -> DomainName {
        if verdict.reason == .domain,
            let shielded = state.withLock({ $0.snapshot.users[uid]?.policy.webDomainsShieldedByToken }),
            let shield = domain.selfAndAncestors.first(where: { shielded[minter.token(for: $0)] != nil })
        {
            return shield
        }
        return suffixes.registrableDomain(of: domain) ?? domain
    }

    private func note(uid: UInt32, name: DNSName, verdict: DomainFilter.Verdict) {
        // The nearest name that is a host name: a verdict was reached through one of them.
        var labels = name.labels
        var domain: DomainName?
        while !labels.isEmpty, domain == nil {
            domain = (try? DNSName(labels: labels))?.domainName
            labels.removeFirst()
        }
        guard let domain else { return }
        let shown = eventDomain(domain, uid: uid, verdict: verdict)
        let key = EventKey(uid: uid, domain: shown, reason: verdict.reason, category: verdict.category)
        if verdict.reason != .bypass {
            shieldEvents.tell(
                .met(
                    ShieldedThing(
                        kind: .webDomain, owner: uid, token: minter.token(for: shown).base64, name: shown.unicode,
                        identity: shown.ascii, categories: [], icon: nil, stores: verdict.stores, pid: nil)))
        }
        let now = Date()
        let wasEmpty = events.withLock { buffer in
            let wasEmpty = buffer.counts.isEmpty
            if let entry = buffer.counts[key] {
                buffer.counts[key] = (entry.first, now, entry.count + 1)
            } else if buffer.counts.count < EventBuffer.capacity {
                buffer.counts[key] = (now, now, 1)
            } else {
                buffer.dropped += 1
            }
            return wasEmpty
        }
        if wasEmpty { flushContinuation.yield() }
    }

    /// Writes the counted events to the database.
    func flushEvents() {
        let (counts, dropped) = events.withLock { buffer in
            defer { buffer = EventBuffer() }
            return (buffer.counts, buffer.dropped)
        }
        guard !counts.isEmpty else { return }
        // Only for users still filtered: a revocation deletes a user's events, and lookups
        // counted just before it must not bring them back.
        let filtered = state.withLock { Set($0.filters.keys) }
        var records: [StateDatabase.ShieldEvent] = []
        var names: [String: TokenName] = [:]
        for (key, value) in counts where filtered.contains(key.uid) {
            let token = minter.token(for: key.domain).base64
            names[token] = TokenName(kind: .domain, identity: key.domain.ascii, displayName: key.domain.unicode)
            records.append(
                StateDatabase.ShieldEvent(
                    uid: key.uid, kind: .domain, token: token, reason: key.reason.rawValue,
                    category: key.category?.base64, first: value.first, last: value.last, count: value.count))
        }
        do {
            try database.record(records, names: names)
        } catch {
            logger.error("cannot record shielded lookups", metadata: ["error": "\(error)"])
        }
        if dropped > 0 {
            logger.warning(
                "too many different shielded lookups at once; some were not recorded",
                metadata: ["dropped": "\(dropped)"])
        }
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
        var delay = Self.firstRetry
        var judged = 0
        var overruns = 0
        while !Task.isShuttingDownGracefully {
            let queue: NetfilterQueue
            do {
                queue = try NetfilterQueue(number: configuration.dnsQueue) { [self] packet in judge(packet) }
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
        _ = await (flushing, reloading, watchingPolicies)
        flushEvents()
        logger.info(
            "stopped reading the DNS queue; its rules stay, so filtered lookups fail until the agent is back",
            metadata: ["judged": "\(judged)", "overruns": "\(overruns)"])
    }

    /// Shows the problem, waits `delay` (or until the agent stops) and doubles it, up to `lastRetry`.
    private func retry(after problem: String, _ delay: inout Duration) async {
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
    private func read(_ queue: NetfilterQueue) async -> String? {
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
                let thread = Thread { [self] in
                    do {
                        try queue.run()
                        done.resume(returning: nil)
                    } catch {
                        logger.error("reading the DNS queue failed", metadata: ["error": "\(error)"])
                        done.resume(returning: "\(error)")
                    }
                }
                thread.name = "screentime.dns"
                // Packets wait in the kernel while this thread is off the CPU.
                thread.qualityOfService = .userInteractive
                thread.start()
            }
        } onGracefulShutdown: {
            queue.stop()
        }
    }

    /// Watches the browser policies' files while they are installed: one removed or changed by
    /// someone else is written again (a second agent's test removing them, a package's upgrade).
    /// The watch is made again after each change (a removed folder takes its watch with it); it
    /// sleeps while nothing changes.
    private func watchBrowserPolicies() async {
        guard !configuration.browserPolicies.isEmpty, let stop = policyWatchStop else { return }
        let policies = BrowserPolicies(
            root: configuration.browserPolicies, statePath: configuration.stateDirectory + "/browser-policies.json")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                while !stop.isRaised {
                    guard state.withLock({ $0.policiesInstalled == true }),
                        let watch = try? FileWatch(files: policies.paths)
                    else {
                        // Not installed (or no folder to watch yet): until they are put in step again.
                        policiesPutInStep.wait()
                        continue
                    }
                    restoreBrowserPolicies(policies)
                    try? watch.run(until: stop) { watch.stop() }
                    guard !stop.isRaised else { break }
                    restoreBrowserPolicies(policies)
                }
                done.resume()
            }
            thread.name = "screentime.policies"
            thread.start()
        }
    }

    /// Writes the policies again if they are installed and not in place.
    private func restoreBrowserPolicies(_ policies: BrowserPolicies) {
        rebuilding.withLock { _ in
            guard state.withLock({ $0.policiesInstalled == true }), !policies.isInPlace else { return }
            do {
                try policies.install()
                logger.warning(
                    "the browser policies were removed or changed; written again",
                    metadata: ["firefox": "\(policies.firefoxPath)", "chromium": "\(policies.chromiumPath)"])
            } catch {
                logger.error("the browser policies could not be written again", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes events a second after the first of a batch; sleeps while nothing happens.
    private func flushLoop() async {
        for await _ in flushSignal {
            try? await Task.sleep(for: .seconds(1))
            flushEvents()
        }
    }

    private func reloadLoop(
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
    private static func hangups() -> (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation) {
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
