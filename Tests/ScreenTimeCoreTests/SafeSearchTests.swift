import Foundation
import ScreenTimeCore
import Testing

/// Safe search at the name: which lookups are answered with which safe host, and the answer itself,
/// read back by dnspython.
@Suite struct SafeSearchTests {
    static func name(_ text: String) -> DNSName { DNSName(try! DomainName(text)) }

    @Test(arguments: [
        ("google.com", "forcesafesearch.google.com"), ("www.google.com", "forcesafesearch.google.com"),
        ("WWW.Google.DE", "forcesafesearch.google.com"), ("www.google.co.uk", "forcesafesearch.google.com"),
        ("google.com.au", "forcesafesearch.google.com"), ("google.cat", "forcesafesearch.google.com"),
        ("ipv4.google.com", "forcesafesearch.google.com"), ("ipv6.google.com", "forcesafesearch.google.com"),
        ("www.youtube.com", "restrictmoderate.youtube.com"),
        ("m.youtube.com", "restrictmoderate.youtube.com"), ("youtubei.googleapis.com", "restrictmoderate.youtube.com"),
        ("www.youtube-nocookie.com", "restrictmoderate.youtube.com"), ("bing.com", "strict.bing.com"),
        ("www.bing.com", "strict.bing.com"), ("duckduckgo.com", "safe.duckduckgo.com"),
        ("www.duckduckgo.com", "safe.duckduckgo.com"), ("start.duckduckgo.com", "safe.duckduckgo.com"),
        ("youtube.com", "restrictmoderate.youtube.com"), ("youtube-nocookie.com", "restrictmoderate.youtube.com"),
        ("images.google.com", "forcesafesearch.google.com"), ("encrypted.google.com", "forcesafesearch.google.com"),
    ])
    func searchAndVideoAreAnsweredWithTheirSafeHosts(_ asked: String, _ safe: String) {
        #expect(SafeSearch.target(for: Self.name(asked), level: .moderate) == Self.name(safe))
    }

    @Test func theSafeHostsAreKnownAsSuch() {
        for host in [
            "forcesafesearch.google.com", "RESTRICT.youtube.com", "restrictmoderate.youtube.com", "strict.bing.com",
        ] {
            #expect(SafeSearch.isSafeHost(Self.name(host)), "\(host)")
        }
        #expect(!SafeSearch.isSafeHost(Self.name("www.google.com")))
    }

    @Test func searchFamiliesAreTheSharedServersNames() {
        for name in [
            "mail.google.com", "google.de", "i.ytimg.youtube.com", "rr1.googlevideo.com", "www.googleapis.com",
        ] {
            #expect(SafeSearch.isSearchFamily(Self.name(name)), "\(name)")
        }
        for name in ["example.com", "notgoogle.com", "google.evil.com", "youtube.com.evil.net"] {
            #expect(!SafeSearch.isSearchFamily(Self.name(name)), "\(name)")
        }
    }

