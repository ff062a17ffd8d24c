import LinuxSupport
import Logging
import ScreenTimeCore

// The DNS fast path: questions judged once, asked again in the kernel (see `DNSFastPath`).
extension DomainShield {
    /// The fast path, loaded while the agent may still mount and load programs (before its
    /// capability drop); nil when the configuration turns it off or the kernel refuses it.
    static func loadFastPath(_ configuration: AgentConfiguration, logger: Logger) -> DNSFastPath? {
        guard configuration.dnsFastPath else { return nil }
        do {
            return try DNSFastPath(directory: fastPathDirectory(configuration))
        } catch {
            logger.warning("no DNS fast path; every question comes to the queue: \(error.message)")
            return nil
        }
    }

    /// Where the fast path's programs are pinned: beside the control socket, named by the chain
    /// (an agent's own, as its rules are).
    static func fastPathDirectory(_ configuration: AgentConfiguration) -> String {
        let socket = configuration.socket
        let directory = socket.lastIndex(of: "/").map { String(socket[..<$0]) } ?? "/run/screentime"
        return (directory.isEmpty ? "" : directory) + "/dns-fast-path-" + configuration.firewallChain
    }

    /// How long an entry holds (unless a filter changes first). What it lets pass is the
    /// agent's verdict on a name, not an answer: each answer is read in the kernel. The lookups it
    /// passes are counted for the usage reports when it is made again, and the addresses of the
    /// answer that made it are kept as an allowed name's for a minute at least, so a name in use
    /// comes back to the agent this often.
    static let fastPathLifetime: Double = 30

    /// After a UDP reply to `owner` was judged and let go unchanged: if its question is one the
    /// owner's filter allows and its answers are addresses of that name alone, the same question
    /// (same user, type and name as sent) is asked in the kernel from now on, for
    /// `fastPathLifetime` or until the next change of a filter. The lookups the entry it
    /// replaces passed are counted now.
    func offerFastPath(reply: ArraySlice<UInt8>, owner: UInt32, filter: DomainFilter, generation: UInt64) {
        // The question's name from the bytes the test above read: no second parse of the reply.
        guard let fastPath, let entry = DNSFastPath.entry(answeredBy: reply), let name = Self.name(wire: entry.name),
            filter.verdict(for: name) == nil, filter.safeSearchTarget(for: name) == nil
        else { return }
        do {
            let hits = try fastPath.allow(
                DNSFastPath.Question(uid: owner, type: entry.type, name: entry.name), seconds: Self.fastPathLifetime,
                generation: generation)
            countFastPathLookups(hits, of: name, uid: owner)
        } catch {
            logger.debug("not on the DNS fast path", metadata: ["error": "\(error.message)"])
        }
    }

    /// Counts the lookups every entry passed since it was made (before a change of the filters
    /// voids them all). Told at once: this runs off the queue's thread, whose verdicts tell the
    /// rest.
    func takeFastPathHits() {
        guard let fastPath else { return }
        for (question, hits) in fastPath.takeHits() {
            guard let name = Self.name(wire: question.name) else { continue }
            countFastPathLookups(hits, of: name, uid: question.uid)
        }
        metUsage?.tell()
    }

    /// Lookups the kernel passed, noted for the usage tracker as the queue's are (told after
    /// the verdicts, or by the caller).
    func countFastPathLookups(_ hits: UInt64, of name: DNSName, uid: UInt32) {
        guard hits > 0 else { return }
        metUsage?.note([name], uid: uid, lookups: Int(clamping: hits))
    }

    /// A name from its wire form (labels, a final zero; no compression).
    static func name(wire bytes: [UInt8]) -> DNSName? {
        var labels: [[UInt8]] = []
        var at = 0
        while at < bytes.count {
            let count = Int(bytes[at])
            if count == 0 { return try? DNSName(labels: labels) }
            guard at + count < bytes.count else { return nil }
            labels.append(Array(bytes[(at + 1)...(at + count)]))
            at += count + 1
        }
        return nil
    }
}
