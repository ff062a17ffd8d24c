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
        let interactive = isatty(0) == 1
        var user = name ?? ""
        if user.isEmpty {
            if interactive { prompt("A guardian must approve. Guardian's user name: ") }
            user = readLine(strippingNewline: true) ?? ""
        }
        if interactive { prompt("Password for \(user): ") }
        let password = interactive ? readHidden() : (readLine(strippingNewline: true) ?? "")
        if interactive { prompt("\n") }
        return GuardianCredentials(user: user.trimmingCharacters(in: " \t"), password: password)
    }

    private static func prompt(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    private static func readHidden() -> String {
        var original = termios()
        guard tcgetattr(0, &original) == 0 else { return readLine(strippingNewline: true) ?? "" }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(0, TCSANOW, &silent)
        defer { tcsetattr(0, TCSANOW, &original) }
        return readLine(strippingNewline: true) ?? ""
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text.removeFirst() }
        while let last = text.last, set.contains(last) { text.removeLast() }
        return String(text)
    }
}
