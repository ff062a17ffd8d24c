import CPAM

/// Checks a user's password through PAM, with the service's stack in `/etc/pam.d/<service>`
/// (`packaging/pam.d/screentime`: pam_unix). Runs as root, so pam_unix can read the shadow file.
public struct PAMAuthenticator: Sendable {
    public let service: String

    public init(service: String) { self.service = service }

    /// Returns when the password is right and the account usable; throws `.authentication` otherwise.
    public func check(user: String, password: String) throws(SystemError) {
        var message = [CChar](repeating: 0, count: 256)
        let status = screentime_pam_check(service, user, password, &message, UInt(message.count))
        guard status == 0 else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw SystemError(.authentication, "PAM (\(service)) refused \(user): \(text)")
        }
    }
}
