import Foundation
import ScreenTimeCore
import Testing

@Suite struct DomainNameTests {
    @Test(arguments: [
        ("example.com", "example.com"),
        ("WWW.Example.COM.", "www.example.com"),
        ("  example.com\n", "example.com"),
        ("https://www.youtube.com/watch?v=abc", "www.youtube.com"),
        ("http://user:pw@host.example.org:8080/path", "host.example.org"),
        ("youtube.com/shorts", "youtube.com"),
        ("*.example.net", "example.net"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("BÜCHER.de", "xn--bcher-kva.de"),
        ("münchen.de", "xn--mnchen-3ya.de"),
        ("bu\u{0308}cher.de", "xn--bcher-kva.de"),
        ("CAFE\u{0301}.fr", "xn--caf-dma.fr"),
        ("例え.テスト", "xn--r8jz45g.xn--zckzah"),
        ("example\u{3002}com", "example.com"),
        ("_dmarc.example.com", "_dmarc.example.com"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
    ])
    func canonicalForm(_ input: String, _ expected: String) throws {
        #expect(try DomainName(input).ascii == expected)
    }

    @Test(arguments: [
        "", ".", "a..b", ".example.com", "-bad.com", "bad-.com", "exa mple.com", "192.168.1.1",
        String(repeating: "a", count: 64) + ".com", "xn--zz.com", "semi;colon.com",
        (0..<130).map { _ in "a" }.joined(separator: "."),
    ])
    func rejectsNonHosts(_ input: String) {
        #expect(throws: ScreenTimeCoreError.self) { try DomainName(input) }
    }

    @Test func errorSaysWhatWasWrong() {
        do {
            _ = try DomainName("10.0.0.1")
            Issue.record("an address was accepted")
        } catch {
            #expect(error.code == .invalidDomain)
            #expect(error.message.contains("address"))
        }
    }

    @Test func unicodeDisplayRoundTrips() throws {
        #expect(try DomainName("bücher.de").unicode == "bücher.de")
        #expect(try DomainName("例え.テスト").unicode == "例え.テスト")
    }

    @Test func hierarchy() throws {
        let name = try DomainName("a.b.example.com")
        #expect(name.labels == ["a", "b", "example", "com"])
        #expect(name.parent == (try DomainName("b.example.com")))
        #expect(name.selfAndAncestors.map(\.ascii) == ["a.b.example.com", "b.example.com", "example.com", "com"])
        #expect(name.suffix(labelCount: 2) == (try DomainName("example.com")))
        #expect(name.suffix(labelCount: 5) == nil)
        #expect(name.isWithin(try DomainName("example.com")))
        #expect(name.isWithin(name))
        #expect(!(try DomainName("badexample.com")).isWithin(try DomainName("example.com")))
    }

    @Test func codableValidates() throws {
        #expect(try JSONDecoder().decode(DomainName.self, from: Data(#""Example.COM""#.utf8)).ascii == "example.com")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(DomainName.self, from: Data(#""a..b""#.utf8)) }
    }
}

/// Punycode test vectors from RFC 3492 section 7.1 (facts about the encoding).
@Suite struct PunycodeTests {
    @Test(arguments: [
        ("bücher", "xn--bcher-kva"),
        ("ليهمابتكلموشعربي؟", "xn--egbpdaj6bu4bxfgehfvwxn"),
        ("他们为什么不说中文", "xn--ihqwcrb4cv8a8dqg056pqjye"),
        ("почемужеонинеговорятпорусски", "xn--b1abfaaepdrnnbgefbadotcwatmq2g4l"),
        ("3年b組金八先生", "xn--3b-ww4c5e180e575a65lsy2b"),
    ])
    func vectors(_ unicode: String, _ ascii: String) throws {
        #expect(try DomainName(unicode + ".example").ascii == ascii + ".example")
        #expect(try DomainName(ascii + ".example").unicode == unicode + ".example")
    }
}
