import FoundationEssentials
import ScreenTimeCore
import ScreenTimeIPC

extension UsageTracker {
    /// The user's sessions, as `status` shows them.
    func sessions(of uid: UInt32, names: Bool) -> [SessionReport] {
        state.withLock { state in
            state.sessions.values.filter { $0.owner == uid }.sorted { $0.display < $1.display }.map { session in
                let front = session.front?.applications.first
                var source = session.source
                if session.conservative, session.kind == .x11 {
                    source += "; now counting every mapped window (no window is active)"
                } else if session.conservative, !source.contains("every app connected to it counts") {
                    source += "; now every connected app counts (no word of a window in front stands)"
                }
                let told = Self.logindSessions(state, matching: session)
                if !told.isEmpty {
                    source +=
                        "; locked and active from logind (session \(told.map(\.id).sorted().joined(separator: ", ")))"
                }
                return SessionReport(
                    kind: session.kind, display: session.display, focusSource: source, idle: session.idle,
                    inFront: front?.token.base64, inFrontName: names ? front?.name : nil, problem: session.problem,
                    held: session.hold)
            }
        }
    }

    /// The user's usage in the request's stretch: what was written, and the open spans up to now
    /// (written first, so that what a report showed survives kill -9).
    func report(_ request: ReportRequest, user: UserSummary, names: Bool) throws -> UsageReport {
        // A name of the system's zone database (read without waiting; a name with `..` or a
        // path is none).
        guard let zone = ZoneInfo.named(request.timeZone) else {
            throw ScreenTimeIPCError(.invalidArgument, "unknown time zone '\(request.timeZone.prefix(60))'")
        }
        guard request.from < request.to, request.to.timeIntervalSince(request.from) <= 366 * 86_400 else {
            throw ScreenTimeIPCError(
                .invalidArgument, "a report covers from 1 second to 366 days, ending after it starts")
        }
        let interval = DateInterval(start: request.from, end: request.to)
        let (ledger, applications, categoryNames) = try usage(uid: user.uid, during: interval)
        let byApplication = ledger.totalsByApplication(during: interval)
        let applicationReports = byApplication.map { token, seconds in
            let row = applications[token.base64]
            return UsageReport.Application(
                id: names ? row?.identity : nil, name: names ? row?.displayName : nil, token: token.base64,
                seconds: seconds, categories: names ? row?.categories : nil)
        }.sorted { ($0.seconds, $1.token) > ($1.seconds, $0.token) }
        let categoryReports = ledger.totalsByCategory(during: interval).map { token, seconds in
            UsageReport.Category(name: names ? categoryNames[token] : nil, token: token.base64, seconds: seconds)
        }.sorted { ($0.seconds, $1.token) > ($1.seconds, $0.token) }
        let byDomain = ledger.totalsByWebDomain(during: interval)
        var domains: [String: UsageReport.WebDomain] = [:]
        for lookup in try database.lookups(uid: user.uid, during: interval) {
            guard let name = try? DomainName(lookup.domain) else { continue }
            let token = minter.token(for: name).base64
            var entry =
                domains[token]
                ?? UsageReport.WebDomain(
                    domain: names ? lookup.domain : nil, token: token, lookups: 0, firstLookup: lookup.first,
                    lastLookup: lookup.last)
            entry.lookups += lookup.count
            entry.seconds = byDomain[minter.token(for: name)]
            entry.firstLookup = min(entry.firstLookup, lookup.first)
            entry.lastLookup = max(entry.lastLookup, lookup.last)
            domains[token] = entry
        }
        let calendar = ZonedCalendar(zone: zone)
        let segmentation: SegmentInterval =
            request.segments == .hourly ? .hourly(during: interval) : .daily(during: interval)
        let segments = ledger.segments(segmentation, calendar: calendar).map { segment in
            UsageReport.Segment(
                start: segment.interval.start, end: segment.interval.end, seconds: segment.totalActivityDuration,
                applications: Dictionary(uniqueKeysWithValues: segment.applications.map { ($0.key.base64, $0.value) }))
        }
        var report = UsageReport(
            user: user, from: request.from, to: request.to, segmentation: request.segments, timeZone: request.timeZone,
            totalSeconds: ledger.total(during: interval), applications: applicationReports,
            categories: categoryReports,
            webDomains: domains.values.sorted { ($0.lookups, $1.token) > ($1.lookups, $0.token) }, segments: segments,
            names: names)
        report.services = serviceTotals(byApplication: byApplication, byDomain: byDomain, names: names)
        return report
    }

