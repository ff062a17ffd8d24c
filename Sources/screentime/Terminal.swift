import ArgumentParser
import FamilyControls
import FoundationEssentials
import Glibc
import ScreenTimeIPC

enum UserLookup {
    /// A user's uid by name (or digits), nil if there is none.
    static func uid(of reference: String) -> UInt32? {
        if let uid = UInt32(reference) { return uid }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = 4096
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            let status = getpwnam_r(reference, &entry, &buffer, size, &result)
            if status == ERANGE {
                size *= 4
                continue
            }
            return status == 0 ? result?.pointee.pw_uid : nil
        }
        return nil
    }
}

/// Writing to standard error, and asking for a guardian's name and password: on the terminal with
/// echo off when there is one, else two lines from standard input (scripts and tests).
enum Terminal {
    static func error(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    static func askGuardian(name: String?) throws -> GuardianCredentials {
        guard let credentials = GuardianPrompt.ask(name: name) else {
            error("screentime: cancelled: no guardian approved")
            throw ExitCode(1)
        }
        return credentials
    }
}

/// All of standard input (at most 64 MiB: a selection, a file piped in).
func standardInput() throws -> Data {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while bytes.count <= 64 << 20 {
        let got = read(0, &chunk, chunk.count)
        if got < 0, errno == EINTR { continue }
        guard got >= 0 else { throw ValidationError("cannot read standard input: \(String(cString: strerror(errno)))") }
        if got == 0 { return Data(bytes) }
        bytes += chunk[..<got]
    }
    throw ValidationError("standard input is longer than 64 MiB")
}
