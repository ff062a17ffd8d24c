import Glibc

/// The addresses the dashboard listens on when a guardian names none: this PC's addresses on the
/// home network (IPv4 private ranges, IPv6 unique local), and loopback (both: a browser at the PC
/// may take `localhost` to ::1, where a child's program could otherwise listen on the same port) —
/// never a public one.
public enum HomeAddresses {
    public static func find() -> [String] {
        var found: [String] = ["127.0.0.1"]
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return found }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, current.pointee.ifa_flags & UInt32(IFF_UP) != 0 else {
                continue
            }
            if address.pointee.sa_family == sa_family_t(AF_INET) {
                let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                }
                if isHome(bytes), let text = DashboardIdentity.address(bytes) { found.append(text) }
            } else if address.pointee.sa_family == sa_family_t(AF_INET6) {
                let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                }
                if isHome(bytes) || bytes == [UInt8](repeating: 0, count: 15) + [1],
                    let text = DashboardIdentity.address(bytes)
                {
                    found.append(text)
                }
            }
        }
        var seen: Set<String> = []
        return found.filter { seen.insert($0).inserted }
    }

    /// Whether an address (4 or 16 bytes) is one of a home network: 10/8, 172.16/12, 192.168/16,
    /// fc00::/7.
    public static func isHome(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 {
            return bytes[0] == 10 || (bytes[0] == 172 && (16...31).contains(bytes[1]))
                || (bytes[0] == 192 && bytes[1] == 168)
        }
        return bytes.count == 16 && bytes[0] & 0xFE == 0xFC
    }
}
