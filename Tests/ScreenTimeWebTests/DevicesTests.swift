import Foundation
import Glibc
import NIOCore
import ScreenTimeTestKit
import Testing

@testable import ScreenTimeWeb

/// Which account's program is at the other end of a connection on this PC: asked of the kernel
/// for exactly that connection (sock_diag), and read from the socket tables as it would be without
/// netlink; a connection no socket here is the other end of is from the network.
@Suite(.threadsOfTheirOwn) struct DevicesTests {
    /// A listener on 127.0.0.1 and a connection to it, made by `uid` (by a curl run as that
    /// account, kept connected while `body` runs with the client's and the server's ends).
    func connection(as uid: UInt32, _ body: (SocketAddress, SocketAddress) throws -> Void) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(listener, $0, length) == 0, listen(listener, 4) == 0,
                    getsockname(listener, $0, &length) == 0
                else { throw POSIXError(.EADDRINUSE) }
            }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        // A client of another account: curl, which waits for an answer that never comes.
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        client.arguments = [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", "/usr/bin/curl", "-s", "--max-time", "5",
            "http://127.0.0.1:\(port)/",
        ]
        try client.run()
        defer {
            client.terminate()
            client.waitUntilExit()
        }
        let accepted = accept(listener, nil, nil)
        #expect(accepted >= 0)
        defer { close(accepted) }
        var peer = sockaddr_in()
        var peerLength = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(accepted, $0, &peerLength) }
        }
        let remote = try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: peer.sin_port)))
        let local = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        try body(remote, local)
    }

    @Test(.enabled(if: getuid() == 0, "runs a client as another account"))
    func theKernelNamesTheAccountAtTheOtherEnd() throws {
        try connection(as: 65_534) { remote, local in
            let asked = Devices.ask(
                client: [127, 0, 0, 1], clientPort: remote.port!, server: [127, 0, 0, 1], serverPort: local.port!)
            #expect(asked == .owner(65_534))
            // The socket tables say the same, without netlink.
            #expect(
                Devices.fromTables(
                    client: [127, 0, 0, 1], clientPort: remote.port!, server: [127, 0, 0, 1], serverPort: local.port!)
                    == 65_534)
            #expect(Devices.identify(remote: remote, local: local) == "this PC, uid 65534")
            // A connection no socket here is the client of: from the network.
            let elsewhere = try SocketAddress(ipAddress: "192.0.2.7", port: remote.port!)
            #expect(
                Devices.ask(
                    client: [192, 0, 2, 7], clientPort: remote.port!, server: [127, 0, 0, 1], serverPort: local.port!)
                    == .none)
            #expect(Devices.identify(remote: elsewhere, local: local) == "192.0.2.7")
        }
    }
}
