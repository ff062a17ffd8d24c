import Glibc
import LinuxSupport
import ScreenTimeIPC

enum UserLookup {
    static func uid(of reference: String) throws -> UInt32 { try UserDirectory().user(reference).uid }
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
