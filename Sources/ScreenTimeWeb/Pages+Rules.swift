import FoundationEssentials
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeReports

// The rules page of one child: shields, limits, downtime, and what was refused lately, each with
// the forms that change it.
extension Pages {
    /// The store a guardian's `screentime shield --user NAME` changes, which the page changes too.
    static let guardianStore = "screentime/default"

    static func rules(
        name: String, status: StatusReply, monitors: MonitorListReply, apps: [ApplicationReport],
        categories: [CategoryReport], services: [ServiceReport] = [], csrf: String
    ) -> String {
        let action = "/child/\(path(name))"
        var body = "<p><a href=\"\(action)\">← \(HTML.escape(name))'s day</a></p>\n"
        body += "<h1>\(HTML.escape(name))'s rules</h1>\n"
        let appCategories = categories.filter { $0.kind == "app" }
        body += shieldSection(
            action: action, status: status, apps: apps, categories: appCategories, services: services, csrf: csrf)
        body += limitSection(action: action, status: status, apps: apps, categories: appCategories, csrf: csrf)
        body += downtimeSection(action: action, monitors: monitors, csrf: csrf)
        body += refusedSection(status: status)
        return page("\(name)'s rules", body, csrf: csrf)
    }

    /// What a token stands for as the page shows it, and as a form names it to the agent.
    private static func item(_ token: String, _ names: [String: TokenName]) -> (shown: String, identity: String?) {
        guard let name = names[token] else { return ("an item (\(token.prefix(8)))", nil) }
        // An app or a service by its name, anything else by what it is.
        return (name.kind == .app || name.kind == .service ? name.displayName : name.identity, name.identity)
    }

    private static func shieldSection(
        action: String, status: StatusReply, apps: [ApplicationReport], categories: [CategoryReport],
        services: [ServiceReport], csrf: String
    ) -> String {
        var html = "<section class=\"card\"><h2>Shielded</h2>\n"
        let mine = status.stores.first { "\($0.client)/\($0.name)" == guardianStore }?.settings.shield
        var rows: [(kind: String, field: String, token: String)] = []
        rows += (mine?.applications ?? []).map { ("app", "app-token", $0.base64) }
        // A service is in both category shields: one row, removed from both.
        let isService = { (token: String) in status.names[token]?.kind == .service }
        let serviceTokens = Set(
            ((mine?.applicationCategories?.categories ?? []).union(mine?.webDomainCategories?.categories ?? []))
                .map(\.base64).filter(isService))
        rows += serviceTokens.sorted().map { ("service", "service", $0) }
        rows += (mine?.applicationCategories?.categories ?? []).map { ("app category", "category", $0.base64) }
            .filter { !isService($0.2) }
        rows += (mine?.webDomains ?? []).map { ("web domain", "domain", $0.base64) }
        rows += (mine?.webDomainCategories?.categories ?? []).map { ("web category", "web-category", $0.base64) }
            .filter { !isService($0.2) }
        if rows.isEmpty {
            html += "<p class=\"note\">Nothing you shielded yourself.</p>\n"
        } else {
            html += "<ul class=\"plain rules\">\n"
            for row in rows {
                let (shown, identity) = item(row.token, status.names)
                html += "<li><span>\(HTML.escape(shown)) <span class=\"note\">\(row.kind)</span></span>"
                let value =
                    switch row.field {
                    case "app-token": row.token
                    // A service is named to the agent by its ID (`service.youtube` is its category).
                    case "service": identity.map { String($0.dropFirst(ServiceDefinition.categoryPrefix.count)) }
                    default: identity
                    }
                if let value {
                    html += "<form method=\"post\" action=\"\(action)/shield\">\(hidden(csrf))"
                    html += "<input type=\"hidden\" name=\"action\" value=\"remove\">"
                    html += "<input type=\"hidden\" name=\"\(row.field)\" value=\"\(HTML.escape(value))\">"
                    html += "<button type=\"submit\" class=\"quiet\">Remove</button></form>"
                }
                html += "</li>\n"
            }
            html += "</ul>\n"
        }
        let others = otherShields(status)
        if !others.isEmpty {
            html +=
                "<p class=\"note\">Shielded now by other rules: \(HTML.escape(others.joined(separator: "; "))).</p>\n"
        }
        html += "<form method=\"post\" action=\"\(action)/shield\" class=\"stack\">\(hidden(csrf))\n"
        html += appSelect(apps, label: "An app", id: "shield-app")
        html += categorySelect(categories, label: "Or an app category", id: "shield-category")
        if !services.isEmpty {
            html += "<label for=\"shield-service\">Or a service (its sites and apps)</label>"
            html += "<select id=\"shield-service\" name=\"service\"><option value=\"\">—</option>"
            for service in services.sorted(by: { $0.name.lowercased() < $1.name.lowercased() }) {
                html += "<option value=\"\(HTML.escape(service.id))\">\(HTML.escape(service.name))</option>"
            }
            html += "</select>\n"
        }
        html += "<label for=\"shield-domain\">Or a web domain</label>"
        html += "<input id=\"shield-domain\" name=\"domain\" placeholder=\"example.com\" autocapitalize=\"none\">\n"
        html += "<button type=\"submit\">Shield</button></form>\n"
        return html + "</section>\n"
    }

