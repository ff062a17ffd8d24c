import Foundation
import ScreenTimeTestThreads
import Testing

@testable import screentime

/// The pairing QR code, read back by a real reader (zbarimg, Debian's zbar-tools) from the bitmap
/// of the same modules the terminal shows.
@Suite(.threadsOfTheirOwn) struct QRCodeTests {
    @Test(arguments: [
        "https://192.168.1.20:8443/signin?code=ABCD2345",
        "https://[fd00::1a2b:3c4d]:8443/signin?code=Z9Y8X7W6",
    ])
    func aReaderReadsThePairingLinkBack(link: String) throws {
        let code = try #require(QRCode(link))
        #expect(code.modules.count >= 21 && code.modules.allSatisfy { $0.count == code.modules.count })
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).pbm")
        defer { try? FileManager.default.removeItem(at: file) }
        try code.bitmap(scale: 4).write(to: file, atomically: true, encoding: .ascii)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/zbarimg")
        reader.arguments = ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", file.path]
        let output = Pipe()
        reader.standardOutput = output
        try reader.run()
        let read = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        reader.waitUntilExit()
        #expect(reader.terminationStatus == 0 && read.trimmingCharacters(in: .newlines) == link, "\(read)")
    }

    @Test func theTerminalDrawingIsBlackOnWhiteTwoRowsALine() throws {
        let code = try #require(QRCode("https://10.0.0.2:8443/signin?code=ABCD2345"))
        let lines = code.terminal().split(separator: "\n")
        // The modules and a quiet zone of two on each side, two rows to a line.
        #expect(lines.count == (code.modules.count + 4 + 1) / 2)
        #expect(lines.allSatisfy { $0.hasPrefix("\u{1B}[97;40m") && $0.hasSuffix("\u{1B}[0m") })
        // The quiet zone's first line is all light.
        let first = lines[0].dropFirst(8).dropLast(4)
        #expect(first.allSatisfy { $0 == "█" } && first.count == code.modules.count + 4)
    }
}
