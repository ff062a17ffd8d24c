import Foundation
import Testing

@testable import LinuxSupport

/// Sway's replies are written by a program of the child's (her compositor, or one posing as it on
/// the socket `SWAYSOCK` names): each value taken only where it has the kind it must have, and
/// what is decoded bounded in depth, values and bytes, whatever she sends.
@Suite struct SwayRepliesTests {
    typealias Node = SwayFocusWatch.Node

    func node(_ text: String) -> Node? { SwayFocusWatch.decode(Node.self, Array(text.utf8)) }

    @Test func aWindowIsTakenOnlyWithValuesOfTheirKind() throws {
        let window = SwayFocusWatch.window(try #require(node(#"{"id": 7, "pid": 4242, "app_id": "foot"}"#)))
        #expect(window == SwayFocusWatch.Window(id: 7, pid: 4242, applicationID: "foot"))
        // An id that is no integer: no window. A pid that is none, or out of range: no pid.
        for id in ["true", "1.5", "1e300", "\"7\"", "null", "[7]"] {
            #expect(SwayFocusWatch.window(try #require(node(#"{"id": \#(id)}"#))) == nil, "\(id)")
        }
        for pid in ["true", "0", "-1", "4294967297", "\"4242\"", "{}"] {
            let found = SwayFocusWatch.window(try #require(node(#"{"id": 7, "pid": \#(pid), "app_id": 5}"#)))
            #expect(found == SwayFocusWatch.Window(id: 7, pid: nil, applicationID: nil), "\(pid)")
        }
        let event = try #require(
            SwayFocusWatch.decode(
                SwayFocusWatch.Event.self, Array(#"{"change": "focus", "container": {"id": 3}}"#.utf8)))
        #expect(event.change == "focus" && event.container?.id == 3)
    }

    @Test func theFocusedLeafIsFoundAndAHostileTreeGivesNone() throws {
        let tree =
            #"{"nodes": [{"nodes": [], "focused": false, "pid": 1, "id": 1},"#
            + #" {"nodes": [{"focused": true, "pid": 99, "id": 3, "app_id": "game"}], "id": 2}]}"#
        #expect(SwayFocusWatch.focused(in: try #require(node(tree)))?.pid == 99)
        // Children that are not all objects are none; `focused` that is not a boolean is not.
        let mixed = try #require(node(#"{"nodes": [1, {"focused": true, "pid": 9, "id": 1}]}"#))
        #expect(SwayFocusWatch.focused(in: mixed) == nil)
        #expect(SwayFocusWatch.focused(in: try #require(node(#"{"focused": 1, "pid": 9, "id": 1}"#))) == nil)
        // Nested past what is looked at (64 levels), or past what is read (256): none, at once.
        let deep = (0..<100).reduce(#"{"focused": true, "pid": 9, "id": 1}"#) { inner, _ in
            #"{"nodes": [\#(inner)]}"#
        }
        #expect(SwayFocusWatch.focused(in: try #require(node(deep))) == nil)
        let deeper = String(repeating: #"{"nodes": ["#, count: 50_000) + String(repeating: "]}", count: 50_000)
        #expect(node(deeper) == nil)
        for bad in ["", "[]", "{", "\u{FF}", "nul", #"{"id": 7"#] { #expect(node(bad) == nil, "\(bad)") }
    }

    /// The fourth attack: a tree of 2.8 million empty nodes in one legal 8 MB reply cost the agent
    /// 12 s of CPU and 320 MB per session. More than 200,000 values are refused before decoding
    /// (and a message over 2 MB before it is read whole).
    @Test func aWideTreeIsRefusedBeforeItIsDecoded() throws {
        let wide = #"{"nodes": ["# + Array(repeating: "{}", count: 250_000).joined(separator: ",") + "]}"
        let started = ContinuousClock.now
        #expect(node(wide) == nil)
        print("a wide tree of 250,000 nodes refused in \(ContinuousClock.now - started)")
        let real =
            #"{"nodes": ["# + Array(repeating: #"{"id": 1, "pid": 2}"#, count: 20_000).joined(separator: ",") + "]}"
        #expect(node(real)?.nodes.count == 20_000)
    }
}
