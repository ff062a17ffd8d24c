import Foundation

/// The agent's own iptables and ip6tables chains, which send the filtered users' DNS to a
/// netfilter queue and refuse their ways around it.
///
/// Layout, the same in both families (`CHAIN` is the configured name, `screentime` by default):
///
///     OUTPUT          -j CHAIN                                      (first rule)
///     CHAIN           -m owner --uid-owner UID[-UID] -j CHAIN-filter  (one per filtered uid range)
///     CHAIN-filter    -p udp --dport 53 -j NFQUEUE --queue-num N    (no --queue-bypass: fail closed)
///                     -p tcp --dport 53 -j NFQUEUE --queue-num N
///                     -p tcp --dport 853 -j REJECT --reject-with tcp-reset   (DNS over TLS)
///                     -p udp --dport 853 -j REJECT                           (DNS over QUIC)
///                     -d DOH -p tcp --dport 443 -j REJECT --reject-with tcp-reset  (per DoH address)
///                     -d DOH -p udp --dport 443 -j REJECT                          (HTTP/3)
///
/// Installing replaces both chains' contents in one `iptables-restore --noflush` transaction per
/// family, so running it again never duplicates a rule and the rules are never half there. The
/// owner match works only in OUTPUT, for sockets of this network namespace.
public struct Firewall: Sendable {
    public enum Family: String, Sendable, CaseIterable {
        case ipv4, ipv6

        var command: String { self == .ipv4 ? "iptables" : "ip6tables" }
    }

    public let chain: String
    public let queue: UInt16
    /// Where iptables, ip6tables and their -restore are looked for.
    public let toolDirectories: [String]

    public init(chain: String, queue: UInt16, toolDirectories: [String] = ["/usr/sbin", "/sbin", "/usr/bin"]) {
        self.chain = chain
        self.queue = queue
        self.toolDirectories = toolDirectories
    }

    public var filterChain: String { chain + "-filter" }

    /// The ruleset `iptables-restore --noflush` is given for one family.
    public func ruleset(for family: Family, owners: [ClosedRange<UInt32>], dohAddresses: [String]) -> String {
        var lines = ["*filter", ":\(chain) - [0:0]", ":\(filterChain) - [0:0]"]
        for range in Set(owners).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let owner = range.count == 1 ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
            lines.append("-A \(chain) -m owner --uid-owner \(owner) -j \(filterChain)")
        }
        let queue = "-j NFQUEUE --queue-num \(queue)"
        lines.append("-A \(filterChain) -p udp -m udp --dport 53 \(queue)")
        lines.append("-A \(filterChain) -p tcp -m tcp --dport 53 \(queue)")
        lines.append("-A \(filterChain) -p tcp -m tcp --dport 853 -j REJECT --reject-with tcp-reset")
        lines.append("-A \(filterChain) -p udp -m udp --dport 853 -j REJECT")
        for address in dohAddresses where address.contains(":") == (family == .ipv6) {
            lines.append("-A \(filterChain) -d \(address) -p tcp -m tcp --dport 443 -j REJECT --reject-with tcp-reset")
            lines.append("-A \(filterChain) -d \(address) -p udp -m udp --dport 443 -j REJECT")
        }
        lines.append("COMMIT")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Puts the chains in place for these users (idempotent), and the jump to them first in
    /// OUTPUT. `dohAddresses` are IPv4 and IPv6 addresses; each family takes its own.
    public func install(owners: [ClosedRange<UInt32>], dohAddresses: [String]) throws(SystemError) {
        for family in Family.allCases {
            try run(
                family.command + "-restore", ["-w", "--noflush"],
                input: ruleset(for: family, owners: owners, dohAddresses: dohAddresses))
            if (try? run(family.command, ["-w", "-C", "OUTPUT", "-j", chain])) == nil {
                try run(family.command, ["-w", "-I", "OUTPUT", "1", "-j", chain])
            }
        }
    }

    /// Removes the jump and both chains, in both families; what is already gone is no error.
    public func remove() throws(SystemError) {
        var failures: [String] = []
        for family in Family.allCases {
            while (try? run(family.command, ["-w", "-D", "OUTPUT", "-j", chain])) != nil {}
            // Both flushed before either is deleted: the first chain jumps to the second.
            for action in ["-F", "-X"] {
                for name in [chain, filterChain] {
                    guard (try? run(family.command, ["-w", "-n", "-L", name])) != nil else { continue }
                    do {
                        try run(family.command, ["-w", action, name])
                    } catch {
                        failures.append(error.message)
                    }
                }
            }
        }
        if !failures.isEmpty { throw SystemError(.command, failures.joined(separator: "; ")) }
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String], input: String? = nil) throws(SystemError) -> String {
        guard let path = toolDirectories.map({ $0 + "/" + tool }).first(where: FileManager.default.isExecutableFile)
        else {
            throw SystemError(
                .command, "\(tool) is not installed (looked in \(toolDirectories.joined(separator: ", ")))")
        }
        let outcome = try ChildProcess.run(
            path, arguments, environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"],
            input: Array((input ?? "").utf8))
        guard outcome.status == 0 else {
            let message = String(decoding: outcome.errors, as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines)
            throw SystemError(
                .command, "\(tool) \(arguments.joined(separator: " ")) failed (\(outcome.status)): \(message)")
        }
        return String(decoding: outcome.output, as: UTF8.self)
    }
}
