/// Programs that run another file: shells, script interpreters, Java with `-jar`, the dynamic
/// loader (`ld-linux-x86-64.so.2 ./game` runs `game` with the loader as the executable). A process
/// of one of them is the application of the file it runs, which `script(in:)` finds in its
/// command line.
public enum Interpreter {
    /// The file an interpreter's command line runs, as written there (perhaps relative to the
    /// process's working directory); nil when the program is not an interpreter or runs inline
    /// code (`sh -c`, `python3 -c`, `python3 -m`, `perl -e`).
    ///
    /// `isLoader` says the executable is the dynamic loader whatever its name (the agent knows a
    /// copied or renamed loader by its content).
    public static func script(in commandLine: [String], executable: String? = nil, isLoader: Bool = false) -> String? {
        guard let program = executable ?? commandLine.first else { return nil }
        if isLoader || kind(of: program) == .loader { return loaderProgram(in: commandLine) }
        guard let kind = kind(of: program) else { return nil }
        var index = 1
        while index < commandLine.count {
            let argument = commandLine[index]
            if argument == "--" { return index + 1 < commandLine.count ? commandLine[index + 1] : nil }
            // Java's first word is a class name, not a file, unless `-jar` came before it.
            guard argument.hasPrefix("-"), argument.count > 1 else { return kind == .java ? nil : argument }
            switch kind {
            case .java:
                if argument == "-jar" { return index + 1 < commandLine.count ? commandLine[index + 1] : nil }
                if ["-cp", "-classpath", "--class-path", "--module-path", "-p"].contains(argument) { index += 1 }
            case .loader:
                return loaderProgram(in: commandLine)
            case .shell, .script:
                // A group of one-letter flags that includes an inline-code flag (`-ec`, `-uc`).
                if !argument.hasPrefix("--"), argument.dropFirst().contains(where: kind.inlineFlags.contains) {
                    return nil
                }
                if kind.optionsWithValue.contains(argument) { index += 1 }
            }
            index += 1
        }
        return nil
    }

    /// Whether a program (a path or a name) is an interpreter this knows.
    public static func isInterpreter(_ program: String) -> Bool { kind(of: program) != nil }

    /// Whether a program (a path or a name) is named as the dynamic loader is.
    public static func isLoaderName(_ program: String) -> Bool { kind(of: program) == .loader }

    /// The options of glibc's loader (2.36), as `ld.so --help` lists them: those that take the
    /// next argument, and those that do not.
    static let loaderOptionsWithValue: Set<String> = [
        "--library-path", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask", "--inhibit-rpath", "--audit", "--preload",
        "--argv0",
    ]
    static let loaderFlags: Set<String> = [
        "--list", "--verify", "--inhibit-cache", "--list-tunables", "--list-diagnostics", "--help", "--version",
    ]

    /// The program the loader runs, parsed as the loader parses its command line: known options
    /// (with their values) are skipped; any other word starting with `--` (`--` itself included)
    /// makes the loader stop with an error, so nothing runs; the first other word, even one
    /// starting with a single `-`, is the program.
    static func loaderProgram(in commandLine: [String]) -> String? {
        var index = 1
        while index < commandLine.count {
            let argument = commandLine[index]
            if loaderOptionsWithValue.contains(argument) {
                // Without its value the loader refuses to run.
                guard index + 1 < commandLine.count else { return nil }
                index += 2
            } else if loaderFlags.contains(argument) {
                index += 1
            } else if argument.hasPrefix("--") {
                return nil
            } else {
                return argument
            }
        }
        return nil
    }

    private enum Kind {
        case shell, script, java, loader

        /// One-letter flags that make the program run code given on the command line, not a file
        /// (`sh -c`, `python3 -c`, `python3 -m`, `perl -e`, `node -e`).
        var inlineFlags: Set<Character> {
            switch self {
            case .shell: ["c"]
            case .script: ["c", "m", "e"]
            case .java, .loader: []
            }
        }

        var optionsWithValue: Set<String> {
            switch self {
            case .shell: ["-o", "-O", "+O", "--rcfile", "--init-file"]
            case .script: ["-W", "-X", "-r", "--require"]
            case .java, .loader: []
            }
        }
    }

    private static let shells: Set<String> = [
        "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox",
    ]
    private static let scriptFamilies = [
        "python", "perl", "ruby", "node", "nodejs", "lua", "luajit", "php", "tclsh", "wish", "gjs", "guile", "rscript",
        "mono", "wine", "wine64", "pypy", "osascript", "awk", "gawk",
    ]

    private static func kind(of program: String) -> Kind? {
        let name = Substring(program.split(separator: "/").last ?? Substring(program)).lowercased()
        if shells.contains(name) { return .shell }
        if name == "java" { return .java }
        if name.hasPrefix("ld-linux") || name.hasPrefix("ld.so") || name.hasPrefix("ld64.so") { return .loader }
        // python3, python3.11, perl5.36, lua5.4: a family name and a version.
        for family in scriptFamilies where name.hasPrefix(family) {
            let rest = name.dropFirst(family.count)
            if rest.allSatisfy({ $0.isNumber || $0 == "." }) { return .script }
        }
        return nil
    }
}
