import Foundation
import LinuxSupport
import Logging
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeAgent

/// The control socket's own housekeeping, with a real socket and the agent's router in process.
@Suite struct ControlServerTests {
    /// Each connection that was the last one open would give the heap's free pages back, which
    /// takes every arena's lock for up to a millisecond: a caller's loop of connections must not
    /// make the agent do it more than once an interval.
    @Test func aLoopOfConnectionsGivesTheHeapBackOnceAnInterval() async throws {
        let agent = try InProcessAgent()
        let server = ControlServer(
            path: agent.socket, router: agent.router, admission: { _ in .guardian }, logger: Logger(label: "test"),
            // Longer than the loop can take on a loaded machine (it took 31 s once, with 10 s).
            trimInterval: .seconds(3600))
        Task.detached { try await server.run() }
        for _ in 0..<30_000 where !FileManager.default.fileExists(atPath: agent.socket) {
            try await Task.sleep(for: .milliseconds(20))
        }
        // One at a time: each is the only one open, and the last when it closes.
        for _ in 0..<20 {
            _ = try UnixSocket.connect(to: agent.socket)  // closed as soon as made
            try await Task.sleep(for: .milliseconds(20))
        }
        for _ in 0..<250 where server.trims.load(ordering: .relaxed) == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.trims.load(ordering: .relaxed) == 1)
    }
}
