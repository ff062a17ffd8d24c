import Foundation
import LinuxSupport
import Testing

extension ConnectionShieldIntegrationTests {
    /// The agent reads a watched flow's acknowledgement from a copy in the log, after the packet
    /// went on, and marks the flow by its addresses and ports (ctnetlink has no other name for
    /// it). By then she may have reset that connection and opened a new one on the same ports,
    /// whose hello names a shielded site: the late write must not pass it. So the write sets only
    /// the acknowledged bits, which pass a flow only beside WATCHED (the agent's verdict on that
    /// very connection's packet). Here the late write is made by hand on a fresh connection of
    /// hers, before its hello: the hello is still judged and refused. The control shows what a
    /// write of PASSED itself, as a first version did, would have let through.
    @Test func aLateAcknowledgementOnANewConnectionOnTheSamePortsPassesNothing() throws {
        let world = try shieldedWorld()
        defer { world.tearDown() }
        let rules = try world.firewallRules()
        // The rules' own values: the acknowledged bits that promote a watched flow, and PASSED.
        let promote = try #require(
            rules.first { $0.hasPrefix("-A \(world.chain) -p tcp -m connmark") && $0.contains("--set-xmark") },
            "\(rules)")
        let promoted = try #require(
            promote.split(separator: " ").drop { $0 != "--mark" }.dropFirst().first
                .flatMap { UInt32($0.prefix { $0 != "/" }.dropFirst(2), radix: 16) })
        let acknowledged = promoted & Firewall.acknowledgedMask
        #expect(acknowledged != 0, "\(promote)")
        let passedRule = try #require(
            rules.first { $0.hasPrefix("-A \(world.chain) -p tcp -m connmark --mark") && $0.hasSuffix("-j RETURN") })
        let passed = try #require(
            passedRule.split(separator: " ").drop { $0 != "--mark" }.dropFirst().first
                .flatMap { UInt32($0.prefix { $0 != "/" }.dropFirst(2), radix: 16) })

        /// A connection of hers to the shielded site's server, its hello held until `write` has
        /// set its connection's mark: what she is then answered.
        func connection(_ write: (ConnectionMarks, [UInt8], UInt16) throws -> Void) throws -> String {
            // (Her files in a directory of hers: she writes where her end is.)
            let ready = try world.childDirectory() + "/late-ready-\(UUID().uuidString.prefix(6))"
            let go = ready + "-go"
            let output = world.directory + "/late-\(UUID().uuidString.prefix(6)).out"
            let late = try backgroundChild(
                world, ["late", "blocked.test", "10.1.1.1", "443", ready, go], output: output)
            defer { if late.isRunning { kill(late.processIdentifier, SIGKILL) } }
            var own: [Substring] = []
            for _ in 0..<500 where own.count != 2 {
                Thread.sleep(forTimeInterval: 0.02)
                own = ((try? String(contentsOfFile: ready, encoding: .utf8)) ?? "").split(separator: " ")
            }
            let address = try #require(own.first.flatMap { IPAddress.bytes(String($0)) }, "\(own)")
            let port = try #require(own.last.flatMap { UInt16($0) }, "\(own)")
            try inNetworkNamespace("/run/netns/" + (try #require(world.namespace))) {
                try write(ConnectionMarks(), address, port)
            }
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            #expect(AgentWorld.ended(late, within: 30), "her late hello's program did not end")
            return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        let late = try connection { marks, address, port in
            try marks.setMark(
                source: address, sourcePort: port, destination: [10, 1, 1, 1], destinationPort: 443,
                value: acknowledged, mask: Firewall.acknowledgedMask)
        }
        #expect(late == "reset", "a late acknowledgement passed a new connection's shielded hello: \(late)")
        // The control: PASSED itself, written the same way, lets the same hello through.
        let control = try connection { marks, address, port in
            try marks.setMark(
                source: address, sourcePort: port, destination: [10, 1, 1, 1], destinationPort: 443, value: passed,
                mask: Firewall.markMask)
        }
        #expect(control == "answered", "the control: \(control)")
    }
}
