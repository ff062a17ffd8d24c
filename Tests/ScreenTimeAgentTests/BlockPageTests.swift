import Foundation
import Testing

@testable import ScreenTimeAgent

/// The page a refused plain-HTTP request gets: one whole response a browser reads to its end.
@Suite struct BlockPageTests {
    @Test func theResponseSaysItsLengthAndEscapesWhatItShows() throws {
        let response = String(
            decoding: BlockPage.response(site: "<b>bad.example", why: "Tom & \"Jerry\"'s rule."), as: UTF8.self)
        let parts = response.components(separatedBy: "\r\n\r\n")
        let head = try #require(parts.first)
        let body = parts.dropFirst().joined(separator: "\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(head.contains("\r\nConnection: close") && head.contains("\r\nX-Screentime: shielded"))
        #expect(head.contains("\r\nContent-Length: \(body.utf8.count)"), "\(head)")
        #expect(body.contains("<h1>&lt;b&gt;bad.example is shielded</h1>"))
        #expect(body.contains("Tom &amp; &quot;Jerry&quot;&#39;s rule."))
        #expect(!body.contains("<b>"))
        // Small enough for one segment on any path.
        #expect(response.utf8.count < 1400, "\(response.utf8.count) bytes")
    }
}
