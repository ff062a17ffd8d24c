/// How strict the safe versions of search and video are: `moderate` and `strict` differ for
/// YouTube alone (Restricted Mode, moderate or strict); Google, Bing and DuckDuckGo have one safe
/// search each.
public enum SafeSearchLevel: String, Codable, Sendable, Hashable, CaseIterable, Comparable {
    case moderate, strict

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs == .moderate && rhs == .strict }
}

/// The names the search engines and YouTube answer with their safe versions, as each documents it
/// for networks that force them: a lookup of one is answered as an alias (CNAME) of the safe
/// host, with the safe host's addresses, so the browser reaches the safe service under the name it
/// asked for.
///
/// - Google: `google.<country>` and `www.google.<country>` (google.com, google.de, google.co.uk,
///   google.com.au, google.cat…), `ipv4.google.com`, `ipv6.google.com`, `images.google.com`,
///   `encrypted.google.com` → `forcesafesearch.google.com`.
/// - YouTube: `www.youtube.com`, `m.youtube.com`, `youtube.com`, `youtubei.googleapis.com`,
///   `youtube.googleapis.com`, `www.youtube-nocookie.com`, `youtube-nocookie.com` →
///   `restrictmoderate.youtube.com` (moderate) or `restrict.youtube.com` (strict).
/// - Bing: `bing.com`, `www.bing.com` → `strict.bing.com`.
/// - DuckDuckGo: `duckduckgo.com`, `www.duckduckgo.com`, `start.duckduckgo.com` →
///   `safe.duckduckgo.com`.
///
/// Versions with no safe host, whose reader can turn safe search off, are refused instead
/// (`hasNoSafeVersion`).
public enum SafeSearch {
    public static let google = name("forcesafesearch.google.com")
    public static let youtubeModerate = name("restrictmoderate.youtube.com")
    public static let youtubeStrict = name("restrict.youtube.com")
    public static let bing = name("strict.bing.com")
    public static let duckDuckGo = name("safe.duckduckgo.com")

    /// Whether `name` is one of the safe hosts (any level).
    public static func isSafeHost(_ name: DNSName) -> Bool {
        [google, youtubeModerate, youtubeStrict, bing, duckDuckGo].contains(name.lowercased)
    }

    /// Whether `name` is a search engine's or YouTube's (any name under Google's search domains,
    /// youtube.com, youtube-nocookie.com, googlevideo.com, googleapis.com, bing.com,
    /// duckduckgo.com): their servers are shared, so a connection naming nothing to one of their
    /// addresses could carry the unsafe site's Host inside.
    public static func isSearchFamily(_ name: DNSName) -> Bool {
        let labels = name.lowercased.labels
        for start in labels.indices {
            let suffix = Array(labels[start...])
            if isGoogleSearch(suffix) || familyDomains.contains(DNSName(validLabels: suffix)) { return true }
        }
        return false
    }

    private static let familyDomains: Set<DNSName> = Set(
        [
            "youtube.com", "youtube-nocookie.com", "googlevideo.com", "googleapis.com", "bing.com", "duckduckgo.com",
            "duck.com",
        ].map(name))

    /// Whether `name` is a version of a search engine that has no safe host and lets its reader
    /// turn safe search off: refused while safe search is on, not aliased. DuckDuckGo's pages
    /// without scripts (`html.`, `lite.`, which honour `kp=-2`) and without AI (`noai.`), its
    /// short domain `duck.com` and every name under it, and Bing's other front doors (`cn.`,
    /// `www2.`).
    public static func hasNoSafeVersion(_ name: DNSName) -> Bool {
        let lower = name.lowercased
        if noSafeVersion.contains(lower) { return true }
        let labels = lower.labels
        return labels.count >= 2 && labels[labels.count - 2] == Array("duck".utf8)
            && labels[labels.count - 1] == Array("com".utf8)
    }

    private static let noSafeVersion: Set<DNSName> = Set(
        ["html.duckduckgo.com", "lite.duckduckgo.com", "noai.duckduckgo.com", "cn.bing.com", "www2.bing.com"].map(
            name))

