import CLinuxShim
import Glibc
import Synchronization

/// A kernel set of addresses (an ipset of type `hash:ip`, one family) whose entries time out by
/// themselves, driven through the ipset netlink protocol: no `ipset` program, one message and
/// its acknowledgement per change. A firewall rule matches it (`-m set --match-set NAME dst`).
///
/// The agent keeps in one the addresses it learned for shielded names, each for as long as it
/// keeps them, so that a connection's SYN to any other address passes in the kernel, without a
/// trip through the queue.
///
/// Sets live in the network namespace of the socket that made them (the agent's).
public final class AddressSet: Sendable {
    public let name: String
    /// 4 or 6.
    public let family: Int
    private let socket: Mutex<(descriptor: Int32, sequence: UInt32)>

    /// Opens a netlink socket for the set `name` (at most 31 bytes); nothing is made yet.
    public init(name: String, family: Int) throws(SystemError) {
        guard (1...31).contains(name.utf8.count), family == 4 || family == 6 else {
            throw SystemError(.netlink, "a set's name is 1 to 31 bytes and its family 4 or 6: \(name), \(family)")
        }
        self.name = name
        self.family = family
        let descriptor = try NetfilterNetlink.openSocket()
        socket = Mutex((descriptor, 0))
    }

    deinit { socket.withLock { _ = close($0.descriptor) } }

    /// Makes the set if it is not there (a set of the same name and type already there is kept,
    /// entries and all): at most `capacity` entries, each for `timeout` seconds unless added with
    /// its own.
    public func create(capacity: UInt32, timeout: UInt32) throws(SystemError) {
        let data = attribute(
            nested: typeData,
            [
                attribute(netOrder: typeTimeout, timeout),
                attribute(netOrder: typeMaximumElements, capacity),
            ])
        try send(
            command: commandCreate, flags: NetfilterNetlink.flagCreate,
            [
                attribute(typeTypeName, Array("hash:ip".utf8) + [0]), attribute(typeRevision, [hashIPRevision]),
                attribute(typeFamily, [family == 4 ? protocolIPv4 : protocolIPv6]), data,
            ])
    }

    /// Adds `address` (4 or 16 bytes, the set's family) for `seconds` (0: for good), or renews
    /// the time of one already there.
    public func add(_ address: some Collection<UInt8>, seconds: UInt32) throws(SystemError) {
        let bytes = Array(address)
        guard bytes.count == (family == 4 ? 4 : 16) else {
            throw SystemError(.netlink, "a \(bytes.count)-byte address for an IPv\(family) set")
        }
        let ip = attribute(nested: typeIP, [attribute(netOrder: family == 4 ? typeIPv4 : typeIPv6, bytes)])
        try send(
            command: commandAdd, flags: 0,
            [attribute(nested: typeData, [ip, attribute(netOrder: typeTimeout, seconds)])])
    }

    /// Whether `address` is in the set now (an entry whose time ran out is not).
    public func contains(_ address: some Collection<UInt8>) throws(SystemError) -> Bool {
        let bytes = Array(address)
        let ip = attribute(nested: typeIP, [attribute(netOrder: family == 4 ? typeIPv4 : typeIPv6, bytes)])
        do {
            try send(command: commandTest, flags: 0, [attribute(nested: typeData, [ip])])
            return true
        } catch  where error.errno == 4103 {  // IPSET_ERR_EXIST: not in it
            return false
        }
    }

    /// Removes every entry.
    public func flush() throws(SystemError) { try send(command: commandFlush, flags: 0, []) }

    /// Removes the set; one that is not there is no error. (A set a rule still names cannot go.)
    public func destroy() throws(SystemError) {
        do {
            try send(command: commandDestroy, flags: 0, [])
        } catch  where error.errno == ENOENT {
            return
        }
    }

    // MARK: the protocol (linux/netfilter/ipset/ip_set.h, linux/netfilter/nfnetlink.h)

    private func send(command: UInt16, flags: UInt16, _ attributes: [[UInt8]]) throws(SystemError) {
        let attributes =
            [attribute(typeProtocol, [ipsetProtocol]), attribute(typeSetName, Array(name.utf8) + [0])] + attributes
        try socket.withLock { state throws(SystemError) in
            state.sequence &+= 1
            let message = NetfilterNetlink.message(
                subsystem: NetfilterNetlink.subsystemIPSet, command: command,
                flags: NetfilterNetlink.flagRequest | NetfilterNetlink.flagAcknowledge | flags,
                sequence: state.sequence, family: family == 4 ? protocolIPv4 : protocolIPv6, attributes)
            let error = try NetfilterNetlink.request(
                message, sequence: state.sequence, on: state.descriptor, what: "ipset \(name)")
            guard error == 0 else {
                throw SystemError(.netlink, "ipset \(name): \(Self.describe(error))", errno: error)
            }
        }
    }

    static func describe(_ error: Int32) -> String {
        switch error {
        case 4352: return "the set is full"  // IPSET_ERR_HASH_FULL
        case 4103: return "not in the set"  // IPSET_ERR_EXIST
        case 4096...: return "ipset error \(error)"
        default: return String(cString: strerror(error))
        }
    }

    private func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        NetfilterNetlink.attribute(type, payload)
    }

    private func attribute(netOrder type: UInt16, _ value: UInt32) -> [UInt8] {
        NetfilterNetlink.attribute(bigEndian: type | NetfilterNetlink.attributeNetByteOrder, value)
    }

    private func attribute(netOrder type: UInt16, _ bytes: [UInt8]) -> [UInt8] {
        NetfilterNetlink.attribute(type | NetfilterNetlink.attributeNetByteOrder, bytes)
    }

    private func attribute(nested type: UInt16, _ attributes: [[UInt8]]) -> [UInt8] {
        NetfilterNetlink.attribute(nested: type, attributes)
    }
}

private let protocolIPv4: UInt8 = 2
private let protocolIPv6: UInt8 = 10
private let ipsetProtocol: UInt8 = 7
/// hash:ip's revision 4 (kernels since 4.x), which has timeouts; newer revisions add nothing used.
private let hashIPRevision: UInt8 = 4
private let commandCreate: UInt16 = 2
private let commandDestroy: UInt16 = 3
private let commandFlush: UInt16 = 4
private let commandAdd: UInt16 = 9
private let commandTest: UInt16 = 11
private let typeProtocol: UInt16 = 1
private let typeSetName: UInt16 = 2
private let typeTypeName: UInt16 = 3
private let typeRevision: UInt16 = 4
private let typeFamily: UInt16 = 5
private let typeData: UInt16 = 7
private let typeIP: UInt16 = 1
private let typeIPv4: UInt16 = 1
private let typeIPv6: UInt16 = 2
private let typeTimeout: UInt16 = 6
private let typeMaximumElements: UInt16 = 19
