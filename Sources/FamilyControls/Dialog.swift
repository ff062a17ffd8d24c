import Foundation

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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        // Without a session bus, nothing is to wait for one (or start one that lingers).
        var variables = environment
        if variables["DBUS_SESSION_BUS_ADDRESS"] == nil {
            variables["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
            variables["GSETTINGS_BACKEND"] = variables["GSETTINGS_BACKEND"] ?? "memory"
            variables["GTK_A11Y"] = variables["GTK_A11Y"] ?? "none"
        }
        process.environment = variables
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        do {
            try process.run()
        } catch {
            return .unavailable("cannot start \(program): \(error.localizedDescription)")
        }
        stdin.fileHandleForWriting.write(input + Data([10]))
        try? stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        switch process.terminationStatus {
        case 0: return .answered(output)
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
