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

@Suite struct RequestEnvelopeTests {
    /// The code a message gets when read as `R`.
    private func code<R: ControlRequest>(of json: String, as type: R.Type) -> ScreenTimeIPCError.Code? {
        do {
            _ = try RequestEnvelope.decode(R.self, from: Array(json.utf8))
            return nil
        } catch {
            return error.code
        }
    }

    private func roundTrip<R: ControlRequest & Equatable>(_ request: R) throws {
        let bytes = try RequestEnvelope.encode(request)
        #expect(try RequestEnvelope.kind(of: bytes) == R.kind)
        #expect(try RequestEnvelope.decode(R.self, from: bytes) == request)
    }

    @Test func everyRequestRoundTrips() throws {
        try roundTrip(PingRequest())
        try roundTrip(StatusRequest(user: "alice"))
        try roundTrip(StatusRequest())
        try roundTrip(RevokeRequest(user: "1001"))
        try roundTrip(ApplicationsRequest())
        try roundTrip(CategoriesRequest(user: "bob"))
        try roundTrip(
            AuthorizeRequest(
                user: "kid", member: .child, guardian: GuardianCredentials(user: "mum", password: "pw"),
                showNamesToChild: true))
        try roundTrip(TokenRequest(kind: .domain, identity: "example.com"))
        try roundTrip(
            TokenRequest(kind: .app, identity: "/usr/games/x", file: FileArgument(path: "/usr/games/x", descriptor: 0)))
        try roundTrip(
            ShieldRequest(
                target: StoreTarget(user: "kid", client: "org.example.App", store: "school"),
                applications: ["org.gnome.Chess"], webDomains: ["youtube.com"],
                applicationFiles: [FileArgument(path: "/opt/game", descriptor: 1)], remove: true))
        try roundTrip(ClearRequest(StoreTarget(user: "kid", store: "school")))
        try roundTrip(FilterRequest(target: StoreTarget(user: "kid"), policy: .specific([try DomainName("a.test")])))
    }

    /// The wire form is the one earlier agents and clients speak.
    @Test func theWireFormIsUnchanged() throws {
        func text<R: ControlRequest>(_ request: R) throws -> String {
            String(decoding: try RequestEnvelope.encode(request), as: UTF8.self)
        }
        #expect(try text(StatusRequest(user: "alice")) == #"{"body":{"user":"alice"},"kind":"status","version":1}"#)
        #expect(try text(PingRequest()) == #"{"body":{},"kind":"ping","version":1}"#)
        #expect(
            try text(ClearRequest(StoreTarget(user: "kid", store: "school")))
                == #"{"body":{"store":"school","user":"kid"},"kind":"clear","version":1}"#)
        // What an earlier client sent decodes.
        let old =
            #"{"version":1,"kind":"shield","body":{"target":{"user":"kid"},"applications":["a"],"#
            + #""applicationCategories":[],"webDomains":[],"webCategories":[],"remove":false}}"#
        let shield = try RequestEnvelope.decode(ShieldRequest.self, from: Array(old.utf8))
        #expect(shield.applications == ["a"] && shield.target.user == "kid" && shield.applicationFiles == nil)
    }

    @Test func badRequestsGetTheirOwnCodes() {
        #expect(code(of: "not json", as: PingRequest.self) == .malformedRequest)
        #expect(code(of: "[1,2]", as: PingRequest.self) == .malformedRequest)
        #expect(code(of: #"{"kind":"ping"}"#, as: PingRequest.self) == .malformedRequest)
        #expect(code(of: #"{"version":99,"kind":"ping","body":{}}"#, as: PingRequest.self) == .unsupportedVersion)
        #expect(
            code(of: #"{"version":1,"kind":"authorize","body":{"member":"parent"}}"#, as: AuthorizeRequest.self)
                == .malformedRequest)
        #expect(
            code(of: #"{"version":1,"kind":"shield","body":{"target":{}}}"#, as: ShieldRequest.self)
                == .malformedRequest)
        #expect(
            code(of: #"{"version":1,"kind":"status","body":{"user":7}}"#, as: StatusRequest.self) == .malformedRequest)
        #expect(code(of: #"{"version":1,"kind":"ping","body":{}}"#, as: PingRequest.self) == nil)
        // A message of one kind read as another.
        #expect(code(of: #"{"version":1,"kind":"ping","body":{}}"#, as: StatusRequest.self) == .malformedRequest)
    }

    @Test func malformedMessagesSayWhere() {
        do {
            _ = try RequestEnvelope.decode(
                ShieldRequest.self,
                from: Array(#"{"version":1,"kind":"shield","body":{"target":{},"applications":[1]}}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("applications"))
        }
    }
}

@Suite struct ReplyCodingTests {
    @Test func resultsAndErrorsRoundTrip() throws {
        let ping = PingReply(agentVersion: "0.1.0", protocolVersion: 1, callerUID: 1000, role: .guardian)
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

@Suite struct LoginKindTests {
    /// What PAM tells (service and tty) makes the kind; only text sessions on a terminal count as
    /// screen time, a job without one (cron) never does.
    @Test(arguments: [
        ("lightdm", ":0", "graphical"), ("gdm-password", "", "graphical"), ("login", ":1", "graphical"),
        ("sshd", "ssh", "ssh"), ("sshd", "", "ssh"), ("su", "/dev/pts/3", "su"), ("su-l", "pts/0", "su"),
        ("login", "tty2", "tty"), ("login", "/dev/tty2", "tty"), ("cron", "", "other"), ("su", "", "other"),
    ])
    func theKindComesFromTheServiceAndTheTerminal(service: String, tty: String, kind: String) {
        #expect(LoginRequest(phase: .open, user: "alice", service: service, tty: tty).loginKind == kind)
    }
}
