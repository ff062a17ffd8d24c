import Foundation
import LinuxSupport

/// Web servers one router away from a world's network namespace, for what only a real path
/// shows: a packet whose TTL (hop limit) runs out at the router is dropped there, after the
/// agent saw it leave.
///
///     world (agent, child)  10.77.1.1 fd77:1::1 ── router ── 10.77.2.2 fd77:2::2  server
///
/// The server is the world's `web-server.py` (HTTPS on 443 saying the name it was asked for,
/// HTTP on 80), with the certificate `startWebServers()` made. Everything goes in `tearDown()`.
struct RoutedServers {
    static let address4 = "10.77.2.2"
    static let address6 = "fd77:2::2"

    let router: String
    let server: String
    let world: String

    init(_ world: AgentWorld) throws {
        guard let namespace = world.namespace else { throw WorldError("a routed server needs a world with a network") }
        self.world = namespace
        router = namespace + "r"
        server = namespace + "s"
        do {
            try setUp(directory: world.directory)
        } catch {
            tearDown()
            throw error
        }
    }

    private func setUp(directory: String) throws {
        let ip = "/usr/sbin/ip"
        for name in [router, server] {
            try system(ip, "netns", "add", name)
            try system(ip, "-n", name, "link", "set", "lo", "up")
        }
        // Links: world ⇄ router (…wa, …ra), router ⇄ server (…rb, …sb).
        try system(
            ip, "link", "add", world + "wa", "netns", world, "type", "veth", "peer", "name", router + "a", "netns",
            router)
        try system(
            ip, "link", "add", router + "b", "netns", router, "type", "veth", "peer", "name", server + "b", "netns",
            server)
        func address(_ namespace: String, _ link: String, _ v4: String, _ v6: String) throws {
            try system(ip, "-n", namespace, "addr", "add", v4, "dev", link)
            try system(ip, "-n", namespace, "-6", "addr", "add", v6, "dev", link, "nodad")
            try system(ip, "-n", namespace, "link", "set", link, "up")
        }
        try address(world, world + "wa", "10.77.1.1/30", "fd77:1::1/64")
        try address(router, router + "a", "10.77.1.2/30", "fd77:1::2/64")
        try address(router, router + "b", "10.77.2.1/30", "fd77:2::1/64")
        try address(server, server + "b", "10.77.2.2/30", "fd77:2::2/64")
        try system(ip, "-n", world, "route", "add", "10.77.2.0/30", "via", "10.77.1.2")
        try system(ip, "-n", world, "-6", "route", "add", "fd77:2::/64", "via", "fd77:1::2")
        try system(ip, "-n", server, "route", "add", "default", "via", "10.77.2.1")
        try system(ip, "-n", server, "-6", "route", "add", "default", "via", "fd77:2::1")
        for setting in ["net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"] {
            try system(ip, "netns", "exec", router, "/usr/sbin/sysctl", "-qw", setting)
        }
        let ready = directory + "/routed.ready"
        let command =
            "setsid \(ip) netns exec \(server) /usr/bin/python3 \(AgentWorld.fixture("web-server.py"))"
            + " \(directory)/web.crt \(directory)/web.key \(ready) > /dev/null 2>&1 < /dev/null &"
        try system("/bin/sh", "-c", command)
        for _ in 0..<500 {
            if Files.exists(ready) {
                let probe = try run(
                    ip, ["netns", "exec", world, "/bin/bash", "-c", "exec 3<>/dev/tcp/\(Self.address4)/2222"])
                if probe.status == 0 { return }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw WorldError("the routed web server did not start in namespace \(server)")
    }

    func tearDown() {
        for name in [server, router] {
            let pids = (try? run("/usr/sbin/ip", ["netns", "pids", name]))?.stdout ?? ""
            for pid in pids.split(separator: "\n").compactMap({ Int32($0) }) where pid > 1 { kill(pid, SIGKILL) }
            _ = try? run("/usr/sbin/ip", ["netns", "del", name])
        }
    }
}