    /// Every safe host a level can send lookups to.
    public static func targets(_ level: SafeSearchLevel) -> [DNSName] {
        [google, level == .strict ? youtubeStrict : youtubeModerate, bing, duckDuckGo]
    }

    private static let youtube: Set<DNSName> = Set(
        [
            "www.youtube.com", "m.youtube.com", "youtube.com", "youtubei.googleapis.com", "youtube.googleapis.com",
            "www.youtube-nocookie.com", "youtube-nocookie.com",
        ].map(name))
    private static let bingNames: Set<DNSName> = Set(["bing.com", "www.bing.com"].map(name))
    private static let duckDuckGoNames: Set<DNSName> = Set(
        ["duckduckgo.com", "www.duckduckgo.com", "start.duckduckgo.com"].map(name))
    /// Google's other search front doors (they send a browser on to `www.`, or search themselves).
    private static let googleNames: Set<DNSName> = Set(["images.google.com", "encrypted.google.com"].map(name))

    /// The safe host a lookup of `name` is answered with, or nil when it is not a search engine's
    /// or YouTube's (a name of any case, straight off the wire).
    public static func target(for name: DNSName, level: SafeSearchLevel) -> DNSName? {
        let lower = name.lowercased
        if youtube.contains(lower) { return level == .strict ? youtubeStrict : youtubeModerate }
        if bingNames.contains(lower) { return bing }
        if duckDuckGoNames.contains(lower) { return duckDuckGo }
        return isGoogleSearch(lower.labels) || googleNames.contains(lower) ? google : nil
    }

    /// `google.<country>` or `www.google.<country>`, where the country part is `com`, a
    /// two-letter code, or `co.`/`com.` and a two-letter code.
    static func isGoogleSearch(_ labels: [[UInt8]]) -> Bool {
        var rest = labels[...]
        // ipv4. and ipv6.google.com serve the search as www. does.
        if rest.first == Array("www".utf8)
            || (labels.count == 3 && labels[2] == Array("com".utf8)
                && (rest.first == Array("ipv4".utf8) || rest.first == Array("ipv6".utf8)))
        {
            rest = rest.dropFirst()
        }
        guard rest.first == Array("google".utf8) else { return false }
        let country = Array(rest.dropFirst())
        func isCode(_ label: [UInt8]) -> Bool { label.count == 2 && label.allSatisfy { $0 >= 0x61 && $0 <= 0x7A } }
        switch country.count {
        case 1: return country[0] == Array("com".utf8) || country[0] == Array("cat".utf8) || isCode(country[0])
        case 2: return (country[0] == Array("co".utf8) || country[0] == Array("com".utf8)) && isCode(country[1])
        default: return false
        }
    }

    private static func name(_ text: String) -> DNSName {
        DNSName(validLabels: text.split(separator: ".").map { Array($0.utf8) })
    }
}

extension DNSMessage {
    /// The answer to a query for a name whose safe version is `target`: same ID and question, an
    /// alias (CNAME) to the target, then the target's addresses of the type asked (A or AAAA;
    /// none for other types, whose client asks the target itself); QR and RA set, RD and the
    /// opcode kept; EDNS echoed when the query had it.
    public static func alias(
        answering query: DNSMessage, to target: DNSName, addresses: [[UInt8]], ttl: UInt32
    ) -> DNSMessage {
        let kept = query.flags & 0x7900  // opcode and RD
        var answers: [Record] = []
        if let question = query.questions.first {
            var data: [UInt8] = []
            for label in target.labels { data += [UInt8(label.count)] + label }
            data.append(0)
            answers.append(Record(name: question.name, type: 5, class: 1, ttl: ttl, data: data))
            let size = question.type == typeA ? 4 : question.type == typeAAAA ? 16 : -1
            for address in addresses where address.count == size {
                answers.append(Record(name: target, type: question.type, class: 1, ttl: ttl, data: address))
            }
        }
        return DNSMessage(
            id: query.id, flags: 0x8000 | kept | 0x0080, questions: query.questions, answers: answers,
            edns: query.edns.map { EDNS(udpPayloadSize: max(512, $0.udpPayloadSize)) })
    }
}
