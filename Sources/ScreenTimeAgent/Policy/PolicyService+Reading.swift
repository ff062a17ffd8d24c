import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import Synchronization

// Reading.
extension PolicyService {
    func status(_ reference: UserReference?, caller: Caller) throws -> StatusReply {
        let account = try target(reference, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may read only your own status")
        }
        let authorization = try authorizationReply(account)
        let (collection, updated) = try database.stores(uid: account.uid)
        let stores = collection.stores.keys.sorted().map { key in
            StoreReport(
                client: key.client.rawValue, name: key.name.rawValue, settings: collection[key], updatedAt: updated[key]
            )
        }
        let effective = Self.report(try inForce(collection, uid: account.uid))
        let mayReadNames = Self.mayReadNames(caller, authorization)
        var names = mayReadNames ? try database.tokenNames(Self.tokens(in: stores)) : [:]
        let everyone =
            caller.isGuardian
            ? try database.authorizations().map { record in
                AuthorizationReply(
                    user: UserSummary(name: record.userName, uid: record.uid), status: record.status,
                    member: record.member,
                    showNamesToChild: record.showNamesToChild, changedAt: record.changedAt)
            } : nil
        let domains = authorization.status == .approved ? try domainShield?.report(uid: account.uid) : nil
        if let report = domains, mayReadNames {
            // Names of the domains looked up, and of the categories that shielded them.
            let tokens = Set(report.recentLookups.map(\.token))
            names.merge(try database.tokenNames(tokens)) { old, _ in old }
            for category in Set(report.recentLookups.compactMap(\.category)) where names[category] == nil {
                if let name = domainShield?.categoryName(category) {
                    names[category] = TokenName(kind: .category, identity: name, displayName: name)
                }
            }
        }
        let processes = authorization.status == .approved ? try processShield?.report(uid: account.uid) : nil
        if let report = processes, mayReadNames {
            let tokens = Set(report.frozen.map(\.token) + report.recent.map(\.token))
            names.merge(try database.tokenNames(tokens)) { old, _ in old }
        }
        var reply = StatusReply(
            authorization: authorization, stores: stores, effective: effective, names: names, authorizedUsers: everyone,
            domainShield: domains, processShield: processes)
        reply.passwordFailures = try approvals.failures(account.uid).map {
            PasswordFailuresReport(failures: $0.failures, lastFailure: $0.lastFailure, locked: $0.locked)
        }
        if caller.isGuardian { reply.launcher = launcher?.report }
        if authorization.status == .approved {
            reply.sessions = usageTracker?.sessions(of: account.uid, names: mayReadNames)
            reply.monitors = try? monitorList(account, client: caller.authority, names: mayReadNames).monitors
            if caller.isGuardian || caller.role == .individual {
                let problems = shieldProblems.of(account.uid)
                reply.shieldProblems = problems.isEmpty ? nil : problems
            }
            let pending = try database.timeRequests(uid: account.uid, limit: 50).filter { $0.state == .pending }
            reply.pendingAsks = pending.isEmpty ? nil : pending.count
            let logins = loginSessions?.report(uid: account.uid) ?? []
            reply.logins = logins.isEmpty ? nil : logins
            reply.loginLock = publisher.current.users[account.uid]?.loginLock.map {
                LoginLockReport(reason: $0.reason, until: $0.until, grantedUntil: $0.grantedUntil)
            }
            let allowed = try database.alwaysAllowedItems(uid: account.uid).map(\.name)
            reply.alwaysAllowed = allowed.isEmpty ? nil : allowed
            let limits = try limitStandings(account, names: mayReadNames) ?? []
            reply.limits = limits.isEmpty ? nil : limits
        }
        return reply
    }