    /// Shields in force from stores other than the guardian's own (limits, downtime, extensions).
    private static func otherShields(_ status: StatusReply) -> [String] {
        var byStore: [String: [String]] = [:]
        for shielded in status.effective.shieldedApplications + status.effective.shieldedWebDomains {
            for store in shielded.stores where store != guardianStore {
                byStore[store, default: []].append(item(shielded.token, status.names).shown)
            }
        }
        for category in status.effective.applicationCategoryShields where category.store != guardianStore {
            let names =
                category.policy == "all"
                ? ["every app"] : category.categories.map { item($0, status.names).shown }
            byStore[category.store, default: []] += names
        }
        return byStore.sorted { $0.key < $1.key }.map { "\($0.value.joined(separator: ", ")) (by \($0.key))" }
    }

    private static func appSelect(_ apps: [ApplicationReport], label: String, id: String) -> String {
        var html = "<label for=\"\(id)\">\(label)</label><select id=\"\(id)\" name=\"app\">"
        html += "<option value=\"\">—</option>"
        for app in apps.sorted(by: { $0.name.lowercased() < $1.name.lowercased() }) {
            html += "<option value=\"\(HTML.escape(app.id))\">\(HTML.escape(app.name))</option>"
        }
        return html + "</select>\n"
    }

    private static func categorySelect(_ categories: [CategoryReport], label: String, id: String) -> String {
        var html = "<label for=\"\(id)\">\(label)</label><select id=\"\(id)\" name=\"category\">"
        html += "<option value=\"\">—</option>"
        for category in categories.sorted(by: { $0.name < $1.name }) {
            html += "<option value=\"\(HTML.escape(category.name))\">\(HTML.escape(category.name))</option>"
        }
        return html + "</select>\n"
    }

    private static func limitSection(
        action: String, status: StatusReply, apps: [ApplicationReport], categories: [CategoryReport], csrf: String
    ) -> String {
        var html = "<section class=\"card\"><h2>Limits</h2>\n"
        html += limitList(status.limits ?? [])
        html += "<form method=\"post\" action=\"\(action)/limit\" class=\"stack\">\(hidden(csrf))\n"
        html += "<input type=\"hidden\" name=\"on\" value=\"screen-time\">"
        html += "<label for=\"screen-daily\">Screen time a day</label>"
        html += "<input id=\"screen-daily\" name=\"daily\" placeholder=\"2h, or mon-fri=1h,sat,sun=3h\" required>\n"
        html += "<div class=\"buttons\"><button type=\"submit\">Set</button>"
        html += "<button type=\"submit\" name=\"action\" value=\"remove\" class=\"quiet\" formnovalidate>"
        html += "No screen-time limit</button></div></form>\n"
        html += itemLimitForm(
            action: action, on: "category",
            select: categorySelect(categories, label: "An app category a day", id: "limit-category"),
            placeholder: "45m", csrf: csrf)
        html += itemLimitForm(
            action: action, on: "app", select: appSelect(apps, label: "An app a day", id: "limit-app"),
            placeholder: "30m", csrf: csrf)
        return html + "</section>\n"
    }

    /// A form that sets or removes the daily limit of the item chosen in `select`.
    private static func itemLimitForm(
        action: String, on: String, select: String, placeholder: String, csrf: String
    )
        -> String
    {
        var html = "<form method=\"post\" action=\"\(action)/limit\" class=\"stack\">\(hidden(csrf))\n"
        html += "<input type=\"hidden\" name=\"on\" value=\"\(on)\">" + select
        html += "<label for=\"\(on)-daily\">Its time a day</label>"
        html += "<input id=\"\(on)-daily\" name=\"daily\" placeholder=\"\(placeholder)\">\n"
        html += "<div class=\"buttons\"><button type=\"submit\">Set</button>"
        html += "<button type=\"submit\" name=\"action\" value=\"remove\" class=\"quiet\">Remove its limit</button>"
        return html + "</div></form>\n"
    }

