import FoundationEssentials
import Glibc
import ScreenTimeCore
import ScreenTimeIPC
import ScreenTimeReports

/// `screentime report --html`: one self-contained page (no script, no outside file) with the day
/// by hour and the week by day as SVG bar charts, and the top apps, categories and web domains.
struct UsageReportPage {
    let main: UsageReport
    let day: UsageReport
    let week: UsageReport

    func render() -> String {
        let clock = WallClock.current()
        let title = "Screen Time of \(main.user.name)"
        var body = ""
        body += "<h1>\(escape(title))</h1>\n"
        body +=
            "<p class=\"lead\">\(escape(clock.format(day.from, "EEEE d MMMM yyyy"))): <strong>\(readable(day.totalSeconds))</strong>"
        body += " in front. This week: <strong>\(readable(week.totalSeconds))</strong>.</p>\n"
        body += "<section><h2>Today by hour</h2>\n"
        body += HTML.barChart(day.segments, label: { clock.format($0.start, "HH") }, name: "today by hour")
        body += "</section>\n<section><h2>This week by day</h2>\n"
        body += HTML.barChart(week.segments, label: { clock.format($0.start, "EEE d") }, name: "the week by day")
        if let limits = main.limits, !limits.isEmpty {
            body += "</section>\n<section><h2>Limits now</h2>\n<ul>\n"
            for limit in limits { body += "<li>\(escape(LimitText.line(limit)))</li>\n" }
            body += "</ul>\n"
        }
        body += "</section>\n<section><h2>Top apps</h2>\n"
        body += ranking(
            main.applications.prefix(10).map { ($0.name ?? $0.token, $0.id, $0.seconds) }, empty: "No app was in front."
        )
        body += "</section>\n<section><h2>Categories</h2>\n"
        body += ranking(
            main.categories.prefix(10).map { ($0.name ?? $0.token, nil, $0.seconds) }, empty: "No category.")
        body += "</section>\n"
        if !main.webDomains.isEmpty {
            body += "<section><h2>Web domains looked up</h2>\n<table>\n"
            body += "<tr><th>domain</th><th>lookups</th><th>first</th><th>last</th></tr>\n"
            for domain in main.webDomains.prefix(20) {
                body += "<tr><td>\(escape(domain.domain ?? domain.token))</td><td>\(domain.lookups)</td>"
                body +=
                    "<td>\(clock.format(domain.firstLookup, "d MMM HH:mm"))</td><td>\(clock.format(domain.lastLookup, "d MMM HH:mm"))</td></tr>\n"
            }
            body += "</table></section>\n"
        }
        body += "<footer>Counted on this computer by screentime; nothing left it.</footer>\n"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>
            :root { color-scheme: light dark; --bar: #3b82f6; --muted: #6b7280; --grid: #e5e7eb; }
            @media (prefers-color-scheme: dark) { :root { --grid: #374151; --muted: #9ca3af; } }
            body { font: 15px/1.45 system-ui, sans-serif; max-width: 860px; margin: 2rem auto; padding: 0 1rem; }
            h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
            .lead { color: var(--muted); margin-top: 0; } svg { width: 100%; height: auto; }
            .row { display: grid; grid-template-columns: 14rem 1fr 6rem; gap: .6rem; align-items: center; margin: .25rem 0; }
            .row .track { background: var(--grid); border-radius: 4px; height: .8rem; }
            .row .fill { background: var(--bar); border-radius: 4px; height: 100%; }
            .row .id { color: var(--muted); font-size: .8rem; display: block; }
            table { border-collapse: collapse; } td, th { padding: .2rem .8rem .2rem 0; text-align: left; }
            footer { color: var(--muted); margin-top: 2rem; font-size: .85rem; }
            </style></head><body>
            \(body)</body></html>

            """
    }

    private func ranking(_ items: [(name: String, id: String?, seconds: Double)], empty: String) -> String {
        guard let longest = items.map(\.seconds).max(), longest > 0 else { return "<p>\(escape(empty))</p>\n" }
        var html = ""
        for item in items {
            let percent = Int((item.seconds / longest * 100).rounded())
            html += "<div class=\"row\"><span>\(escape(item.name))"
            if let id = item.id, id != item.name { html += "<span class=\"id\">\(escape(id))</span>" }
            html += "</span><span class=\"track\"><span class=\"fill\" style=\"display:block;width:\(percent)%\">"
            html += "</span></span><span>\(readable(item.seconds))</span></div>\n"
        }
        return html
    }

    private func escape(_ text: String) -> String { HTML.escape(text) }
}
