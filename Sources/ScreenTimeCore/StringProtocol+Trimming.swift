extension StringProtocol {
    /// The text without leading and trailing white space (spaces, tabs, line breaks).
    package func trimmingWhitespace() -> String { trimming { $0.properties.isWhitespace } }

    /// The text without leading and trailing spaces and tabs (Foundation's `.whitespaces`: the
    /// space separators and the tab; line breaks stay).
    package func trimmingSpaces() -> String {
        trimming { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }

    private func trimming(_ trimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed($0) }),
            let last = scalars.lastIndex(where: { !trimmed($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}

/// `value` in decimal, zero-padded to two digits: the minutes of "07:05" (what
/// `String(format: "%02d")` wrote; the dashboard's modules link no Foundation).
package func twoDigits(_ value: Int) -> String {
    (0..<10).contains(value) ? "0\(value)" : "\(value)"
}

/// `text` followed by spaces up to `width` characters (as it is when longer): a column.
package func padded(_ text: String, to width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

/// Bytes as lowercase hexadecimal, two digits each (what `String(format: "%02x")` wrote).
package func hexadecimal(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
    return String(decoding: text, as: UTF8.self)
}
