import Foundation
import Testing

@testable import LinuxSupport

/// Sway's replies are written by a program of the child's (her compositor, or one posing as it on
/// the socket `SWAYSOCK` names): read as any JSON, each value taken only where it has the kind it
/// must have, and nothing of it holds the reader up.
@Suite struct SwayRepliesTests {
    func object(_ text: String) -> [String: Any]? { SwayFocusWatch.object(Array(text.utf8)) }

    @Test func aWindowIsTakenOnlyWithValuesOfTheirKind() throws {
        let window = SwayFocusWatch.window(try #require(object(#"{"id": 7, "pid": 4242, "app_id": "foot"}"#)))
        #expect(window == SwayFocusWatch.Window(id: 7, pid: 4242, applicationID: "foot"))
        // An id that is no integer: no window. A pid that is none, or out of range: no pid.
        for id in ["true", "1.5", "1e300", "\"7\"", "null", "[7]"] {
            #expect(SwayFocusWatch.window(try #require(object(#"{"id": \#(id)}"#))) == nil, "\(id)")
        }
        for pid in ["true", "0", "-1", "4294967297", "\"4242\"", "{}"] {
            let found = SwayFocusWatch.window(try #require(object(#"{"id": 7, "pid": \#(pid), "app_id": 5}"#)))
            #expect(found == SwayFocusWatch.Window(id: 7, pid: nil, applicationID: nil), "\(pid)")
        }
    }

    @Test func theFocusedLeafIsFoundAndAHostileTreeGivesNone() throws {
        let tree =
            #"{"nodes": [{"nodes": [], "focused": false, "pid": 1, "id": 1},"#
            + #" {"nodes": [{"focused": true, "pid": 99, "id": 3, "app_id": "game"}], "id": 2}]}"#
        #expect(SwayFocusWatch.focused(in: try #require(object(tree)))?.pid == 99)
        // Children that are not all objects are none; `focused` that is not a boolean is not.
        #expect(
            SwayFocusWatch.focused(in: try #require(object(#"{"nodes": [1, {"focused": true, "pid": 9, "id": 1}]}"#)))
                == nil)
        #expect(SwayFocusWatch.focused(in: try #require(object(#"{"focused": 1, "pid": 9, "id": 1}"#))) == nil)
        // Nested past what is looked at (64 levels), or past what is read (256): none, at once.
        let deep = (0..<100).reduce(#"{"focused": true, "pid": 9, "id": 1}"#) { inner, _ in #"{"nodes": [\#(inner)]}"# }
        #expect(SwayFocusWatch.focused(in: try #require(object(deep))) == nil)
        let deeper = String(repeating: #"{"nodes": ["#, count: 50_000) + String(repeating: "]}", count: 50_000)
        #expect(object(deeper) == nil)
        for bad in ["", "[]", "{", "\u{FF}", "nul", #"{"id": 7"#] { #expect(object(bad) == nil, "\(bad)") }
    }
}
