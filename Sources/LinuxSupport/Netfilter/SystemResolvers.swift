import Synchronization

/// The resolvers the system itself asks: the `nameserver` lines of `/etc/resolv.conf` (at most
/// the three glibc reads), a file only root may change. Read again when the file changes (a
/// network manager rewrites it), at most once every few seconds.
///
/// The agent trusts what these answer as much as the system does: an answer from any other
/// server is one the child chose, and may lie.
public final class SystemResolvers: Sendable {
    private struct State {
        var signature = ""
        var addresses: [[UInt8]] = []
        var checked: ContinuousClock.Instant?
    }

    public let path: String
    private let state: Mutex<State>
    private static let recheck: Duration = .seconds(5)

    public init(path: String = "/etc/resolv.conf") {
        self.path = path
        state = Mutex(State())
    }

    /// The nameservers' addresses (4 or 16 bytes each), in the file's order.
    ///
    /// A caller that finds the file changed reads it itself; others meanwhile get what was read
    /// before, never an empty list in between (a lookup of the agent's that saw none would take
    /// the system's resolver for one the child chose). A file that cannot be read leaves what was
    /// read before, and is tried again at the next look.
    public var addresses: [[UInt8]] {
        let now = ContinuousClock.now
        if let known = state.withLock({ state -> [[UInt8]]? in
            guard let checked = state.checked, now - checked < Self.recheck else { return nil }
            return state.addresses
        }) {
            return known
        }
        let signature = Files.signature(path)
        if let unchanged = state.withLock({ state -> [[UInt8]]? in
            guard state.signature == signature else { return nil }
            state.checked = now
            return state.addresses
        }) {
            return unchanged
        }
        let text: String
        do {
            text = String(decoding: try Files.read(path, limit: 1 << 20), as: UTF8.self)
        } catch {
            // Gone: no resolvers. There but unreadable for a moment: what was read before.
            guard Files.exists(path) else {
                state.withLock {
                    $0.signature = signature
                    $0.addresses = []
                    $0.checked = now
                }
                return []
            }
            return state.withLock { state in
                state.checked = now
                return state.addresses
            }
        }
        let addresses = Self.parse(text)
        state.withLock {
            $0.signature = signature
            $0.addresses = addresses
            $0.checked = now
        }
        return addresses
    }

    /// Whether `address` (4 or 16 bytes) is one of the system's resolvers.
    public func contains(_ address: some Collection<UInt8>) -> Bool {
        addresses.contains { $0.elementsEqual(address) }
    }

    /// The ways the system resolves names without a DNS packet of the asker's own, which the
    /// agent then does not see (its lookups do not pass the filter as DNS: shields hold at the
    /// connection only), as sentences for `status`: glibc's `resolve` module (systemd-resolved
    /// over its varlink socket) and nscd's cache, from `nsswitch.conf`'s `hosts` line and the
    /// sockets that are there.
    public static func unseenLookups(
        nsswitch: String = "/etc/nsswitch.conf", resolvedSocket: String = "/run/systemd/resolve/io.systemd.Resolve",
        nscdSocket: String = "/var/run/nscd/socket"
    ) -> [String] {
        let text = (try? Files.read(nsswitch, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return unseenLookups(
            hostsLine: hostsSources(text), resolved: Files.exists(resolvedSocket), nscd: Files.exists(nscdSocket))
    }

    static func unseenLookups(hostsLine sources: [String], resolved: Bool, nscd: Bool) -> [String] {
        var found: [String] = []
        if sources.contains("resolve"), resolved {
            found.append(
                "names are looked up through systemd-resolved's own socket (nsswitch.conf: resolve), not as DNS packets "
                    + "of the child's: the DNS filter does not see them; web shields hold at the connection")
        }
        if nscd {
            found.append(
                "nscd answers lookups from its cache, as its own account: the DNS filter does not see them; web shields "
                    + "hold at the connection")
        }
        return found
    }

    /// The sources of the `hosts` line (`files`, `resolve`, `dns`…), actions left out.
    static func hostsSources(_ text: String) -> [String] {
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.first == "hosts:" else { continue }
            return words.dropFirst().filter { !$0.hasPrefix("[") }.map { String($0) }
        }
        return []
    }

    /// The `nameserver` lines' addresses; comments and other lines are skipped.
    public static func parse(_ text: String) -> [[UInt8]] {
        var found: [[UInt8]] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver", let bytes = IPAddress.bytes(words[1]) else { continue }
            if !found.contains(bytes) { found.append(bytes) }
            if found.count == 3 { break }
        }
        return found
    }
}
