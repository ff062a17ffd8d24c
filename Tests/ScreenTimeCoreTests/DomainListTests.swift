import ScreenTimeCore
import Testing

@Suite struct DomainListTests {
    let list = DomainList(
        parsing: """
            # gambling
            casino.example
            Poker.Example   # case does not matter
            0.0.0.0 bets.example
            bücher.de

            not a domain at all!
            10.0.0.1
            casino.example
            """)

    @Test func readsDomainsAndReportsBadLines() {
        #expect(list.count == 4)
        #expect(list.skippedLines == [7, 8])
    }

    @Test func coversNamesUnderAListedDomain() {
        #expect(list.contains(domainName("casino.example")))
        #expect(list.contains(domainName("www.casino.example")))
        #expect(list.contains(domainName("a.b.c.poker.example")))
        #expect(list.contains(domainName("bets.example")))
        #expect(list.contains(domainName("xn--bcher-kva.de")))
        #expect(!list.contains(domainName("example")))
        #expect(!list.contains(domainName("notcasino.example")))
        #expect(!list.contains(domainName("casino.example.org")))
    }

    @Test func wireNamesMatchWithoutCase() throws {
        #expect(list.contains(name("WWW.CASINO.EXAMPLE")))
        let odd = try DNSName(labels: [[0x00, 0xFF], Array("Casino".utf8), Array("example".utf8)])
        #expect(list.contains(odd))
        #expect(!list.contains(try DNSName(labels: [])))
    }

    /// (`make bench` loads a million; this checks correctness at size.)
    @Test func largeListsStayCompactAndExact() {
        let text = (0..<200_000).map { "site\($0).example\($0 % 97).com" }.joined(separator: "\n")
        let big = DomainList(parsing: text)
        #expect(big.count == 200_000)
        #expect(big.byteCount <= 200_000 * 8 * 2)
        #expect(big.contains(domainName("www.site199999.example\(199_999 % 97).com")))
        #expect(!big.contains(domainName("site200000.example0.com")))
        #expect(!big.contains(domainName("site1.example2.com")))
    }

    @Test func trailingDotsAndIDNAFormsAgree() {
        let forms = DomainList(parsing: "Casino.Example.\nXN--BCHER-KVA.de\n")
        #expect(forms.count == 2)
        #expect(forms.contains(domainName("casino.example")))
        #expect(forms.contains(domainName("bücher.de")))
    }
}
