import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeReports

/// `screentime status` for people: names where the reader may see them, short tokens otherwise.
struct StatusText {
    let reply: StatusReply

    init(_ reply: StatusReply) { self.reply = reply }

    func render() -> String {
        var out = ""
        let auth = reply.authorization
        let since = auth.changedAt.map { " since \(Self.format($0))" } ?? ""
        out += "\(auth.user.name) (uid \(auth.user.uid)): \(auth.status.rawValue)"
        out += auth.member.map { " as \($0.rawValue)" } ?? ""
        out += since + "\n"
        if auth.member == .child { out += "  names shown to the child: \(auth.showNamesToChild ? "yes" : "no")\n" }
        let namer = TokenNamer(names: reply.names)
        if reply.stores.isEmpty {
            out += "No stores.\n"
        } else {
            out += "Stores:\n"
            for store in reply.stores {
                out += "  \(store.client)/\(store.name)\n"
                out += SettingsText(settings: store.settings, namer: namer).render(indent: "    ")
            }
        }
        out += "Effective policy:\n"
        out += EffectiveText(report: reply.effective, namer: namer).render(indent: "  ")
        if let dns = reply.domainShield {
            out += "DNS filter: \(dns.filtering ? "on" : "NOT in force")\n"
            for problem in dns.problems { out += "  problem: \(problem)\n" }
            if !dns.recentLookups.isEmpty { out += "  shielded lookups, newest first:\n" }
            for event in dns.recentLookups {
                let times = event.count == 1 ? "once" : "\(event.count) times"
                let why =
                    event.reason == "category"
                    ? "category \(event.category.map { namer.name($0, kind: "category") } ?? "?")" : event.reason
                out += "    \(Self.format(event.last))  \(namer.name(event.token, kind: "domain"))  \(times) (\(why))\n"
            }
            if let refused = dns.refusedConnections, !refused.isEmpty {
                let counts = refused.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                out += "  connections refused since the agent started: \(counts.joined(separator: ", "))\n"
            }
        }
        if let processes = reply.processShield {
            out +=
                "App shield: \(processes.watching ? "watching new processes" : "NOT watching new processes") (\(processes.method)\(processes.refusesBlockedExecs == true ? "; blocked apps refused at exec" : ""))\n"
            if processes.onlyInstalledPrograms == true { out += "  only programs a guardian installed may run\n" }
            if let answers = processes.gateAnswers, answers.count > 0 {
                out +=
                    "  exec gate: \(answers.count) asks answered, p50 \(answers.p50) µs, p99 \(answers.p99) µs, slowest \(answers.slowest) µs\n"
            }
            for problem in processes.problems { out += "  problem: \(problem)\n" }
            if !processes.frozen.isEmpty { out += "  frozen now:\n" }
            for process in processes.frozen {
                let what =
                    process.token.isEmpty ? "(\(process.reason ?? "held"))" : namer.name(process.token, kind: "app")
                out += "    pid \(process.pid) \(process.command)  \(what)  since \(Self.format(process.since))\n"
            }
            if let count = processes.frozenCount, count > processes.frozen.count {
                out += "    and \(count - processes.frozen.count) more\n"
            }
            if !processes.recent.isEmpty { out += "  recently, newest first:\n" }
            for event in processes.recent {
                out +=
                    "    \(Self.format(event.time))  \(event.action) pid \(event.pid)  \(namer.name(event.token, kind: "app"))\n"
            }
        }
        if let sessions = reply.sessions {
            out += sessions.isEmpty ? "Sessions: none found (usage counts in graphical sessions)\n" : "Sessions:\n"
            for session in sessions {
                let front =
                    session.held.map { "counting nothing: \($0)" }
                    ?? (session.idle
                        ? "idle"
                        : session.inFront.map { "in front: \(session.inFrontName ?? $0)" } ?? "nothing in front")
                out += "  \(session.kind) \(session.display): \(front); focus from \(session.focusSource)\n"
                if let problem = session.problem { out += "    problem: \(problem)\n" }
            }
        }
        if let logins = reply.logins {
            out += "Logins (told by the PAM hook):\n"
            for login in logins {
                var line = "  \(login.kind) \(login.tty.isEmpty ? "-" : login.tty) via \(login.service)"
                if let host = login.remoteHost, !host.isEmpty { line += " from \(host)" }
                out += line + "  since \(Self.format(login.since))\n"
            }
        }
        if let lock = reply.loginLock {
            if let granted = lock.grantedUntil {
                out +=
                    "Login lock (\(lock.reason) until \(Self.format(lock.until))) lifted by a grant until \(Self.format(granted))\n"
            } else if lock.reason == "guardian", lock.until.timeIntervalSinceNow > 300 * 86_400 {
                out += "Locked by a guardian until unlocked; sessions are held and logins refused\n"
            } else {
                let reason = lock.reason == "guardian" ? "by a guardian" : lock.reason
                out += "Locked: \(reason) until \(Self.format(lock.until)); sessions are held and logins refused\n"
            }
        }
        if let limits = reply.limits {
            out += "Limits now:\n"
            for limit in limits { out += "  \(LimitText.line(limit))\n" }
        }
        if let allowed = reply.alwaysAllowed {
            out += "Always allowed (under downtime and screen time): \(allowed.joined(separator: ", "))\n"
        }
        if let monitors = reply.monitors, !monitors.isEmpty {
            out += "Monitors (screentime monitor list for more):\n"
            for monitor in monitors {
                var line = "  \(monitor.client)/\(monitor.name)"
                if monitor.inInterval { line += ": in progress" }
                let reached = monitor.events.filter(\.reached).map(\.name)
                if !reached.isEmpty { line += "; reached \(reached.joined(separator: ", "))" }
                if let run = monitor.lastRun, run.outcome != "ok" {
                    line += "; its extension \(run.outcome) at \(run.callback): \(run.problem ?? "")"
                }
                out += line + "\n"
            }
        }
        if let asks = reply.pendingAsks {
            out += "Asks for more time waiting: \(asks) ('screentime requests' lists them)\n"
        }
        if let problems = reply.shieldProblems {
            out += "Shield extensions, lately:\n"
            for problem in problems { out += "  \(problem)\n" }
        }
        if let failures = reply.passwordFailures {
            out += "Wrong guardian passwords: \(failures.failures), the last at \(Self.format(failures.lastFailure))"
            out += failures.locked ? "; locked out ('screentime unlock --user \(auth.user.name)' lifts it)\n" : "\n"
        }
        if let launcher = reply.launcher {
            if let pid = launcher.pid {
                out +=
                    "Launcher: running (pid \(pid)); extensions run as \(launcher.extensionAccount ?? "nobody: none may start")"
                out += launcher.problem.map { "; \($0)\n" } ?? "\n"
            } else {
                out += "Launcher: NOT running: \(launcher.problem ?? "unknown")\n"
            }
        }
        if let everyone = reply.authorizedUsers, !everyone.isEmpty {
            out += "Authorized users:\n"
            for user in everyone {
                out +=
                    "  \(user.user.name) (uid \(user.user.uid)): \(user.status.rawValue) as \(user.member?.rawValue ?? "-")\n"
            }
        }
        return out
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false))
    }
}

