import Glibc

/// A small file the kernel writes (`/proc/PID/status`, `stat`, `cgroup`), read and parsed as
/// bytes: these are read for every exec on the machine while the exec waits (the exec gate), so
/// they take one `read` into a buffer sized for them and no `String` or `Character` work. Parsing
/// `status` by `Character` cost ~100 µs a read on the test machine against ~16 µs for the read.
enum KernelRecord {
    /// The whole file, at most `limit` bytes; nil when it cannot be opened or read (the process is
    /// gone) or is larger.
    static func read(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var contents = [UInt8](repeating: 0, count: 4096)
        var length = 0
        while true {
            if length == contents.count {
                guard contents.count < limit else { return nil }
                contents += [UInt8](repeating: 0, count: min(contents.count, limit - contents.count))
            }
            let got = retryingInterrupts {
                contents.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + length, $0.count - length) }
            }
            if got < 0 { return nil }
            if got == 0 { break }
            length += got
        }
        contents.removeSubrange(length...)
        return contents
    }

    /// The first word after `key` on the line that starts with it (`Uid:` → the real uid).
    static func field(_ record: [UInt8], _ key: StaticString) -> ArraySlice<UInt8>? {
        let keyLength = key.utf8CodeUnitCount
        var lineStart = 0
        while lineStart < record.count {
            let lineEnd = record[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? record.count
            if lineEnd - lineStart >= keyLength,
                key.withUTF8Buffer({ record[lineStart..<lineStart + keyLength].elementsEqual($0) })
            {
                return words(record[(lineStart + keyLength)..<lineEnd]).first
            }
            lineStart = lineEnd + 1
        }
        return nil
    }

    /// The words of `stat` after the command name (which may hold spaces and parentheses):
    /// index 0 is field 3 (the state).
    static func statFields(_ record: [UInt8]) -> [ArraySlice<UInt8>]? {
        guard let close = record.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        return words(record[(close + 1)...])
    }

    /// Words separated by spaces, tabs and newlines.
    static func words(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        bytes.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") })
    }

    /// A decimal number (an optional leading minus for signed types); nil for anything else.
    static func number<T: FixedWidthInteger>(_ word: ArraySlice<UInt8>?, as: T.Type = T.self) -> T? {
        guard var digits = word, !digits.isEmpty else { return nil }
        var negative = false
        if T.isSigned, digits.first == UInt8(ascii: "-") {
            negative = true
            digits = digits.dropFirst()
            guard !digits.isEmpty else { return nil }
        }
        var value: T = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let digit = T(byte - UInt8(ascii: "0"))
            let (sum, overflowSum) =
                negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflowTimes, !overflowSum else { return nil }
            value = sum
        }
        return value
    }
}
