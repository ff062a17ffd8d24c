import LinuxSupport
import ScreenTimeCore

/// The agent's own lookup of a name: the A and AAAA records one server gives for it, each asked
/// once over UDP, nothing where it does not answer in time. The shadow lookups and the safe hosts'
/// addresses both ask this way.
enum AddressQuery {
    static func records(
        of name: DNSName, server: [UInt8], port: UInt16, timeout: Duration
    ) -> [DNSMessage.AddressRecord] {
        var found: [DNSMessage.AddressRecord] = []
        for type in [DNSMessage.typeA, DNSMessage.typeAAAA] {
            let query = DNSMessage(
                id: UInt16.random(in: 0...UInt16.max), flags: 0x0100,
                questions: [DNSMessage.Question(name: name, type: type)])
            guard
                let reply = try? DatagramExchange.ask(
                    query.serialized(), address: server, port: port, timeout: timeout),
                let answers = try? DNSMessage.answers(in: reply)
            else { continue }
            found += answers.addresses
        }
        return found
    }
}
