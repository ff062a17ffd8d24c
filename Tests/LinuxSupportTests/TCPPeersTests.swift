import Foundation
import LinuxSupport
import ScreenTimeTestThreads
import Testing

@Suite(.threadsOfTheirOwn) struct TCPPeersTests {
    /// Python programs of the test's (each closes what it inherited first: a descriptor of this
    /// process's would make it a holder of the test's sockets). They end by themselves within 5 s:
    /// the server's end, once killed, was waited for until its sleep ended.
    private func python(_ code: String, _ arguments: [String] = []) throws -> TestProgram {
        try TestProgram("/usr/bin/python3", ["-c", "import os; os.closerange(3, 65536); " + code] + arguments)
    }

    @Test func theClientsOfATCPServerAreWhatTheKernelsTableConnects() throws {
        let fixture = try Fixture()
        let portFile = fixture.root + "/port"
        let server = try python(
            """
            import socket, sys, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
            open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            c, _ = s.accept(); time.sleep(5)
            """, [portFile])
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        var port = ""
        for _ in 0..<250 where port.isEmpty {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            if port.isEmpty { Thread.sleep(forTimeInterval: 0.02) }
        }
        let client = try python(
            "import socket, sys, time; s = socket.create_connection(('127.0.0.1', int(sys.argv[1]))); time.sleep(5)",
            [port])
        // Connected elsewhere (a server of its own, on loopback too): not the server's client.
        let other = try python(
            """
            import socket, time
            l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
            s = socket.create_connection(l.getsockname()); a, _ = l.accept(); time.sleep(5)
            """)
        defer {
            for process in [client, other] {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        var found: [Int32] = []
        for _ in 0..<150 {
            found = TCPPeers.clients(
                of: server.processIdentifier, among: [client.processIdentifier, other.processIdentifier])
            if !found.isEmpty { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(found == [client.processIdentifier])
        #expect(TCPPeers.clients(of: other.processIdentifier, among: [client.processIdentifier]).isEmpty)
    }

    @Test func aTableOutOfShapeNamesNoClient() throws {
        let fixture = try Fixture()
        try fixture.write("7/net/tcp", "garbage\n0: 0100007F:1770 0100007F:A3B2 01\n\u{0}\u{0}\n")
        try fixture.write("7/net/tcp6", "")
        #expect(TCPPeers.clients(of: 7, among: [8], root: fixture.root).isEmpty)
    }
}
