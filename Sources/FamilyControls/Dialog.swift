import CLinuxShim
import FoundationEssentials
import Glibc

/// Runs `screentime-shield` in one of its dialog modes: the JSON request on its standard input,
/// its one-line answer back.
enum Dialog {
    enum Outcome {
        case answered(Data)
        /// Closed or cancelled by the person at the desktop.
        case cancelled
        /// It could not be shown: why.
        case unavailable(String)
    }

    static func run(_ arguments: [String], input: Data) -> Outcome {
        let environment = ProcessInfo.processInfo.environment
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil else {
            return .unavailable("no terminal and no desktop (DISPLAY or WAYLAND_DISPLAY) to ask on")
        }
        guard let program = locate(environment) else {
            return .unavailable("screentime-shield, which draws the dialog, is not installed (not on PATH)")
        }
        // Without a session bus, nothing is to wait for one (or start one that lingers).
        var variables = environment
        if variables["DBUS_SESSION_BUS_ADDRESS"] == nil {
            variables["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
            variables["GSETTINGS_BACKEND"] = variables["GSETTINGS_BACKEND"] ?? "memory"
            variables["GTK_A11Y"] = variables["GTK_A11Y"] ?? "none"
        }
        // Its input and output over sockets; the input written with MSG_NOSIGNAL: a dialog that
        // dies before it reads makes a failed send, not a SIGPIPE that ends the guardian's app.
        var toDialog = [Int32](repeating: -1, count: 2)
        var fromDialog = [Int32](repeating: -1, count: 2)
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &toDialog) == 0 else {
            return .unavailable("cannot make a socket pair: \(String(cString: strerror(errno)))")
        }
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fromDialog) == 0
        else {
            toDialog.forEach { close($0) }
            return .unavailable("cannot make a socket pair: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toDialog[1], 0)
        posix_spawn_file_actions_adddup2(&actions, fromDialog[1], 1)
        screentime_spawn_close_from(&actions, 3)
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, nil, argv, envp)
        close(toDialog[1])
        close(fromDialog[1])
        guard spawned == 0 else {
            close(toDialog[0])
            close(fromDialog[0])
            return .unavailable("cannot start \(program): \(String(cString: strerror(spawned)))")
        }
        let line = Array(input) + [10]
        var sent = 0
        while sent < line.count {
            let wrote = line[sent...].withUnsafeBytes {
                send(toDialog[0], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { break }
            sent += wrote
        }
        close(toDialog[0])
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = read(fromDialog[0], &chunk, chunk.count)
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            answer += chunk[..<got]
        }
        close(fromDialog[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        switch exitStatus {
        case 0: return .answered(Data(answer))
        case 1: return .cancelled
        case 69: return .unavailable("\(program) cannot open the display")
        case let status: return .unavailable("\(program) failed (exit status \(status))")
        }
    }

    private static func locate(_ environment: [String: String]) -> String? {
        if let given = environment["SCREENTIME_SHIELD"], FileManager.default.isExecutableFile(atPath: given) {
            return given
        }
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/screentime-shield"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
