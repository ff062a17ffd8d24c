import FoundationEssentials
import Hummingbird
import ScreenTimeIPC
import ScreenTimeReports

/// The dashboard's pages: plain HTML made here (every outside text escaped), one style sheet and
/// one small script of the dashboard's own, nothing from outside the PC.
enum Pages {
    /// A whole page. `csrf` is given on a signed-in guardian's pages (the sign-out form's token);
    /// `asks` (the pending asks' ids) lets the page's script reload it when they change.
    static func page(_ title: String, _ body: String, csrf: String? = nil, asks: [Int64]? = nil) -> String {
        var header = "<header><a class=\"home\" href=\"/\">Screen Time</a>"
        if let csrf {
            header += "<form method=\"post\" action=\"/signout\">\(hidden(csrf))"
            header += "<button type=\"submit\" class=\"quiet\">Sign out</button></form>"
        }
        header += "</header>\n"
        let live = asks.map { " data-asks=\"\(ids($0))\"" } ?? ""
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="light dark">
            <title>\(HTML.escape(title))</title>
            <link rel="stylesheet" href="/static/app.css">
            <script src="/static/app.js" defer></script>
            </head><body\(live)>
            \(header)<main>
            \(body)</main>
            <footer>Served by this computer; nothing here leaves your home.</footer>
            </body></html>

            """
    }

    /// The pending asks' ids as the page and the event stream both write them.
    static func ids(_ asks: [Int64]) -> String { asks.sorted().map(String.init).joined(separator: ",") }

    static func hidden(_ csrf: String) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\">"
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let body = """
            <h1>\(HTML.escape(status.reasonPhrase))</h1>
            <p class="problem" role="alert">\(HTML.escape(message))</p>
            <p><a href="/">Back to the dashboard</a></p>

            """
        return html(page(status.reasonPhrase, body), status: status)
    }

    static func signIn(problem: String? = nil, code: String? = nil) -> String {
        var body = "<h1>Sign in</h1>\n"
        if let problem { body += "<p class=\"problem\" role=\"alert\">\(HTML.escape(problem))</p>\n" }
        body += """
            <form method="post" action="/signin" class="card">
            <label for="user">Your user name on this computer</label>
            <input id="user" name="user" autocomplete="username" autocapitalize="none" required>
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required>
            <button type="submit">Sign in</button>
            </form>
            <form method="post" action="/signin" class="card">
            <label for="code">Or a pairing code from <code>screentime web pair</code></label>
            <input id="code" name="code" autocomplete="one-time-code" autocapitalize="characters" \
            value="\(HTML.escape(code ?? ""))" required>
            <button type="submit">Pair this phone</button>
            </form>
            <p class="note">Only a guardian of this computer can sign in.</p>

            """
        return page("Sign in", body)
    }

    /// The children, each with today's time and limits, and the asks waiting.
    static func overview(
        children: [(name: String, today: UsageReport?)], asks: [TimeRequestReport], csrf: String
    )
        -> String
    {
        var body = "<h1>Your family</h1>\n"
        body += askList(asks, csrf: csrf)
        if children.isEmpty {
            body +=
                "<p>No child is authorized on this computer yet (<code>screentime authorize --child NAME</code>).</p>\n"
        }
        for child in children {
            body +=
                "<section class=\"card\"><h2><a href=\"/child/\(path(child.name))\">\(HTML.escape(child.name))</a></h2>\n"
            if let today = child.today {
                body += "<p class=\"lead\">Today: <strong>\(readable(today.totalSeconds))</strong> in front.</p>\n"
                body += limitList(today.limits ?? [])
            } else {
                body += "<p class=\"note\">Today's report could not be read.</p>\n"
            }
            body += "</section>\n"
        }
        return page("Your family", body, csrf: csrf, asks: asks.map(\.id))
    }

    /// One child: today by hour, the week by day, limits, top apps, categories and domains, asks,
    /// and the lock.
    static func child(
        name: String, usage: Result<(day: UsageReport, week: UsageReport), ScreenTimeIPCError>,
        asks: [TimeRequestReport], lock: LoginLockReport?, csrf: String
    ) -> String {
        var body = "<h1>\(HTML.escape(name))</h1>\n"
        body += "<p><a href=\"/child/\(path(name))/rules\">Rules: shields, limits, downtime</a></p>\n"
        switch usage {
        case .success(let (day, week)):
            body += "<p class=\"lead\">Today: <strong>\(readable(day.totalSeconds))</strong> in front. "
            body += "This week: <strong>\(readable(week.totalSeconds))</strong>.</p>\n"
            body += askList(asks, csrf: csrf)
            body += lockSection(name: name, lock: lock, csrf: csrf)
            body += usageSections(day: day, week: week)
        case .failure(let error):
            body += "<p class=\"problem\">Today's usage could not be read: \(HTML.escape(error.message)).</p>\n"
            body += askList(asks, csrf: csrf)
            body += lockSection(name: name, lock: lock, csrf: csrf)
        }
        return page(name, body, csrf: csrf, asks: asks.map(\.id))
    }

    /// Limits, today by hour, the week by day, top apps, categories and domains.
    static func usageSections(day: UsageReport, week: UsageReport) -> String {
        var body = "<section><h2>Limits now</h2>\n" + limitList(day.limits ?? []) + "</section>\n"
        body += "<section><h2>Today by hour</h2>\n"
        body += HTML.barChart(day.segments, label: { LocalTime.format($0.start, "HH") }, name: "today by hour")
        body += "</section>\n<section><h2>This week by day</h2>\n"
        body += HTML.barChart(week.segments, label: { LocalTime.format($0.start, "EEE d") }, name: "the week by day")
        body += "</section>\n<section><h2>Top apps today</h2>\n"
        body += ranking(
            day.applications.prefix(10).map { ($0.name ?? $0.token, $0.seconds) }, empty: "No app was in front.")
        if let services = day.services, !services.isEmpty {
            body += "</section>\n<section><h2>Services today</h2>\n"
            body += ranking(services.prefix(10).map { ($0.name ?? $0.token, $0.seconds) }, empty: "No service.")
        }
        body += "</section>\n<section><h2>Categories today</h2>\n"
        body += ranking(day.categories.prefix(10).map { ($0.name ?? $0.token, $0.seconds) }, empty: "No category.")
        body += "</section>\n"
        if !day.webDomains.isEmpty {
            body += "<section><h2>Web domains today</h2>\n<ul class=\"plain\">\n"
            for domain in day.webDomains.prefix(20) {
                body +=
                    "<li>\(HTML.escape(domain.domain ?? domain.token)) <span class=\"note\">\(domain.lookups) lookups</span></li>\n"
            }
            body += "</ul></section>\n"
        }
        return body
    }

    static func askList(_ asks: [TimeRequestReport], csrf: String) -> String {
        guard !asks.isEmpty else { return "" }
        var html = "<section class=\"asks\" aria-live=\"polite\"><h2>Asks</h2>\n"
        for ask in asks {
            let what = ask.application ?? ask.webDomain ?? "screen time"
            html += "<div class=\"card ask\"><p><strong>\(HTML.escape(ask.user))</strong> "
            if ask.isSiteAsk {
                html += "asks to open <strong>\(HTML.escape(what))</strong> (\(ask.minutes) min)"
            } else {
                html += "asks for \(ask.minutes) min of <strong>\(HTML.escape(what))</strong>"
            }
            html += " <span class=\"note\">at \(LocalTime.format(ask.createdAt, "HH:mm"))</span></p>\n"
            if let note = ask.note, !note.isEmpty { html += "<blockquote>\(HTML.escape(note))</blockquote>\n" }
            html += "<div class=\"buttons\">"
            var lengths = [("15m", "Grant 15 min"), ("1h", "Grant 1 hour"), ("rest-of-day", "Grant rest of today")]
            // A site asked for may be allowed for good (it joins what the filter lets past).
            if ask.webDomain != nil {
                lengths.append(("always", "Always allow"))
            }
            for (length, label) in lengths {
                html += "<form method=\"post\" action=\"/asks/\(ask.id)/grant\">\(hidden(csrf))"
                html += "<input type=\"hidden\" name=\"length\" value=\"\(length)\">"
                html += "<button type=\"submit\">\(label)</button></form>"
            }
            html += "<form method=\"post\" action=\"/asks/\(ask.id)/deny\">\(hidden(csrf))"
            html += "<button type=\"submit\" class=\"quiet\">Deny</button></form></div></div>\n"
        }
        return html + "</section>\n"
    }

    static func lockSection(name: String, lock: LoginLockReport?, csrf: String) -> String {
        let action = "/child/\(path(name))"
        var html = "<section class=\"card\"><h2>Lock</h2>\n"
        if let lock {
            // A guardian's lock with no end is kept as one at the year 3000.
            let until =
                lock.until.timeIntervalSinceNow > 10 * 365 * 86_400
                ? "until a guardian unlocks it" : "until \(LocalTime.format(lock.until, "EEE d MMM HH:mm"))"
            html += "<p>Locked (\(HTML.escape(lock.reason))) \(until).</p>\n"
        } else {
            html += "<p>Not locked.</p>\n"
        }
        html += "<div class=\"buttons\">"
        html += "<form method=\"post\" action=\"\(action)/lock\">\(hidden(csrf))"
        html += "<button type=\"submit\">Lock now</button></form>"
        html += "<form method=\"post\" action=\"\(action)/lock\">\(hidden(csrf))"
        html += "<input type=\"hidden\" name=\"length\" value=\"rest-of-day\">"
        html += "<button type=\"submit\">Lock for the rest of today</button></form>"
        html += "<form method=\"post\" action=\"\(action)/unlock\">\(hidden(csrf))"
        html += "<button type=\"submit\" class=\"quiet\">Unlock</button></form></div>\n"
        html += "<form method=\"post\" action=\"\(action)/lock\" class=\"inline\">\(hidden(csrf))"
        html += "<label for=\"until\">Lock until</label> <input id=\"until\" name=\"length\" type=\"time\" required> "
        html += "<button type=\"submit\">Lock</button></form>\n"
        return html + "</section>\n"
    }

    static func limitList(_ limits: [UsageReport.LimitStanding]) -> String {
        guard !limits.isEmpty else { return "<p class=\"note\">No limit.</p>\n" }
        var html = "<ul class=\"plain\">\n"
        for limit in limits {
            html += "<li\(limit.reached ? " class=\"reached\"" : "")>\(HTML.escape(LimitText.line(limit)))</li>\n"
        }
        return html + "</ul>\n"
    }

    /// Names with a bar each (a `meter`: no inline style, which the policy forbids).
    static func ranking(_ items: [(name: String, seconds: Double)], empty: String) -> String {
        guard let longest = items.map(\.seconds).max(), longest > 0 else { return "<p>\(HTML.escape(empty))</p>\n" }
        var html = "<ul class=\"ranking\">\n"
        for item in items {
            html += "<li><span>\(HTML.escape(item.name))</span>"
            html +=
                "<meter min=\"0\" max=\"\(Int(longest.rounded()))\" value=\"\(Int(item.seconds.rounded()))\"></meter>"
            html += "<span>\(readable(item.seconds))</span></li>\n"
        }
        return html + "</ul>\n"
    }

    /// A user name in a path: letters, digits and `._-$~!@` as they are (a Linux user name is made of
    /// these), anything else escaped.
    static func path(_ name: String) -> String {
        var text = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"),
                // Allowed in a path as they are (RFC 3986's sub-delims): the router does not decode
                // a name, so a user name's `$` must reach it as it is.
                UInt8(ascii: "$"), UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "@"):
                text.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                text += "%" + hex(byte, width: 2)
            }
        }
        return text
    }
}
