import LinuxSupport
import ScreenTimeCore

/// The per-installation token secret: made on first start, 32 random bytes in a file of mode 0600
/// in the state directory, never sent anywhere. Losing it changes every token.
enum TokenSecret {
    static func loadOrCreate(at path: String) throws(AgentError) -> [UInt8] {
        if Files.exists(path) {
            let bytes: [UInt8]
            do {
                bytes = try Files.read(path, limit: 4_096)
                if try Files.mode(of: path) != 0o600 { try Files.writeAtomically(bytes, to: path, mode: 0o600) }
            } catch {
                throw AgentError(.secret, "cannot read the token secret: \(error.message)", cause: error)
            }
            guard bytes.count == 32 else {
                throw AgentError(
                    .secret,
                    "\(path) holds \(bytes.count) bytes, not 32; restore it from a backup, or remove it to make a new one (every token will change)"
                )
            }
            return bytes
        }
        let secret = TokenMinter.generateSecret()
        do {
            try Files.writeAtomically(secret, to: path, mode: 0o600)
        } catch {
            throw AgentError(.secret, "cannot write the token secret: \(error.message)", cause: error)
        }
        return secret
    }
}