    func report(_ request: ReportRequest, _ context: RequestContext) throws -> UsageReport {
        let caller = try caller(context)
        let account = try target(request.user, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may read only your own report")
        }
        let authorization = try authorizationReply(account)
        guard authorization.status == .approved else {
            throw ScreenTimeIPCError(
                .notAuthorized, "\(account.name) is not authorized: no usage is counted for them")
        }
        guard let tracker = usageTracker else {
            throw ScreenTimeIPCError(.unavailable, "usage is not counted by this agent")
        }
        let mayReadNames = Self.mayReadNames(caller, authorization)
        var report: UsageReport
        do {
            report = try tracker.report(request, user: summary(account), names: mayReadNames)
        } catch let error as ScreenTimeIPCError {
            throw error
        } catch {
            throw ScreenTimeIPCError(.internalError, "cannot read the usage: \(error)")
        }
        report.limits = try limitStandings(account, names: mayReadNames)
        if let program = request.extension {
            report.rendered = try renderReport(report, with: program)
        }
        return report
    }

    /// Where the agent's limits on a user stand now, the day's then the week's of each.
    func limitStandings(_ account: UserAccount, names: Bool) throws -> [UsageReport.LimitStanding]? {
        guard scheduler != nil else { return nil }
        let monitors = try monitorList(account, client: .agent, names: names).monitors
        return monitors.compactMap { monitor -> UsageReport.LimitStanding? in
            guard let builtIn = monitor.builtIn, builtIn.hasPrefix("limit") || builtIn.hasPrefix("screen time"),
                let event = monitor.events.first
            else { return nil }
            let period = LimitPeriod(monitor.schedule)
            var name = monitor.name
            if name.hasPrefix(Self.limitPrefix) { name.removeFirst(Self.limitPrefix.count) }
            if name.hasSuffix(period.suffix) { name.removeLast(period.suffix.count) }
            return UsageReport.LimitStanding(
                name: name, period: period.rawValue, allowance: event.allowance,
                limitSeconds: event.noThresholdToday == true ? nil : event.thresholdSeconds,
                usedSeconds: event.usedSeconds, reached: event.reached)
        }.sorted { left, right in
            func order(_ period: String) -> Int { LimitPeriod.allCases.firstIndex { $0.rawValue == period } ?? 0 }
            return (left.name, order(left.period)) < (right.name, order(right.period))
        }
    }