/// A change to one store, for people.
struct StoreText {
    let reply: StoreReply
    init(_ reply: StoreReply) { self.reply = reply }

    func render() -> String {
        var out = "\(reply.user.name), store \(reply.store.client)/\(reply.store.name):\n"
        let namer = TokenNamer(names: reply.names)
        let settings = SettingsText(settings: reply.store.settings, namer: namer).render(indent: "  ")
        out += settings.isEmpty ? "  (empty)\n" : settings
        return out
    }
}

struct TokenNamer {
    let names: [String: TokenName]

    func name(_ base64: String, kind: String) -> String {
        if let name = names[base64] {
            return name.displayName == name.identity ? name.identity : "\(name.displayName) (\(name.identity))"
        }
        return "\(kind):\(base64.prefix(10))…"
    }

    func names<Kind>(_ tokens: Set<Token<Kind>>?, kind: String) -> String {
        (tokens ?? []).sorted().map { name($0.base64, kind: kind) }.joined(separator: ", ")
    }
}

struct SettingsText {
    let settings: StoreSettings
    let namer: TokenNamer

    func render(indent: String) -> String {
        var lines: [String] = []
        let shield = settings.shield
        if let apps = shield.applications { lines.append("shield.applications: \(namer.names(apps, kind: "app"))") }
        if let policy = shield.applicationCategories {
            lines.append("shield.applicationCategories: \(describe(policy, exceptionKind: "app"))")
        }
        if let domains = shield.webDomains {
            lines.append("shield.webDomains: \(namer.names(domains, kind: "domain"))")
        }
        if let policy = shield.webDomainCategories {
            lines.append("shield.webDomainCategories: \(describe(policy, exceptionKind: "domain"))")
        }
        if let blocked = settings.application.blockedApplications {
            lines.append("application.blockedApplications: \(namer.names(blocked, kind: "app"))")
        }
        if let deny = settings.application.denyAppInstallation {
            lines.append("application.denyAppInstallation: \(deny)")
        }
        if let filter = settings.webContent.blockedByFilter {
            lines.append("webContent.blockedByFilter: \(filterDescription(filter))")
        }
        if let level = settings.webContent.safeSearch {
            lines.append("webContent.safeSearch: \(level.rawValue) (Google, Bing, DuckDuckGo safe; YouTube restricted)")
        }
        return lines.map { indent + $0 + "\n" }.joined()
    }