    private static func downtimeSection(action: String, monitors: MonitorListReply, csrf: String) -> String {
        var html = "<section class=\"card\"><h2>Downtime</h2>\n"
        let downtimes = monitors.monitors.filter { $0.builtIn == "downtime" }
        if downtimes.isEmpty { html += "<p class=\"note\">No downtime.</p>\n" }
        func time(_ components: DateComponents) -> String {
            twoDigits(components.hour ?? 0) + ":" + twoDigits(components.minute ?? 0)
        }
        for downtime in downtimes {
            let when = downtime.weekdays.map { Self.days(Set($0)) } ?? "every day"
            let span = "\(time(downtime.schedule.intervalStart))–\(time(downtime.schedule.intervalEnd))"
            let now = downtime.inInterval ? " <strong>now</strong>" : ""
            let label =
                downtime.name == "downtime" ? "" : " (\(downtime.name.replacing("downtime.", with: "")))"
            html += "<div class=\"rule\"><span>\(span), \(HTML.escape(when))\(HTML.escape(label))\(now)</span>"
            html += "<form method=\"post\" action=\"\(action)/downtime\">\(hidden(csrf))"
            html += "<input type=\"hidden\" name=\"action\" value=\"off\">"
            if downtime.name != "downtime" {
                let short = String(downtime.name.dropFirst("downtime.".count))
                html += "<input type=\"hidden\" name=\"name\" value=\"\(HTML.escape(short))\">"
            }
            html += "<button type=\"submit\" class=\"quiet\">End</button></form></div>\n"
        }
        html += "<form method=\"post\" action=\"\(action)/downtime\" class=\"stack\">\(hidden(csrf))\n"
        html += "<div class=\"times\"><label for=\"down-from\">From</label>"
        html += "<input id=\"down-from\" name=\"from\" type=\"time\" required>"
        html += "<label for=\"down-to\">to</label><input id=\"down-to\" name=\"to\" type=\"time\" required></div>\n"
        html += "<label for=\"down-days\">On</label><select id=\"down-days\" name=\"days\">"
        for days in ["every day", "weekdays", "weekend", "sun-thu"] {
            html += "<option value=\"\(days)\">\(days == "sun-thu" ? "school nights (sun–thu)" : days)</option>"
        }
        html += "</select>\n"
        html += "<label class=\"check\"><input type=\"checkbox\" name=\"no-login\"> Lock the computer then</label>\n"
        html += "<button type=\"submit\">Set downtime</button></form>\n"
        return html + "</section>\n"
    }

    /// Days of the week in words: `weekdays`, `weekend`, `every day`, or `mon, wed`.
    static func days(_ days: Set<Int>) -> String {
        switch days {
        case Set(1...7): "every day"
        case Set(2...6): "weekdays"
        case [1, 7]: "weekend"
        case [1, 2, 3, 4, 5]: "school nights (sun–thu)"
        default:
            days.sorted().compactMap { Weekday.names.indices.contains($0 - 1) ? Weekday.names[$0 - 1] : nil }
                .joined(separator: ", ")
        }
    }

    /// What the shields refused lately: web names looked up, and apps held or stopped.
    private static func refusedSection(status: StatusReply) -> String {
        var rows: [(at: Date, text: String)] = []
        for lookup in status.domainShield?.recentLookups ?? [] {
            let times = lookup.count == 1 ? "" : " (\(lookup.count) times)"
            rows.append((lookup.last, "\(item(lookup.token, status.names).shown): looked up\(times), refused"))
        }
        for event in status.processShield?.recent ?? [] where event.action != "thawed" {
            rows.append((event.time, "\(item(event.token, status.names).shown): \(event.action)"))
        }
        var html = "<section class=\"card\"><h2>Refused lately</h2>\n"
        guard !rows.isEmpty else { return html + "<p class=\"note\">Nothing lately.</p></section>\n" }
        html += "<ul class=\"plain\">\n"
        for row in rows.sorted(by: { $0.at > $1.at }).prefix(20) {
            html +=
                "<li><span class=\"note\">\(LocalTime.format(row.at, "EEE HH:mm"))</span> \(HTML.escape(row.text))</li>\n"
        }
        return html + "</ul></section>\n"
    }
}