    /// A report extension's rendering: run as an extension (10 s, no network), the report on its
    /// standard input, at most 1 MiB of what it prints back.
    func renderReport(_ report: UsageReport, with program: String) throws -> String {
        if let problem = ExtensionProgram.problem(with: program) {
            throw ScreenTimeIPCError(.invalidArgument, "the report extension cannot be used: \(problem)")
        }
        guard let launcher = launcher, let client = launcher.client,
            let account = launcher.extensionAccount
        else {
            throw ScreenTimeIPCError(
                .unavailable, "the agent cannot start extensions (no launcher or extension account)")
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        let input = Array((try? encoder.encode(report)) ?? Data()) + [10]
        let request = LaunchRequest(
            kind: .extension, program: program,
            environment: ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/"], uid: account.uid,
            gid: account.gid, network: .none,
            limits: .init(
                cpuSeconds: 10, memoryBytes: ExtensionHost.memoryBytes, processes: 64, openFiles: 256, wallSeconds: 10))
        let outcome: ExtensionProcess.Outcome
        do {
            outcome = try ExtensionProcess.run(
                request, launcher: client, input: input, outputLimit: 1 << 20, channel: nil)
        } catch {
            throw ScreenTimeIPCError(.init("extensionFailed"), "the report extension could not start: \(error.message)")
        }
        guard !outcome.flooded, !outcome.timedOut, outcome.status == 0 else {
            let why =
                outcome.flooded
                ? "it wrote more than 1 MiB"
                : outcome.timedOut ? "it ran longer than 10 s" : "it exited with status \(outcome.status ?? -1)"
            throw ScreenTimeIPCError(
                .init("extensionFailed"),
                "the report extension failed: \(why) \(ExtensionHost.printable(outcome.errors))")
        }
        return String(decoding: outcome.output, as: UTF8.self)
    }

    func catalogue(for account: UserAccount) -> ApplicationCatalogue {
        ApplicationCatalogue(home: account.home, systemDataDirectories: systemDataDirectories)
    }

    /// Guardians, and individuals for themselves, may see names and mint tokens.
    func requireNameReader(_ account: UserAccount, caller: Caller, what: String) throws {
        guard
            caller.isGuardian
                || ((caller.role == .individual || caller.role == .extension) && account.uid == caller.account.uid)
        else {
            throw ScreenTimeIPCError(.notAllowed, "\(what) is for guardians (and individuals, for themselves)")
        }
    }

    func applications(_ reference: UserReference?, caller: Caller) throws -> ApplicationsReply {
        let account = try target(reference, caller: caller)
        try requireNameReader(account, caller: caller, what: "the list of applications")
        let reports = catalogue(for: account).listed.map { item in
            ApplicationReport(
                id: item.entry.id, name: item.entry.name, categories: item.entry.categories,
                token: minter.token(for: item.entry.identity).base64, source: item.source)
        }
        return ApplicationsReply(user: summary(account), applications: reports)
    }

    func categories(_ reference: UserReference?, caller: Caller) throws -> CategoriesReply {
        let account = try target(reference, caller: caller)
        guard caller.isGuardian || account.uid == caller.account.uid else {
            throw ScreenTimeIPCError(.notAllowed, "you may list only your own categories")
        }
        var counts: [String: Int] = Dictionary(uniqueKeysWithValues: Self.mainCategories.map { ($0, 0) })
        for item in catalogue(for: account).listed {
            for name in item.entry.categories { counts[name, default: 0] += 1 }
        }
        var reports: [CategoryReport] = []
        for (name, count) in counts.sorted(by: { $0.key < $1.key }) {
            guard let category = try? CategoryName(name) else { continue }
            reports.append(
                CategoryReport(name: name, kind: "app", token: minter.token(for: category).base64, count: count))
        }
        for name in webCategoryNames() {
            guard let category = try? CategoryName(name) else { continue }
            reports.append(
                CategoryReport(name: name, kind: "web", token: minter.token(for: category).base64, count: nil))
        }
        // The catalogue's services, each a category of apps and sites, for a guardian's picker (a
        // child's own rules show her a service's token, never its name).
        if caller.isGuardian {
            for service in ServiceFiles.load(configuration.servicesDirectory).services.values.sorted(by: {
                $0.id < $1.id
            }) {
                reports.append(
                    CategoryReport(
                        name: service.name, kind: "service", token: minter.token(for: service.categoryName).base64,
                        count: service.applications.count + service.domains.count))
            }
        }
        return CategoriesReply(categories: reports)
    }

    func webCategoryNames() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: configuration.categoriesDirectory)) ?? []
        return files.filter { $0.hasSuffix(".list") }.map { String($0.dropLast(".list".count)) }.sorted()
    }

    func token(_ request: TokenRequest, caller: Caller, context: RequestContext) throws -> TokenReply {
        let account = try target(request.user, caller: caller)
        try requireNameReader(account, caller: caller, what: "minting tokens")
        var resolver = Resolver(service: self, account: account)
        let token: String
        let identity: String
        switch request.kind {
        case .app:
            let (app, name) =
                try request.file.map { try resolver.application(file: $0, context: context) }
                ?? resolver.application(request.identity)
            token = app.base64
            identity = name.identity
        case .domain:
            let (domain, name) = try resolver.webDomain(request.identity)
            token = domain.base64
            identity = name.identity
        case .category:
            let category = try CategoryName(request.identity)
            token = minter.token(for: category).base64
            identity = category.name
        case .service:
            token = try resolver.service(request.identity).base64
            identity = resolver.names[token]?.identity ?? request.identity
        }
        return TokenReply(kind: request.kind, identity: identity, token: token)
    }
}
