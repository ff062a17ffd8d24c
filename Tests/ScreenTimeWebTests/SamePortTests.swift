import Foundation
import LinuxSupport
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeWeb

/// The third attack on the dashboard, finding 1: a connection's device was kept by its remote end
/// alone. With the dashboard on two addresses, the child's connection from `127.0.0.3:P` to the
/// second address and the guardian's from the same `127.0.0.3:P` to the first are both open at
/// once; whichever opened last gave its account to both, so the child's requests counted as the
/// guardian's device (her stolen cookie accepted) or the guardian's as the child's (signed out).
/// A connection's device is now kept by both its ends.
@Suite(.threadsOfTheirOwn, .enabled(if: getuid() == 0, "needs root: a second account's connection"))
struct SamePortTests {
    /// As root: a child (uid 65534) opens her connection first and holds it; the guardian opens
    /// hers from the same address and port to the other address and signs in; the child sends the
    /// guardian's cookie on hers, then the guardian goes on on hers. Prints both statuses.
    static let script = #"""
        import os, socket, sys
        port, source = int(sys.argv[1]), int(sys.argv[2])
        def connect(address):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.3", source))
            s.connect((address, port))
            return s
        def request(s, method, path, body=b"", cookie=None):
            head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
            if cookie: head += f"Cookie: {cookie}\r\n"
            s.sendall(head.encode() + b"\r\n" + body)
            data = b""
            while b"\r\n\r\n" not in data: data += s.recv(65536)
            top, rest = data.split(b"\r\n\r\n", 1)
            lines = top.decode().split("\r\n")
            length = next((int(l.split(":")[1]) for l in lines if l.lower().startswith("content-length:")), 0)
            while len(rest) < length: rest += s.recv(65536)
            cookies = [l.split(":", 1)[1].strip().split(";")[0] for l in lines if l.lower().startswith("set-cookie:")]
            return int(lines[0].split()[1]), cookies
        ready_r, ready_w = os.pipe(); cookie_r, cookie_w = os.pipe(); answer_r, answer_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.setgid(65534); os.setuid(65534)
            mine = connect("127.0.0.2")
            os.write(ready_w, b"1")
            stolen = os.read(cookie_r, 4096).decode()
            status, _ = request(mine, "GET", "/", cookie=stolen)
            os.write(answer_w, str(status).encode())
            os._exit(0)
        os.read(ready_r, 1)
        guardian = connect("127.0.0.1")
        status, cookies = request(guardian, "POST", "/signin", b"user=mum&password=right")
        assert status == 303 and cookies, (status, cookies)
        os.write(cookie_w, cookies[0].encode())
        childs = os.read(answer_r, 16).decode()
        status, _ = request(guardian, "GET", "/", cookie=cookies[0])
        os.waitpid(child, 0)
        print(childs, status)
        """#

    @Test func twoConnectionsFromOneAddressAndPortAreTwoDevices() async throws {
        let agent = try InProcessAgent()
        // As installed: the connection limits, whose handler keeps each connection's device.
        let limits = ClientLimits(perClient: 16, headDeadline: .seconds(15), bodyDeadline: .seconds(15))
        let server = try await DashboardServer(agent: agent, limits: limits, host: "0.0.0.0")
        defer { Task { await server.stop() } }
        let path = agent.directory.path + "/same-port.py"
        try Self.script.write(toFile: path, atomically: true, encoding: .utf8)
        let source = Int.random(in: 40_000...49_999)
        let outcome = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try ChildProcess.run(
                            "/usr/bin/python3", [path, "\(server.port)", "\(source)"],
                            environment: ["PATH=/usr/bin:/bin"], deadline: 30)
                    })
            }
        }
        // The child's connection is hers (the cookie was made on another device); the guardian's
        // is still the guardian's.
        let printed = String(decoding: outcome.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed == "401 200", "\(printed) \(String(decoding: outcome.errors, as: UTF8.self))")
    }
}
