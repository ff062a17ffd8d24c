import CQRencode
import FoundationEssentials
import Glibc
import ScreenTimeCore

/// A QR code (libqrencode) for a phone's camera: `screentime web pair`'s link, drawn in the
/// terminal with half blocks, two rows of modules to a line, black on white whatever the
/// terminal's colours, with the quiet zone readers need around it.
struct QRCode {
    /// Rows of modules, `true` for dark; square.
    let modules: [[Bool]]

    /// The code of `text` (level M: a phone reads it off a screen), or nil when it does not fit.
    init?(_ text: String) {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        var rows: [[Bool]] = []
        for y in 0..<width {
            // Bit 0 of each byte is the module's colour (1: dark); the others say what it is for.
            rows.append((0..<width).map { x in code.pointee.data[y * width + x] & 1 == 1 })
        }
        modules = rows
    }

    /// The modules with `border` light ones around.
    func framed(border: Int) -> [[Bool]] {
        let width = modules.count + 2 * border
        let light = [Bool](repeating: false, count: width)
        let padding = [Bool](repeating: false, count: border)
        return [[Bool]](repeating: light, count: border) + modules.map { padding + $0 + padding }
            + [[Bool]](repeating: light, count: border)
    }

    /// For a terminal: each character two modules, top and bottom; white and black set
    /// explicitly (a dark terminal's default colours would invert it).
    func terminal() -> String {
        var rows = framed(border: 2)
        if rows.count % 2 == 1 { rows.append([Bool](repeating: false, count: rows[0].count)) }
        var out = ""
        for pair in stride(from: 0, to: rows.count, by: 2) {
            out += "\u{1B}[97;40m"
            for (top, bottom) in zip(rows[pair], rows[pair + 1]) {
                switch (top, bottom) {
                case (false, false): out += "█"
                case (false, true): out += "▀"
                case (true, false): out += "▄"
                case (true, true): out += " "
                }
            }
            out += "\u{1B}[0m\n"
        }
        return out
    }

    /// A plain bitmap (PBM, `P1`), `scale` pixels to a module, with a quiet zone of four: what a
    /// reader's test decodes.
    func bitmap(scale: Int) -> String {
        let rows = framed(border: 4)
        var out = "P1\n\(rows[0].count * scale) \(rows.count * scale)\n"
        for row in rows {
            let line = row.flatMap { [String](repeating: $0 ? "1" : "0", count: scale) }.joined(separator: " ")
            out += String(repeating: line + "\n", count: scale)
        }
        return out
    }
}
