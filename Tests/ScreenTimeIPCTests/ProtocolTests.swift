import Foundation
import ScreenTimeCore
import ScreenTimeIPC
import Testing

@Suite struct FramingTests {
    @Test func framesCarryABigEndianLength() throws {
        let frame = Framing.frame(Array("hello".utf8))
        #expect(frame.prefix(4) == [0, 0, 0, 5])
        #expect(try Framing.payloadLength(header: Array(frame.prefix(4))) == 5)
    }

    @Test func oversizedAndEmptyFramesAreRefused() throws {
        #expect(throws: ScreenTimeIPCError.self) { try Framing.payloadLength(header: [0x7F, 0xFF, 0xFF, 0xFF]) }
        let tooLarge = #expect(throws: ScreenTimeIPCError.self) { try Framing.payloadLength(header: [0, 0x20, 0, 0]) }
        #expect(tooLarge?.code == .requestTooLarge)
        let empty = #expect(throws: ScreenTimeIPCError.self) { try Framing.payloadLength(header: [0, 0, 0, 0]) }
        #expect(empty?.code == .malformedRequest)
        // The largest allowed size is allowed.
        #expect(try Framing.payloadLength(header: [0, 0x10, 0, 0]) == Framing.maximumMessageSize)
        #expect(throws: ScreenTimeIPCError.self) { try Framing.payloadLength(header: [0, 0]) }
    }
}

@Suite struct RequestCodingTests {
    private func code(of json: String) -> ScreenTimeIPCError.Code? {
        do {
            _ = try RequestCoding.decode(Array(json.utf8))
            return nil
        } catch {
            return error.code
        }
    }

    @Test func everyRequestRoundTrips() throws {
        let requests: [Request] = [
            .ping, .status(user: "alice"), .status(user: nil), .revoke(user: "1001"), .applications(user: nil),
            .categories(user: "bob"),
            .authorize(
                AuthorizeRequest(
                    user: "kid", member: .child, guardian: GuardianCredentials(user: "mum", password: "pw"),
                    showNamesToChild: true)),
            .token(TokenRequest(kind: .domain, identity: "example.com")),
            .shield(
                ShieldRequest(
                    target: StoreRequest(user: "kid", client: "org.example.App", store: "school"),
                    applications: ["org.gnome.Chess"], webDomains: ["youtube.com"], remove: true)),
            .clear(StoreRequest(user: "kid", store: "school")),
        ]
        for request in requests {
            #expect(try RequestCoding.decode(try RequestCoding.encode(request)) == request)
        }
    }

    @Test func badRequestsGetTheirOwnCodes() {
        #expect(code(of: "not json") == .malformedRequest)
        #expect(code(of: "[1,2]") == .malformedRequest)
        #expect(code(of: #"{"kind":"ping"}"#) == .malformedRequest)
        #expect(code(of: #"{"version":99,"kind":"ping","body":{}}"#) == .unsupportedVersion)
        #expect(code(of: #"{"version":1,"kind":"launchMissiles","body":{}}"#) == .unknownRequest)
        #expect(code(of: #"{"version":1,"kind":"authorize","body":{"member":"parent"}}"#) == .malformedRequest)
        #expect(code(of: #"{"version":1,"kind":"shield","body":{"target":{}}}"#) == .malformedRequest)
        #expect(code(of: #"{"version":1,"kind":"status","body":{"user":7}}"#) == .malformedRequest)
        #expect(code(of: #"{"version":1,"kind":"ping","body":{}}"#) == nil)
    }

    @Test func malformedMessagesSayWhere() {
        do {
            _ = try RequestCoding.decode(
                Array(#"{"version":1,"kind":"shield","body":{"target":{},"applications":[1]}}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("applications"))
        }
    }
}

@Suite struct ReplyCodingTests {
    @Test func resultsAndErrorsRoundTrip() throws {
        let ping = PingReply(agentVersion: "0.1.0", protocolVersion: 1, callerUID: 1000, role: "guardian")
        #expect(try ReplyCoding.decode(PingReply.self, from: try ReplyCoding.encode(ping)) == ping)
        let error = ScreenTimeIPCError(.notAllowed, "no")
        #expect(throws: error) { try ReplyCoding.decode(PingReply.self, from: ReplyCoding.encode(error)) }
    }

    @Test func coreErrorsKeepTheirCode() {
        let core = ScreenTimeCoreError(.tooManyTokens, "51")
        #expect(ScreenTimeIPCError(core).code.rawValue == "tooManyTokens")
    }

    @Test func garbageRepliesAreMalformed() {
        let error = #expect(throws: ScreenTimeIPCError.self) {
            try ReplyCoding.decode(PingReply.self, from: Array("<html>".utf8))
        }
        #expect(error?.code == .malformedReply)
    }

    @Test func refusalsAreTold() {
        #expect(ScreenTimeIPCError.Code.notAllowed.isRefusal)
        #expect(ScreenTimeIPCError.Code.authenticationFailed.isRefusal)
        #expect(!ScreenTimeIPCError.Code("tooManyTokens").isRefusal)
    }
}