    private func describe<Kind>(_ policy: ActivityCategoryPolicy<Kind>, exceptionKind: String) -> String {
        let base = policy.name == "specific" ? namer.names(policy.categories, kind: "category") : policy.name
        let except = policy.exceptions
        return except.isEmpty ? base : "\(base) except \(namer.names(except, kind: exceptionKind))"
    }
}

struct EffectiveText {
    let report: EffectiveReport
    let namer: TokenNamer

    func render(indent: String) -> String {
        var lines: [String] = []
        for item in report.shieldedApplications {
            lines.append(
                "app \(namer.name(item.token, kind: "app")) shielded by \(item.stores.joined(separator: ", "))")
        }
        lines += report.applicationCategoryShields.map { categoryLine($0, items: "app") }
        for item in report.shieldedWebDomains {
            lines.append(
                "domain \(namer.name(item.token, kind: "domain")) shielded by \(item.stores.joined(separator: ", "))")
        }
        lines += report.webDomainCategoryShields.map { categoryLine($0, items: "domain") }
        for item in report.blockedApplications {
            lines.append("app \(namer.name(item.token, kind: "app")) blocked by \(item.stores.joined(separator: ", "))")
        }
        for item in report.webContentFilters {
            lines.append("web filter \(filterDescription(item.policy)) by \(item.store)")
        }
        if !report.appInstallationDeniedBy.isEmpty {
            lines.append(
                "only programs a guardian installed run (denied by \(report.appInstallationDeniedBy.joined(separator: ", ")))"
            )
        }
        if lines.isEmpty { lines = ["nothing is shielded"] }
        return lines.map { indent + $0 + "\n" }.joined()
    }

    private func categoryLine(_ item: CategoryShieldReport, items: String) -> String {
        let categories = item.categories.map { namer.name($0, kind: "category") }.joined(separator: ", ")
        let what = item.policy == "all" ? "every \(items)" : "\(items)s in \(categories)"
        return "\(what) shielded by \(item.store)"
    }
}

/// A web-content filter in words.
func filterDescription(_ policy: FilterPolicy) -> String {
    func list(_ domains: Set<DomainName>) -> String { domains.sorted().map(\.unicode).joined(separator: ", ") }
    switch policy {
    case .none: return "none"
    case .auto(let domains, let except):
        return "auto" + (domains.isEmpty ? "" : " + \(list(domains))")
            + (except.isEmpty ? "" : " except \(list(except))")
    case .specific(let domains): return "specific \(list(domains))"
    case .all(let except): return "all" + (except.isEmpty ? "" : " except \(list(except))")
    }
}
