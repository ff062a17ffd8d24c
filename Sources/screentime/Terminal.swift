import ArgumentParser
import FamilyControls
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