    /// Each service of the catalogue that was used: its apps' time and its sites' (web time is
    /// kept by registrable domain, so a service's subdomain-only names, such as
    /// youtubei.googleapis.com, add none).
    func serviceTotals(
        byApplication: [ApplicationToken: TimeInterval], byDomain: [WebDomainToken: TimeInterval], names: Bool
    ) -> [UsageReport.Service] {
        let catalogue = ServiceFiles.load(configuration.servicesDirectory)
        return catalogue.services.values.compactMap { service -> UsageReport.Service? in
            let apps = service.applications.reduce(0) { $0 + (byApplication[minter.token(for: $1)] ?? 0) }
            let web = Set(service.domains).reduce(0) { $0 + (byDomain[minter.token(for: $1)] ?? 0) }
            guard apps + web > 0 else { return nil }
            return UsageReport.Service(
                id: names ? service.id : nil, name: names ? service.name : nil,
                token: minter.token(for: service.categoryName).base64, applicationSeconds: apps, webSeconds: web)
        }.sorted { ($0.seconds, $1.token) > ($1.seconds, $0.token) }
    }

    /// A user's foreground time that reaches into `interval`, up to now (open spans are written
    /// first): the ledger, the rows by application token, and the categories' names by token.
    func usage(
        uid: UInt32, during interval: DateInterval
    ) throws -> (
        ledger: UsageLedger, applications: [String: StateDatabase.UsageRow],
        categoryNames: [ActivityCategoryToken: String]
    ) {
        flush()
        let rows = try database.usage(uid: uid, during: interval)
        var ledger = UsageLedger()
        var applications: [String: StateDatabase.UsageRow] = [:]
        var categoryNames: [ActivityCategoryToken: String] = [:]
        for row in rows {
            guard let token = try? ApplicationToken(base64: row.token) else { continue }
            var categories = Set<ActivityCategoryToken>()
            for name in row.categories {
                guard let category = try? CategoryName(name) else { continue }
                let categoryToken = minter.token(for: category)
                categories.insert(categoryToken)
                categoryNames[categoryToken] = name
            }
            guard let span = try? UsageSpan(.application(token), categories: categories, start: row.start, end: row.end)
            else { continue }
            ledger.record(span)
            applications[row.token] = row
        }
        // A web domain's time: a browser in front while the domain was in use.
        let browsers = rows.filter { row in
            row.categories.contains { $0.lowercased() == "webbrowser" }
        }
        if !browsers.isEmpty {
            for window in try database.webActivity(uid: uid, during: interval) {
                guard let name = try? DomainName(window.domain) else { continue }
                let token = minter.token(for: name)
                for browser in browsers {
                    let start = max(browser.start, window.start)
                    let end = min(browser.end, window.end)
                    guard start < end, let span = try? UsageSpan(.webDomain(token), start: start, end: end) else {
                        continue
                    }
                    ledger.record(span)
                }
            }
        }
        return (ledger, applications, categoryNames)
    }

    /// Whether anything of the user's is counted as in front now (in any session).
    package func isInFront(uid: UInt32) -> Bool {
        state.withLock { state in
            state.sessions.values.contains { session in
                session.front?.applications.contains { $0.owner == uid } ?? false
            }
        }
    }
}
