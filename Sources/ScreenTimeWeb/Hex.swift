/// `value` in upper-case hexadecimal, zero-padded to `width` digits (what `String(format: "%02X")`
/// wrote, without Foundation).
func hex(_ value: some BinaryInteger, width: Int) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}
