import Crypto
import FoundationEssentials

/// Mints tokens from a per-installation secret.
///
/// A token is HMAC-SHA256(secret, kind ‖ 0x00 ‖ canonical identity): the same application, domain or
/// category always gives the same token on this PC and a different one on another, and without the
/// secret nothing in a token leads back to what it stands for. The secret is made once by the agent
/// and never leaves it.
public struct TokenMinter: Sendable {
    /// The least secret length accepted, in bytes (the HMAC-SHA256 block of security).
    public static var minimumSecretLength: Int { 32 }

    // HMAC keyed once; each mint continues a copy of it (HMAC is a value type). Crypto's types are
    // not marked Sendable, but this one is never mutated after init.
    private nonisolated(unsafe) let keyed: HMAC<SHA256>

    public init(secret: some Collection<UInt8>) throws(ScreenTimeCoreError) {
        guard secret.count >= Self.minimumSecretLength else {
            throw ScreenTimeCoreError(
                .invalidSecret,
                "the token secret has \(secret.count) bytes; it needs at least \(Self.minimumSecretLength)"
            )
        }
        keyed = HMAC<SHA256>(key: SymmetricKey(data: Array(secret)))
    }

    /// A new random secret, for the first start of an installation.
    public static func generateSecret() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    public func token(for application: ApplicationIdentity) -> ApplicationToken {
        mint(Application.self, application.canonical)
    }

    /// The token of a domain name exactly as given. A guardian's domain is first reduced to its
    /// registrable form with `PublicSuffixList.webDomain(for:)`.
    public func token(for domain: DomainName) -> WebDomainToken {
        mint(WebDomain.self, domain.ascii)
    }

    public func token(for category: CategoryName) -> ActivityCategoryToken {
        mint(ActivityCategory.self, category.name)
    }

    private func mint<Kind: TokenKind>(_ kind: Kind.Type, _ identity: String) -> Token<Kind> {
        var message = Array(Kind.kindName.utf8)
        message.append(0)
        message.append(contentsOf: identity.utf8)
        var hmac = keyed
        hmac.update(data: message)
        let mac = hmac.finalize()
        // The MAC of SHA-256 is always 32 bytes, the size of a token.
        return Token<Kind>(validBytes: Array(mac))
    }
}

extension Token {
    /// For bytes whose length is known to be right (the minter's own MACs).
    fileprivate init(validBytes: [UInt8]) {
        do {
            try self.init(bytes: validBytes)
        } catch {
            preconditionFailure("HMAC-SHA256 gave \(validBytes.count) bytes")
        }
    }
}
