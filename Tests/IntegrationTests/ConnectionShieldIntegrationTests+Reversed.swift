import Foundation
import LinuxSupport
import Testing

// Conntrack's direction is not who opened a connection: what the rules let go as a local
// server's reply must come from a connection opened from outside.
extension ConnectionShieldIntegrationTests {
    /// Her connection to a server that speaks first loses its entry in the kernel's table (60 s
    /// of CLOSE_WAIT after a half-close, in the attack on the installed agent, 2026-12-01; taken
    /// out here, as time does), and the server's next packet makes a new one, the server's side
    /// as its original direction (`nf_conntrack_tcp_loose`). She resets the connection and opens
    /// another on the same ports (`reversed.py`): its request was that entry's reply direction,
    /// and went out as a local server's reply, unjudged (a whole TLS session with `blocked.test`,
    /// 5 of 6 tries). Now only a connection a SYN from outside opened is one whose replies leave
    /// so; hers is judged, and refused.
    @Test func aConnectionConntrackTurnedAroundIsJudgedAsHers() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let routed = try RoutedServers(world)
        defer { routed.tearDown() }
        let log = world.directory + "/drip.log"
        let ready = world.directory + "/drip.ready"
        try system(
            "/bin/sh", "-c",
            "setsid /usr/sbin/ip netns exec \(routed.server) /usr/bin/python3 \(AgentWorld.fixture("drip-server.py")) "
                + "\(log) \(ready) > /dev/null 2>&1 < /dev/null &")
        #expect(eventually(10) { Files.exists(ready) }, "the server did not start")
        func received() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        for (address, ipv6) in [(RoutedServers.address4, false), (RoutedServers.address6, true)] {
            final class Printed: @unchecked Sendable { var text = "" }
            let printed = Printed()
            let done = DispatchSemaphore(value: 0)
            let command = world.inNetworkCommand(
                as: world.child, "/usr/bin/python3",
                [AgentWorld.fixture("reversed.py"), address, "8081", "blocked.test", "3"])
            Thread {
                printed.text =
                    (try? run(
                        command[0], Array(command.dropFirst()),
                        environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]))?
                    .stdout.trimmingCharacters(in: .whitespacesAndNewlines) ?? "could not run"
                done.signal()
            }.start()
            Thread.sleep(forTimeInterval: 1.5)
            // Her connection's entry goes; the server's next dot makes it again, turned around.
            let family = ["-f", ipv6 ? "ipv6" : "ipv4"]
            _ = try world.inNetwork(
                as: nil, "/usr/sbin/conntrack", ["-D", "-p", "tcp", "--orig-port-dst", "8081"] + family)
            // (The server drips a byte every few tenths of a second; on a loaded machine later.)
            var turned = ""
            for _ in 0..<50 where !turned.contains("sport=8081") {
                Thread.sleep(forTimeInterval: 0.1)
                turned =
                    try world.inNetwork(
                        as: nil, "/usr/sbin/conntrack", ["-L", "-p", "tcp", "--orig-port-src", "8081"] + family
                    ).stdout
            }
            #expect(turned.contains("sport=8081"), "via \(address): no entry turned around: \(turned)")
            #expect(done.wait(timeout: .now() + 30) == .success)
            print("her try via \(address): \(printed.text)")
            #expect(!received().contains("Host: blocked.test"), "via \(address): the server got \(received())")
            // Her connection ends (reset, or closed) rather than go on.
            #expect(printed.text == "reset" || printed.text == "closed", "via \(address): \(printed.text)")
        }
        #expect(world.agentIsRunning)
    }
}
