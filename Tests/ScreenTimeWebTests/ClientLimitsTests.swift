import Dispatch
import Foundation
import Glibc
import LinuxSupport
import ScreenTimeTestKit
import ScreenTimeWeb
import Testing

/// One device's share of the dashboard, with real TCP connections: no more than its cap open at
/// once, and a request that does not come (or comes a byte at a time) is cut off; the next
/// device is served meanwhile.
@Suite(.threadsOfTheirOwn) struct ClientLimitsTests {
    struct ConnectFailed: Error { let errno: Int32 }

    /// Whether `condition` holds within `seconds`. Waits by sleeping the task, never a thread of
    /// Swift's cooperative pool, which the other suites' in-process dashboards answer on (a
    /// blocked pool thread made their curls time out in fresh-clone run 37).
    func eventually(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    let agent = try! InProcessAgent()

    /// A TCP connection to the server from `address` (a loopback address of this machine).
    func connect(_ port: Int, from address: String = "127.0.0.1") throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, address, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, connected == 0 else { throw ConnectFailed(errno: errno) }
        return fd
    }

    /// Whether the server closed the connection within `seconds` (a read gives end of file or a
    /// reset), without sending an answer first. Waited for on a thread of its own.
    func closedByServer(_ fd: Int32, within seconds: Double) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&poll, 1, Int32(seconds * 1000)) == 1 else {
                    return continuation.resume(returning: false)
                }
                var byte: UInt8 = 0
                continuation.resume(returning: read(fd, &byte, 1) <= 0)
            }
        }
    }

    @Test func aDeviceHoldsNoMoreThanItsShareAndTheNextDeviceIsServed() async throws {
        let limits = ClientLimits(perClient: 3, headDeadline: .seconds(30), bodyDeadline: .seconds(30))
        let server = try await DashboardServer(agent: agent, limits: limits)
        let held = try (0..<3).map { _ in try connect(server.port) }
        // (The waits are long only for a loaded machine: each ends as soon as what it waits for is so.)
        // This PC's programs are known by their account: root's, here, from any address.
        #expect(await eventually(20) { limits.count("this PC, uid 0") == 3 })
        // A fourth, from another of this PC's addresses: the same device.
        let fourth = try connect(server.port, from: "127.0.0.3")
        #expect(await closedByServer(fourth, within: 20), "the fourth connection of one device stayed open")
        close(fourth)
        // Another account's program is another device, served meanwhile.
        let other = try await server.request("GET", "/signin", as: 65_534)
        #expect(other.status == 200, "\(other.body)")
        // One of the three closed: the device may open another.
        close(held[0])
        #expect(await eventually(20) { limits.count("this PC, uid 0") == 2 })
        let again = try await server.request("GET", "/signin")
        #expect(again.status == 200)
        for fd in held.dropFirst() { close(fd) }
        #expect(await eventually(20) { limits.count("this PC, uid 0") == 0 })
        await server.stop()
    }

    @Test func aRequestTrickledOrNeverSentIsCutOff() async throws {
        let limits = ClientLimits(perClient: 8, headDeadline: .milliseconds(700), bodyDeadline: .milliseconds(700))
        let server = try await DashboardServer(agent: agent, limits: limits)
        // Nothing sent at all.
        let silent = try connect(server.port)
        // A head a few bytes at a time, each well inside the idle timeout.
        let trickle = try connect(server.port)
        // A head at once, then a body that never ends.
        let body = try connect(server.port)
        let head = "POST /signin HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        _ = head.withCString { write(body, $0, strlen($0)) }
        _ = "Content-Length: 100\r\n\r\nuser=".withCString { write(body, $0, strlen($0)) }
        for piece in ["GET /sig", "nin HTT", "P/1.1\r\n", "Host: "] {
            _ = piece.withCString { write(trickle, $0, strlen($0)) }
            try await Task.sleep(for: .milliseconds(250))
        }
        for (fd, what) in [(silent, "silent"), (trickle, "trickled"), (body, "body")] {
            let closed = await closedByServer(fd, within: 3)
            #expect(closed, "the \(what) connection stayed open")
            close(fd)
        }
        #expect(await eventually(5) { limits.count("this PC, uid 0") == 0 })
        // A request made in time is answered.
        #expect(try await server.request("GET", "/signin").status == 200)
        await server.stop()
    }

    @Test func aDeviceOpeningConnectionsInALoopIsRefusedAtTheDoorAndOthersAreServed() async throws {
        let limits = ClientLimits(
            perClient: 100, headDeadline: .seconds(30), bodyDeadline: .seconds(30), burst: 5, newPerSecond: 0.02)
        let server = try await DashboardServer(agent: agent, limits: limits)
        // Five at once are let in (each then closed by the device itself), the sixth is not.
        for _ in 0..<5 {
            let fd = try connect(server.port)
            let closed = await closedByServer(fd, within: 0.05)
            #expect(!closed, "a connection within the burst was closed")
            close(fd)
        }
        let sixth = try connect(server.port)
        #expect(await closedByServer(sixth, within: 2), "the sixth new connection at once was let in")
        close(sixth)
        // Another account's program is served meanwhile.
        #expect(try await server.request("GET", "/signin", as: 65_534).status == 200)
        await server.stop()
    }
}
