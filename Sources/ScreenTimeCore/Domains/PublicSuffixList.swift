/// The Public Suffix List: which part of a name is a public suffix (`co.uk`, `github.io`), and so
/// which part is the registrable domain a guardian means by "a web domain" (`bbc.co.uk`).
///
/// Parsed from the list's text (Debian's `publicsuffix` package installs it as
/// `/usr/share/publicsuffix/public_suffix_list.dat`; reading the file is the agent's business). The
/// rules are the list's own: normal rules, wildcards (`*.ck`), exceptions (`!www.ck`), and the
/// default rule `*` for names no rule covers.
public struct PublicSuffixList: Sendable {
    private var normal: Set<String> = []
    private var wildcard: Set<String> = []
    private var exception: Set<String> = []

    /// The number of rules read.
    public private(set) var ruleCount = 0

    /// Parses the list. With `includePrivateDomains` false, the rules after
    /// `===BEGIN PRIVATE DOMAINS===` (`github.io`, `blogspot.com`, …) are left out.
    public init(parsing text: String, includePrivateDomains: Bool = true) throws(ScreenTimeCoreError) {
        var lineNumber = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.contains("===BEGIN PRIVATE DOMAINS===") && !includePrivateDomains { break }
            guard let rule = line.split(whereSeparator: \.isWhitespace).first, !rule.hasPrefix("//") else { continue }
            do {
                if rule.hasPrefix("!") {
                    exception.insert(try DomainName(String(rule.dropFirst())).ascii)
                } else if rule.hasPrefix("*.") {
                    wildcard.insert(try DomainName(String(rule.dropFirst(2))).ascii)
                } else {
                    normal.insert(try DomainName(String(rule)).ascii)
                }
            } catch {
                throw ScreenTimeCoreError(
                    .invalidPublicSuffixList,
                    "line \(lineNumber) of the public suffix list, '\(rule.prefix(80))': \(error.message)"
                )
            }
            ruleCount += 1
        }
        guard ruleCount > 0 else {
            throw ScreenTimeCoreError(.invalidPublicSuffixList, "the public suffix list holds no rules")
        }
    }

    /// The public suffix of a name (`co.uk` for `www.bbc.co.uk`; by the default rule, the
    /// top-level domain where no rule matches).
    public func publicSuffix(of name: DomainName) -> DomainName {
        // The count never exceeds the name's labels, so the suffix exists.
        name.suffix(labelCount: publicSuffixLabelCount(name)) ?? name
    }

    /// The registrable domain (`bbc.co.uk` for `www.bbc.co.uk`): the public suffix and one label
    /// more. Nil when the name is itself a public suffix.
    public func registrableDomain(of name: DomainName) -> DomainName? {
        name.suffix(labelCount: publicSuffixLabelCount(name) + 1)
    }

    /// The name a guardian's shield is minted from: the name as written, so that a shield on
    /// `play.google.com` leaves `mail.google.com` alone, less a leading `www` label where what
    /// remains is still at least a registrable domain (`www.youtube.com` means the site,
    /// `youtube.com`, not the one host). A public suffix stays itself: a guardian may shield all of
    /// `github.io`.
    public func webDomain(for name: DomainName) -> DomainName {
        guard name.labels.first == "www", let rest = name.parent, registrableDomain(of: rest) != nil else {
            return name
        }
        return rest
    }

    /// Every name whose shield covers `name`: the name and each name above it, so that a shield
    /// on `example.com` covers `www.example.com`, one on `play.example.com` covers
    /// `a.play.example.com`, and one on `github.io` covers `someone.github.io`.
    public func shieldCandidates(for name: DomainName) -> [DomainName] {
        name.selfAndAncestors
    }

    private func publicSuffixLabelCount(_ name: DomainName) -> Int {
        let ascii = name.ascii
        var starts = [ascii.startIndex]
        var index = ascii.startIndex
        while let dot = ascii[index...].firstIndex(of: ".") {
            index = ascii.index(after: dot)
            starts.append(index)
        }
        let count = starts.count
        // An exception rule prevails over every other rule: its suffix minus its first label.
        for (i, start) in starts.enumerated() where exception.contains(String(ascii[start...])) {
            return count - i - 1
        }
        // Otherwise the longest matching rule, scanning from the longest suffix.
        for (i, start) in starts.enumerated() {
            if normal.contains(String(ascii[start...])) { return count - i }
            if i + 1 < count, wildcard.contains(String(ascii[starts[i + 1]...])) { return count - i }
        }
        return 1
    }
}
