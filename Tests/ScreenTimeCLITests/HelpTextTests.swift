import ArgumentParser
import Testing

@testable import screentime

/// Every command's help as a person reads it: its discussion has no backslash left at the end of
/// a line of prose (a `\\` written where a line continuation was meant showed as "a \" in
/// `screentime free --help`); a command example may still end in one, as a shell line does.
@Suite struct HelpTextTests {
    static func commands(_ command: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
        [command] + command.configuration.subcommands.flatMap { commands($0) }
    }

    @Test func noProseLineEndsInABackslash() {
        let all = Self.commands(Screentime.self)
        #expect(all.count > 30)
        for command in all {
            for line in command.configuration.discussion.split(separator: "\n") where line.hasSuffix("\\") {
                let text = line.trimmingCharacters(in: .whitespaces)
                #expect(
                    text.hasPrefix("screentime ") || text.hasPrefix("--"),
                    "\(command.configuration.commandName ?? "\(command)"): \(text)")
            }
        }
    }
}
