import FoundationEssentials

// Installing and removing the rules, through iptables-restore and iptables.
extension Firewall {
    /// Puts the chains in place for these users (idempotent), and the jumps to them first in
    /// OUTPUT and INPUT. `dohAddresses` are IPv4 and IPv6 addresses; each family takes its own.
    ///
    /// With `synFastPath`, the sets the rules name must be there (`shieldedAddressSet`, made with `AddressSet.create`).
    /// With `acknowledgementLog`, watched flows' server packets are copied to that log group
    /// (see `ruleset`).
    /// With `dnsFastPath`, its programs must be pinned where it says while this runs.
    public func install(
        owners: [ClosedRange<UInt32>], dohAddresses: [String], generation: UInt8 = 0, synFastPath: Bool = false,
        acknowledgementLog: UInt16? = nil, dnsFastPath: DNSFastPathPrograms? = nil
    ) throws(SystemError) {
        for family in Family.allCases {
            // The hello fast path's part in the mangle table first (empty without it): the filter
            // table's rules let a hello go only once its bytes are the packet's own.
            try run(
                family.command + "-restore", ["-w", "--noflush"],
                input: helloRuleset(
                    for: family, owners: owners, hello: dnsFastPath?.hello != nil && acknowledgementLog != nil,
                    asked: dnsFastPath?.asked))
            if (try? run(family.command, ["-w", "-t", "mangle", "-C", "OUTPUT", "-j", helloChain])) == nil {
                try run(family.command, ["-w", "-t", "mangle", "-I", "OUTPUT", "1", "-j", helloChain])
            }
            // The DNS fast path's part in the raw table (empty without it).
            try run(
                family.command + "-restore", ["-w", "--noflush"],
                input: untrackedRuleset(for: family, owners: owners, programs: dnsFastPath))
            for (hook, target) in untrackedJumps
            where (try? run(family.command, ["-w", "-t", "raw", "-C", hook, "-p", "udp", "-j", target])) == nil {
                try run(family.command, ["-w", "-t", "raw", "-I", hook, "1", "-p", "udp", "-j", target])
            }
            try run(
                family.command + "-restore", ["-w", "--noflush"],
                input: ruleset(
                    for: family, owners: owners, dohAddresses: dohAddresses, generation: generation,
                    synFastPath: synFastPath, acknowledgementLog: acknowledgementLog, dnsFastPath: dnsFastPath))
            for (hook, target) in [("OUTPUT", chain), ("INPUT", inputChain)]
            where (try? run(family.command, ["-w", "-C", hook, "-j", target])) == nil {
                try run(family.command, ["-w", "-I", hook, "1", "-j", target])
            }
        }
    }

    /// The generation of PASSED in the rules installed now (by an agent before this one), if any:
    /// a restart keeps it, so connections passed before the restart stay passed.
    public func installedGeneration() -> UInt8? {
        guard let listing = try? run(Family.ipv4.command, ["-w", "-S", chain]) else { return nil }
        // The fast path's rule: `-A CHAIN -p tcp -m connmark --mark 0x…/0xff0000 -j RETURN`.
        let prefix = "-A \(chain) -p tcp -m connmark --mark 0x"
        for line in listing.split(separator: "\n") where line.hasPrefix(prefix) && line.hasSuffix("-j RETURN") {
            let hex = line.dropFirst(prefix.count).prefix { $0 != "/" }
            guard let value = UInt32(hex, radix: 16) else { continue }
            for generation in 0..<Self.generations where mark(.passed, generation: generation) == value {
                return generation
            }
        }
        return nil
    }

    /// Removes the jumps and the chains, in both families; what is already gone is no error.
    public func remove() throws(SystemError) {
        var failures: [String] = []
        for family in Family.allCases {
            while (try? run(family.command, ["-w", "-D", "OUTPUT", "-j", chain])) != nil {}
            while (try? run(family.command, ["-w", "-D", "INPUT", "-j", inputChain])) != nil {}
            // All flushed before any is deleted: the first chain jumps to the second.
            for action in ["-F", "-X"] {
                for name in [chain, filterChain, inputChain] {
                    guard (try? run(family.command, ["-w", "-n", "-L", name])) != nil else { continue }
                    do {
                        try run(family.command, ["-w", action, name])
                    } catch {
                        failures.append(error.message)
                    }
                }
            }
        }
        for family in Family.allCases {
            while (try? run(family.command, ["-w", "-t", "mangle", "-D", "OUTPUT", "-j", helloChain])) != nil {}
            for action in ["-F", "-X"]
            where (try? run(family.command, ["-w", "-t", "mangle", "-n", "-L", helloChain])) != nil {
                do {
                    try run(family.command, ["-w", "-t", "mangle", action, helloChain])
                } catch {
                    failures.append(error.message)
                }
            }
        }
        for family in Family.allCases {
            for (hook, target) in untrackedJumps {
                while (try? run(family.command, ["-w", "-t", "raw", "-D", hook, "-p", "udp", "-j", target])) != nil {}
            }
            for action in ["-F", "-X"] {
                for name in [untrackedChain, untrackedInputChain, untrackingChain]
                where (try? run(family.command, ["-w", "-t", "raw", "-n", "-L", name])) != nil {
                    do {
                        try run(family.command, ["-w", "-t", "raw", action, name])
                    } catch {
                        failures.append(error.message)
                    }
                }
            }
        }
        // The sets go after the rules that named them (a kernel without ipset has none).
        for family in Family.allCases {
            try? AddressSet(name: shieldedAddressSet(family), family: family == .ipv4 ? 4 : 6).destroy()
        }
        if !failures.isEmpty { throw SystemError(.command, failures.joined(separator: "; ")) }
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String], input: String? = nil) throws(SystemError) -> String {
        guard let path = toolDirectories.map({ $0 + "/" + tool }).first(where: FileManager.default.isExecutableFile)
        else {
            throw SystemError(
                .command, "\(tool) is not installed (looked in \(toolDirectories.joined(separator: ", ")))")
        }
        let outcome = try ChildProcess.run(
            path, arguments, environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"],
            input: Array((input ?? "").utf8))
        guard outcome.status == 0 else {
            let message = String(decoding: outcome.errors, as: UTF8.self).trimmingWhitespace()
            throw SystemError(
                .command, "\(tool) \(arguments.joined(separator: " ")) failed (\(outcome.status)): \(message)")
        }
        return String(decoding: outcome.output, as: UTF8.self)
    }
}
