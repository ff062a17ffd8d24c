import Foundation
import ScreenTimeCore
import Testing

/// Any JSON document (a browser's policies, sway's replies, the launcher's messages), read and
/// written through FoundationEssentials' coders.
@Suite struct JSONValueTests {
    @Test func aDocumentIsReadWithItsKindsApart() throws {
        let text =
            #"{"b": true, "i": 1, "n": -2.5, "big": 1e300, "s": "x\u00e9", "z": null, "a": [1, false, "1"], "o": {}}"#
        let value = try JSONValue(parsing: Array(text.utf8))
        #expect(
            value
                == .object([
                    "b": .bool(true), "i": .integer(1), "n": .number(-2.5), "big": .number(1e300), "s": .string("xé"),
                    "z": .null, "a": .array([.integer(1), .bool(false), .string("1")]), "o": .object([:]),
                ]))
        // 1 is a number, true a boolean: each stays what it was.
        let swift = try #require(value.any as? [String: Any])
        #expect(swift["b"] as? Bool == true && swift["i"] as? Int == 1 && swift["n"] as? Double == -2.5)
        #expect(swift["i"] as? Bool == nil && swift["b"] as? Int == nil)
        #expect(swift["z"] as? JSONValue == .null)
        #expect(JSONValue(value.any) == value)
    }

    @Test func aDocumentIsWrittenWithItsKeysSorted() throws {
        let value = JSONValue(["z": 1, "a": ["b": false, "a": "/"], "m": [1, 2]] as [String: Any])
        #expect(value != nil)
        let text = String(decoding: value?.serialized() ?? [], as: UTF8.self)
        #expect(text == #"{"a":{"a":"\/","b":false},"m":[1,2],"z":1}"#)
        let pretty = String(decoding: value?.serialized(pretty: true) ?? [], as: UTF8.self)
        #expect(try JSONValue(parsing: Array(pretty.utf8)) == value)
        #expect(pretty.contains("\n"))
        // What is not JSON is refused, both ways.
        for bad in ["", "{", "{\"a\":}", "[1 2]", "nul"] {
            #expect(throws: (any Error).self, "\(bad)") { try JSONValue(parsing: Array(bad.utf8)) }
        }
        #expect(JSONValue(["date": Date()] as [String: Any]) == nil)
        #expect(JSONValue.number(.nan).serialized() == Array("null".utf8))
    }

    /// What a child's program writes (sway's replies) may be nested without end: refused before
    /// any decoding, as deep as the limit read.
    @Test func aDocumentTooDeepIsRefused() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONValue.TooDeep.self) { try JSONValue(parsing: Array(deep.utf8)) }
        let atLimit = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        #expect(try JSONValue(parsing: Array(atLimit.utf8)) != .null)
        // Brackets within strings are text.
        let text = "[\"" + String(repeating: "[", count: 1000) + "\\\"{\"]"
        #expect(
            try JSONValue(parsing: Array(text.utf8)) == .array([.string(String(repeating: "[", count: 1000) + "\"{")]))
    }

    /// Values are counted before decoding: arrays, objects and commas outside strings.
    @Test func aDocumentOfTooManyValuesIsRefused() throws {
        #expect(throws: JSONValue.TooMany.self) { try JSONValue.check(Array("[1,2,3]".utf8), maximumValues: 3) }
        try JSONValue.check(Array("[1,2,3]".utf8), maximumValues: 4)
        try JSONValue.check(Array(#"["a,b,c,d,e"]"#.utf8), maximumValues: 2)
    }
}
