public import Crypto
public import FoundationEssentials
import Glibc
import SwiftASN1
import X509

/// The dashboard's own TLS identity: a P-256 key and a certificate it signs itself, made at the
/// first start and kept (the key readable by the dashboard's account alone). A phone trusts it by
/// its fingerprint, which `screentime web pair` and `status` show; no outside authority is asked.
public struct DashboardIdentity: Sendable {
    /// The certificate, DER.
    public let certificate: [UInt8]
    /// The private key, PEM.
    public let privateKey: String

    /// SHA-256 of the certificate, as browsers show it: `AB:CD:…`.
    public var fingerprint: String {
        SHA256.hash(data: certificate).map { hex($0, width: 2) }.joined(separator: ":")
    }

    /// The identity kept in `directory` (`key.pem`, `certificate.pem`), made there if it is not.
    /// A certificate that no longer names every address is made again, with the same key.
    public static func load(
        directory: String, host: String, addresses: [String], now: Date = Date()
    ) throws
        -> DashboardIdentity
    {
        let keyPath = directory + "/key.pem"
        let certificatePath = directory + "/certificate.pem"
        let key: P256.Signing.PrivateKey
        if let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } else {
            key = P256.Signing.PrivateKey()
            try write(key.pemRepresentation, to: keyPath, mode: 0o600)
        }
        if let pem = try? String(contentsOfFile: certificatePath, encoding: .utf8),
            let kept = try? Certificate(pemEncoded: pem), kept.publicKey == Certificate.PublicKey(key.publicKey),
            kept.notValidAfter > now.addingTimeInterval(30 * 86_400),
            Set(names(of: kept)) == Set(addresses + [host])
        {
            return DashboardIdentity(certificate: try der(kept), privateKey: key.pemRepresentation)
        }
        let made = try make(key: key, host: host, addresses: addresses, now: now)
        try write(try made.serializeAsPEM().pemString, to: certificatePath, mode: 0o644)
        return DashboardIdentity(certificate: try der(made), privateKey: key.pemRepresentation)
    }

    /// The 32 bytes kept in `directory/session.key` (made there if not): the key that binds a
    /// session's cookie to its device, the same across restarts.
    public static func sessionKey(directory: String) throws -> [UInt8] {
        let path = directory + "/session.key"
        if let data = FileManager.default.contents(atPath: path), data.count == 32 { return Array(data) }
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        try write(key, to: path, mode: 0o600)
        return key
    }

    static func make(key: P256.Signing.PrivateKey, host: String, addresses: [String], now: Date) throws -> Certificate {
        let name = try DistinguishedName {
            CommonName("screentime on \(host)")
            OrganizationName("screentime")
        }
        var alternatives: [GeneralName] = [.dnsName(host)]
        for address in addresses {
            if let bytes = ipBytes(address) {
                alternatives.append(.ipAddress(ASN1OctetString(contentBytes: bytes[...])))
            }
        }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames(alternatives)
        }
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600), notValidAfter: now.addingTimeInterval(825 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: .init(key))
    }

    /// The host and addresses a certificate names.
    static func names(of certificate: Certificate) -> [String] {
        guard let alternatives = try? certificate.extensions.subjectAlternativeNames else { return [] }
        return alternatives.compactMap { name in
            switch name {
            case .dnsName(let host): host
            case .ipAddress(let octets): address(Array(octets.bytes))
            default: nil
            }
        }
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// An IP address's bytes (4 or 16), or nil for text that is not one.
    public static func ipBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func address(_ bytes: [UInt8]) -> String? {
        var text = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : bytes.count == 16 ? AF_INET6 : -1
        guard family >= 0, inet_ntop(family, bytes, &text, 64) != nil else { return nil }
        return String(cString: text)
    }

    private static func write(_ text: String, to path: String, mode: mode_t) throws {
        try write(Array(text.utf8), to: path, mode: mode)
    }

    /// `bytes` into `path`, whole or not at all (a new file renamed over it), never through a link.
    private static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
        let fd = open(path + ".new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw DashboardSetupError("cannot write \(path): \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, mode)
        close(fd)
        guard written == bytes.count, rename(path + ".new", path) == 0 else {
            throw DashboardSetupError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// What stops the dashboard from starting, said plainly.
public struct DashboardSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
