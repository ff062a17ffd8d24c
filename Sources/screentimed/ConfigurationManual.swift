import ScreenTimeAgent

/// screentimed.json(5), in roff, from `AgentConfiguration.keys`: the page cannot drift from the
/// keys the agent reads.
enum ConfigurationManual {
    static func page(version: String) -> String {
        var page = """
            .TH SCREENTIMED.JSON 5 "" "screentime \(version)" "File Formats"
            .SH NAME
            screentimed.json \\- configuration of the screentime agent
            .SH SYNOPSIS
            .B /etc/screentime/screentimed.json
            .SH DESCRIPTION
            The agent,
            .BR screentimed (8),
            reads this JSON object at start. Every key is optional; a key it does not know is an \
            error that stops it, naming the keys it knows (a typo is never silently ignored). \
            Options on its command line override the file.
            .SH KEYS

            """
        for entry in AgentConfiguration.keys {
            page += ".TP\n.B \(entry.key)\n\(roff(entry.meaning)).\nDefault: \\fB\(roff(entry.default))\\fR.\n"
        }
        page += """
            .SH EXAMPLE
            .nf
            {"guardianGroup": "parents", "idleTimeout": 600}
            .fi
            .SH FILES
            .TP
            .I /etc/screentime/categories/NAME.list
            The web categories: one registrable domain per line.
            .TP
            .I /etc/screentime/doh.list
            DNS-over-HTTPS servers refused to filtered users.
            .SH SEE ALSO
            .BR screentime (1),
            .BR screentimed (8)

            """
        return page
    }

    /// Backticks become bold; roff's own characters are escaped.
    static func roff(_ text: String) -> String {
        var out = ""
        var bold = false
        for character in text {
            switch character {
            case "`":
                out += bold ? "\\fR" : "\\fB"
                bold.toggle()
            case "\\": out += "\\e"
            case "-": out += "\\-"
            default: out.append(character)
            }
        }
        if bold { out += "\\fR" }
        // A line starting with a dot or quote would be a request.
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return out
    }
}