    @Test func strictIsYouTubesStrictModeAndNothingElseChanges() {
        #expect(
            SafeSearch.target(for: Self.name("www.youtube.com"), level: .strict) == Self.name("restrict.youtube.com"))
        #expect(
            SafeSearch.target(for: Self.name("www.google.com"), level: .strict)
                == Self.name("forcesafesearch.google.com"))
        #expect(SafeSearch.targets(.strict).contains(Self.name("restrict.youtube.com")))
        #expect(!SafeSearch.targets(.strict).contains(Self.name("restrictmoderate.youtube.com")))
    }

    @Test(arguments: [
        "mail.google.com", "google.blog", "www.google.evil.com", "google.evil.com", "forcesafesearch.google.com",
        "restrict.youtube.com", "music.youtube.com", "strict.bing.com", "safe.duckduckgo.com",
        "googlevideo.com", "example.com", "www.google.abc.de", "ipv4.google.de", "x.ipv4.google.com",
    ])
    func otherNamesAreLeftAlone(_ asked: String) {
        #expect(SafeSearch.target(for: Self.name(asked), level: .strict) == nil)
    }

    /// The alias: the question as asked, a CNAME to the safe host, its addresses of the type
    /// asked; read by dnspython as a resolver's answer would be.
    @Test func theAliasAnswerIsWhatDnspythonReads() throws {
        // The name in the case it was asked in (resolvers randomise it, and check it comes back).
        let asked = try DNSName(labels: ["WWW", "Google", "com"].map { Array($0.utf8) })
        #expect(SafeSearch.target(for: asked, level: .moderate) == SafeSearch.google)
        let query = DNSMessage(
            id: 0x4242, flags: 0x0100, questions: [DNSMessage.Question(name: asked, type: 1)],
            edns: DNSMessage.EDNS(udpPayloadSize: 1232))
        let v4: [UInt8] = [216, 239, 38, 120]
        let v6: [UInt8] = [0x20, 0x01, 0x48, 0x60, 0x48, 0x02, 0x00, 0x32] + [UInt8](repeating: 0, count: 7) + [0x78]
        let answer = DNSMessage.alias(
            answering: query, to: SafeSearch.google, addresses: [v4, v6], ttl: 60)
        let wire = answer.serialized().map { String(format: "%02x", $0) }.joined()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c",
            """
            import sys, dns.message
            m = dns.message.from_wire(bytes.fromhex(sys.argv[1]))
            print(m.id, dns.rcode.to_text(m.rcode()), bool(m.flags & 0x8000), bool(m.flags & 0x100), m.edns)
            print(m.question[0].to_text())
            for rrset in m.answer: print(rrset.to_text())
            """, wire,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "python3-dnspython (make deps)")
        #expect(
            text.split(separator: "\n").map(String.init) == [
                "16962 NOERROR True True 0", "WWW.Google.com. IN A",
                "WWW.Google.com. 60 IN CNAME forcesafesearch.google.com.",
                "forcesafesearch.google.com. 60 IN A 216.239.38.120",
            ], "\(text)")
        // Asked for AAAA: the IPv6 address; asked for HTTPS: the alias alone.
        var aaaa = query
        aaaa.questions[0].type = 28
        let six = DNSMessage.alias(answering: aaaa, to: SafeSearch.google, addresses: [v4, v6], ttl: 60)
        #expect(six.answers.map(\.type) == [5, 28] && six.answers[1].data == v6)
        var https = query
        https.questions[0].type = 65
        #expect(
            DNSMessage.alias(answering: https, to: SafeSearch.google, addresses: [v4], ttl: 60).answers.map(\.type) == [
                5
            ])
    }

    /// DuckDuckGo's pages without scripts have no safe host and let their reader turn safe
    /// search off: refused while safe search is on, for the child whose policy has it only.
    @Test func aSearchEnginesVersionWithNoSafeHostIsRefusedUnderSafeSearch() throws {
        for name in [
            "html.duckduckgo.com", "LITE.DuckDuckGo.com", "noai.duckduckgo.com", "duck.com", "html.duck.com",
            "cn.bing.com", "www2.bing.com",
        ] {
            #expect(SafeSearch.hasNoSafeVersion(Self.name(name)), "\(name)")
        }
        for name in [
            "duckduckgo.com", "safe.duckduckgo.com", "x.html.duckduckgo.com", "html.duckduckgo.com.evil",
            "duck.com.evil", "notduck.com", "www.bing.com",
        ] {
            #expect(!SafeSearch.hasNoSafeVersion(Self.name(name)), "\(name)")
        }
        func filter(_ level: SafeSearchLevel?) -> DomainFilter {
            DomainFilter(
                policy: EffectivePolicy(stores: [
                    ScreenTimeCoreTests.store("a"): StoreSettings(webContent: WebContentSettings(safeSearch: level))
                ]), names: [:], categoryLists: [:], adultList: DomainList([DomainName]()))
        }
        #expect(filter(.moderate).verdict(for: Self.name("html.duckduckgo.com"))?.reason == .safeSearch)
        #expect(filter(.moderate).verdict(for: Self.name("duckduckgo.com")) == nil)
        #expect(filter(nil).verdict(for: Self.name("html.duckduckgo.com")) == nil)
    }

    @Test func theStrictestStoreWins() {
        func store(_ level: SafeSearchLevel?) -> StoreSettings {
            StoreSettings(webContent: WebContentSettings(safeSearch: level))
        }
        #expect(EffectivePolicy(stores: [:]).safeSearch == nil)
        #expect(EffectivePolicy(stores: [ScreenTimeCoreTests.store("a"): store(.moderate)]).safeSearch == .moderate)
        let both = EffectivePolicy(stores: [
            ScreenTimeCoreTests.store("a"): store(.moderate), ScreenTimeCoreTests.store("b"): store(.strict),
            ScreenTimeCoreTests.store("c"): store(nil),
        ])
        #expect(both.safeSearch == .strict && !both.isEmpty)
    }
}
