/// Recognises a client's QUIC Initial packet (RFC 9000 §17.2.2) in a UDP datagram, on any port.
///
/// The agent refuses a child's QUIC, so that browsers fall back to TLS over TCP, whose
/// ClientHello it reads; the name a QUIC Initial carries is encrypted with keys anyone can derive,
/// but refusing is simpler and leaves nothing to get wrong. The test is the shape every client
/// Initial has: a long header with the fixed bit (`0b11xx_xxxx`), a version other than 0 (0 is
/// Version Negotiation, which only servers send), connection IDs of at most 20 bytes, the
/// destination one at least 8, in a datagram padded to at least 1,200 bytes. RTP and the other
/// UDP protocols of games and calls start `0b10` and are rarely that large, so they are not
/// taken for QUIC.
public enum QUICInitial {
    public static let minimumDatagram = 1200

    public static func looksLikeClientInitial(_ datagram: ArraySlice<UInt8>) -> Bool {
        var reader = SliceReader(datagram)
        guard datagram.count >= minimumDatagram, let first = reader.u8(), first & 0xC0 == 0xC0,
            let version = reader.u32(), version != 0, let destinationLength = reader.u8(),
            destinationLength >= 8, destinationLength <= 20, reader.skip(Int(destinationLength)),
            let sourceLength = reader.u8(), sourceLength <= 20
        else { return false }
        return true
    }
}
