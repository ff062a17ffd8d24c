import CLinuxShim
import Glibc

/// A pseudo-terminal: what a text login's terminal is (the login tests log in on one and read
/// what the agent writes to it).
public enum PseudoTerminal {
    /// Opens a new one: its master (non-blocking, close-on-exec; the caller closes it) and the
    /// path of its terminal, `/dev/pts/N`.
    public static func open() throws(SystemError) -> (master: Int32, path: String) {
        var number: Int32 = 0
        let master = screentime_open_pty(&number)
        guard master >= 0 else { throw SystemError.call("open(/dev/ptmx)", errno) }
        return (master, "/dev/pts/\(number)")
    }
}
