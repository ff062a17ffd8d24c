import Foundation
import ScreenTimeCore
import Testing

/// A few rules in the list's own format, with each kind of rule.
private let excerpt = """
    // ===BEGIN ICANN DOMAINS===
    com
    uk
    co.uk
    jp
    *.kawasaki.jp
    !city.kawasaki.jp
    *.ck
    !www.ck
    // Unicode rules are stored in IDNA form.
    公司.cn
    cn
    // ===END ICANN DOMAINS===
    // ===BEGIN PRIVATE DOMAINS===
    github.io
    // ===END PRIVATE DOMAINS===
    """

@Suite struct PublicSuffixListTests {
    let list = try! PublicSuffixList(parsing: excerpt)

    @Test(arguments: [
        ("example.com", "example.com"),
        ("www.example.com", "example.com"),
        ("a.b.c.example.com", "example.com"),
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("foo.bar.kawasaki.jp", "foo.bar.kawasaki.jp"),
        ("www.city.kawasaki.jp", "city.kawasaki.jp"),
        ("www.ck", "www.ck"),
        ("a.b.ck", "a.b.ck"),
        ("alice.github.io", "alice.github.io"),
        ("www.alice.github.io", "alice.github.io"),
        ("食狮.公司.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("example.unlisted", "example.unlisted"),
        ("a.example.unlisted", "example.unlisted"),
    ])
    func registrableDomain(_ name: String, _ expected: String) throws {
        #expect(list.registrableDomain(of: try DomainName(name))?.ascii == expected)
    }

    @Test(arguments: ["com", "co.uk", "github.io", "bar.kawasaki.jp", "b.ck", "unlisted"])
    func publicSuffixesHaveNoRegistrableDomain(_ name: String) throws {
        let domain = try DomainName(name)
        #expect(list.registrableDomain(of: domain) == nil)
        #expect(list.webDomain(for: domain) == domain)
    }

    @Test func privateDomainsCanBeLeftOut() throws {
        let icann = try PublicSuffixList(parsing: excerpt, includePrivateDomains: false)
        #expect(icann.registrableDomain(of: try DomainName("alice.github.io"))?.ascii == "github.io")
        #expect(icann.ruleCount == list.ruleCount - 1)
    }

    @Test func shieldCandidatesRunFromTheNameUp() throws {
        #expect(
            list.shieldCandidates(for: try DomainName("www.bbc.co.uk")).map(\.ascii) == [
                "www.bbc.co.uk", "bbc.co.uk", "co.uk", "uk",
            ])
        #expect(
            list.shieldCandidates(for: try DomainName("x.alice.github.io")).map(\.ascii) == [
                "x.alice.github.io", "alice.github.io", "github.io", "io",
            ])
    }

    /// A shield covers the name the guardian wrote, less a leading `www` where a site remains.
    @Test(arguments: [
        ("play.google.com", "play.google.com"), ("www.youtube.com", "youtube.com"), ("youtube.com", "youtube.com"),
        ("www.bbc.co.uk", "bbc.co.uk"), ("news.bbc.co.uk", "news.bbc.co.uk"), ("www.co.uk", "www.co.uk"),
        ("github.io", "github.io"), ("www.alice.github.io", "alice.github.io"), ("www.github.io", "www.github.io"),
        ("www.www.example.com", "www.example.com"),
    ])
    func webDomainIsTheNameAsWritten(_ name: String, _ expected: String) throws {
        #expect(list.webDomain(for: try DomainName(name)).ascii == expected)
    }

    @Test func badRulesAreRefusedWithTheirLine() {
        do {
            _ = try PublicSuffixList(parsing: "com\nbad..rule\n")
            Issue.record("a bad rule was accepted")
        } catch {
            #expect(error.code == .invalidPublicSuffixList)
            #expect(error.message.contains("line 2"))
        }
        #expect(throws: ScreenTimeCoreError.self) { try PublicSuffixList(parsing: "// only comments\n\n") }
    }

    /// The whole list as Debian ships it (`make deps` installs the `publicsuffix` package).
    @Test func parsesDebiansList() throws {
        let path = "/usr/share/publicsuffix/public_suffix_list.dat"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let real = try PublicSuffixList(parsing: text)
        #expect(real.ruleCount > 5_000)
        #expect(real.registrableDomain(of: try DomainName("www.bbc.co.uk"))?.ascii == "bbc.co.uk")
        #expect(real.registrableDomain(of: try DomainName("someone.github.io"))?.ascii == "someone.github.io")
        #expect(real.registrableDomain(of: try DomainName("www.city.kawasaki.jp"))?.ascii == "city.kawasaki.jp")
        #expect(real.registrableDomain(of: try DomainName("m.youtube.com"))?.ascii == "youtube.com")
    }
}
