import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// Policy.
extension DomainShield {
    /// Puts a policy snapshot in force: builds every authorized user's filter, then installs the
    /// rules. Returns once they are.
    package func apply(_ snapshot: PolicySnapshot) {
        rebuilding.withLock { _ in rebuild(snapshot) }
    }

    /// Reloads the lists (SIGHUP) and rebuilds with the policy in force.
    func reload() {
        rebuilding.withLock { _ in rebuild(state.withLock { $0.snapshot }) }
    }

    func rebuild(_ snapshot: PolicySnapshot) {
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
        // What the fast path's table let pass was judged under the filters going now.
        takeFastPathHits()
        let filterFingerprint = Self.filterFingerprint(snapshot, lists: lists, web: fingerprint)
        // (Only rebuilds change the fingerprint and the generation, one at a time.)
        let next = state.withLock { state in
            state.filterFingerprint.map { $0 != filterFingerprint } == true
                ? (state.generation &+ 1) % Firewall.generations : nil
        }
        if let next { retireConnections(passedUnder: next) }
        let (installed, generation, fastPathGeneration) = state.withLock { state -> (InstalledRules?, UInt8, UInt64?) in
            if let inherited, state.webFingerprint == nil { state.generation = inherited }
            state.snapshot = snapshot
            state.filters = filters
            events.withLock { $0.keep(only: Set(filters.keys)) }
            let voided = state.filterFingerprint != filterFingerprint
            if voided { state.fastPathGeneration += 1 }
            // The filters changed (their shields, safe search, the services' domains): connections
            // passed under the old ones go off the fast path, to be judged again.
            if voided, state.filterFingerprint != nil {
                state.generation = (state.generation &+ 1) % Firewall.generations
            }
            state.filterFingerprint = filterFingerprint
            state.lists = lists
            state.webFingerprint = fingerprint
            return (state.installedRules, state.generation, voided ? state.fastPathGeneration : nil)
        }
        // Every question judged under the filters before these passes no more (an entry the
        // queue's thread makes meanwhile carries the generation it read with its filter), unless
        // they are made from the same: then what the table holds is what they would judge.
        if let fastPath, let fastPathGeneration {
            do {
                try fastPath.setGeneration(fastPathGeneration)
            } catch {
                logger.critical("the DNS fast path's table could not be voided: \(error.message)")
            }
        }
        // What a shielded name is counted under follows the policy's shields.
        notedNames.withLock { $0.removeAll() }
        var wanted = InstalledRules(
            owners: snapshot.allUIDRanges, dohAddresses: lists.bypassAddresses, generation: generation,
            synFastPath: connections.shieldedSets != nil,
            acknowledgementLog: acknowledgements.map { _ in configuration.dnsQueue },
            dnsFastPath: fastPathPrograms)
        connections.keep(owners: Set(snapshot.users.keys))
        shadows.keep(owners: Set(snapshot.users.keys))
        // Safe search in the browsers too, as strict as any child's.
        let safeSearch = snapshot.users.values.compactMap(\.policy.safeSearch).max()
        updateBrowserPolicies(
            wanted: !snapshot.users.isEmpty, youTubeRestrict: safeSearch.map { $0 == .strict ? 2 : 1 } ?? 0)
        // Installed again only when the users or the DoH addresses change (or the last try failed).
        guard installed != wanted else { return }
        var problem: String?
        do {
            if wanted.owners.isEmpty {
                try firewall.remove()
            } else {
                // The sets the rules name are made first (kept if there); if the kernel cannot
                // make them, every SYN comes to the queue as before.
                if let sets = connections.shieldedSets {
                    do {
                        for set in [sets.v4, sets.v6] {
                            try set.create(
                                capacity: Firewall.shieldedAddressSetCapacity,
                                timeout: Firewall.shieldedAddressSetTimeout)
                        }
                        // The known DoH servers' SYNs go to the filter chain, which refuses them.
                        for address in wanted.dohAddresses {
                            guard let bytes = IPAddress.bytes(address) else { continue }
                            try (bytes.count == 4 ? sets.v4 : sets.v6).add(bytes, seconds: 0)
                        }
                    } catch {
                        logger.warning("no kernel address set; every SYN comes to the queue: \(error.message)")
                        wanted.synFastPath = false
                    }
                }
                do {
                    if let fastPath, wanted.dnsFastPath != nil {
                        // Pinned for iptables-restore, which finds the programs by their paths.
                        try fastPath.pinned { programs throws(SystemError) in
                            var programs = programs
                            programs.hello = wanted.dnsFastPath?.hello
                            try firewall.install(
                                owners: wanted.owners, dohAddresses: wanted.dohAddresses, generation: wanted.generation,
                                synFastPath: wanted.synFastPath, acknowledgementLog: wanted.acknowledgementLog,
                                dnsFastPath: programs)
                        }
                    } else {
                        try firewall.install(
                            owners: wanted.owners, dohAddresses: wanted.dohAddresses, generation: wanted.generation,
                            synFastPath: wanted.synFastPath, acknowledgementLog: wanted.acknowledgementLog)
                    }
                } catch  where wanted.dnsFastPath != nil {
                    // (iptables without the `bpf` match): the rules without the fast path.
                    logger.warning(
                        "the DNS fast path's rules were refused; every question comes to the queue: \(error.message)")
                    wanted.dnsFastPath = nil
                    try firewall.install(
                        owners: wanted.owners, dohAddresses: wanted.dohAddresses, generation: wanted.generation,
                        synFastPath: wanted.synFastPath, acknowledgementLog: wanted.acknowledgementLog)
                }
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

    /// Refuses the connections still marked as passed under `generation`, or acknowledged under
    /// it and never passed (idle since), before it is the rules' again: eight changes of the
    /// filters on, such a connection would pass unjudged. Its next packet is reset instead.
    func retireConnections(passedUnder generation: UInt8) {
        guard let marks else { return }
        let owned = Firewall.markMask | Firewall.acknowledgedMask
        let refused = firewall.mark(.refused)
        let kinds = [
            (firewall.mark(.passed, generation: generation), Firewall.markMask),
            (firewall.mark(.watched) | Firewall.acknowledged(generation: generation), owned),
        ]
        var retired = 0
        for (value, mask) in kinds {
            do {
                for flow in try marks.flows(marked: value, mask: mask) {
                    // Gone meanwhile: nothing to refuse.
                    try? marks.setMark(
                        source: flow.source, sourcePort: flow.sourcePort, destination: flow.destination,
                        destinationPort: flow.destinationPort, value: refused, mask: owned,
                        protocolNumber: flow.transport)
                    retired += 1
                }
            } catch {
                logger.error(
                    "the connections passed eight changes of the filters ago could not be listed; they may pass again: \(error.message)"
                )
            }
        }
        if retired > 0 {
            logger.info(
                "connections passed eight changes of the filters ago are refused",
                metadata: ["connections": "\(retired)"])
        }
    }

    /// What the users' DNS filters are made from (`filter(_:names:lists:)`): the web shields
    /// (`webFingerprint`, with its users), each user's safe search, the tokens' names and the
    /// services' domains. Two snapshots with the same make the same filters.
    static func filterFingerprint(_ snapshot: PolicySnapshot, lists: WebLists, web: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(web)
        for uid in snapshot.users.keys.sorted() {
            hasher.combine(uid)
            hasher.combine(snapshot.users[uid]?.policy.safeSearch)
        }
        for (token, name) in snapshot.names.sorted(by: { $0.key < $1.key }) {
            hasher.combine(token)
            hasher.combine(name)
        }
        hasher.combine(lists.services)
        return hasher.finalize()
    }

    /// A digest of what the users' web filters are made of, to tell when they change.
    static func webFingerprint(_ snapshot: PolicySnapshot, lists: WebLists) -> Int {
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
            // (A grant ending puts a site back behind the filter: connections to it are judged again.)
            for token in policy.grantedWebDomains.map(\.base64).sorted() { hasher.combine(token) }
        }
        for (path, signature) in lists.signatures.sorted(by: { $0.key < $1.key }) {
            hasher.combine(path)
            hasher.combine(signature)
        }
        return hasher.finalize()
    }

    /// Installs the managed browser policies while any user is filtered, removes them after the
    /// last (see `BrowserPolicies`); again after a failure.
    func updateBrowserPolicies(wanted: Bool, youTubeRestrict: Int = 0) {
        let restrict = wanted ? youTubeRestrict : 0
        guard !configuration.browserPolicies.isEmpty,
            state.withLock({ state in
                guard
                    state.policiesInstalled != wanted || state.policiesProblem != nil
                        || state.policiesRestrict != restrict
                        || (wanted && state.policiesSettings != state.browserSettings)
                else { return false }
                state.policiesRestrict = restrict
                state.policiesSettings = state.browserSettings
                return true
            })
        else { return }
        let policies = browserPolicies()
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

    func filter(_ user: PolicySnapshot.User, names known: [String: TokenName], lists: WebLists) -> DomainFilter {
        let policy = user.policy
        var tokens = Set(policy.webDomainsShieldedByToken.keys.map(\.base64))
        for shield in policy.webDomainCategoryShields { tokens.formUnion(shield.policy.exceptions.map(\.base64)) }
        tokens.formUnion(policy.grantedWebDomains.map(\.base64))
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
        // The safe hosts' addresses, learned before the child's first lookup needs them.
        if let level = filter.safeSearch { safeSearch.prefetch(level) }
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
    func reloadLists() -> WebLists {
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
        // Each service is a web category of its own, its list its domains.
        let services = ServiceFiles.load(configuration.servicesDirectory)
        problems += services.problems
        for service in services.services.values {
            let token = minter.token(for: service.categoryName)
            categories[token] = DomainList(service.domains)
            names[token] = service.categoryName.name
        }
        lists.categories = categories
        lists.services = services
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
                .trimmingSpaces()
            guard !word.isEmpty else { continue }
            if IPAddress.isLiteral(word) {
                addresses.append(word)
            } else {
                names.append(word)
            }
        }
        return (names, addresses)
    }
}
