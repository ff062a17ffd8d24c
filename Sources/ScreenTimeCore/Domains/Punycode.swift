/// Punycode (RFC 3492), the encoding of Unicode labels in IDNA (`bücher` ⇄ `bcher-kva`).
///
/// Only what IDNA needs: one label at a time, without the `xn--` prefix, lower-case output.
/// Overflow and malformed input give nil, never a trap.
enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 0x80
    private static let maxCodePoint = 0x10FFFF

    static func encode(_ label: some Sequence<Unicode.Scalar>) -> String? {
        let input = label.map { Int($0.value) }
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }

        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < input.count {
            guard let next = input.filter({ $0 >= n }).min() else { return nil }
            let (scaled, overflow1) = (next - n).multipliedReportingOverflow(by: handled + 1)
            let (sum, overflow2) = delta.addingReportingOverflow(scaled)
            guard !overflow1, !overflow2 else { return nil }
            delta = sum
            n = next
            for codePoint in input {
                if codePoint < n { delta += 1 }
                guard codePoint == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = threshold(k, bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, handled + 1, firstTime: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    static func decode(_ text: some StringProtocol) -> String? {
        let scalars = Array(text.unicodeScalars)
        guard scalars.allSatisfy(\.isASCII) else { return nil }
        let delimiter = scalars.lastIndex(of: "-")
        var output: [Int] = delimiter.map { scalars[..<$0].map { Int($0.value) } } ?? []
        var position = delimiter.map { $0 + 1 } ?? 0

        var n = initialN
        var i = 0
        var bias = initialBias
        while position < scalars.count {
            let oldI = i
            var weight = 1
            var k = base
            while true {
                guard position < scalars.count, let value = digitValue(scalars[position]) else { return nil }
                position += 1
                let (product, overflow1) = value.multipliedReportingOverflow(by: weight)
                let (sum, overflow2) = i.addingReportingOverflow(product)
                guard !overflow1, !overflow2 else { return nil }
                i = sum
                let t = threshold(k, bias)
                if value < t { break }
                let (nextWeight, overflow3) = weight.multipliedReportingOverflow(by: base - t)
                guard !overflow3 else { return nil }
                weight = nextWeight
                k += base
            }
            bias = adapt(i - oldI, output.count + 1, firstTime: oldI == 0)
            let (sum, overflow) = n.addingReportingOverflow(i / (output.count + 1))
            guard !overflow, sum <= maxCodePoint else { return nil }
            n = sum
            i %= output.count + 1
            output.insert(n, at: i)
            i += 1
        }
        var result = String.UnicodeScalarView()
        for codePoint in output {
            guard let scalar = Unicode.Scalar(UInt32(codePoint)) else { return nil }
            result.append(scalar)
        }
        return String(result)
    }

    private static func threshold(_ k: Int, _ bias: Int) -> Int {
        k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
    }

    private static func adapt(_ delta: Int, _ count: Int, firstTime: Bool) -> Int {
        var delta = firstTime ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 0x61 + value : 0x30 + value - 26)))
    }

    private static func digitValue(_ scalar: Unicode.Scalar) -> Int? {
        switch scalar {
        case "a"..."z": Int(scalar.value) - 0x61
        case "A"..."Z": Int(scalar.value) - 0x41
        case "0"..."9": Int(scalar.value) - 0x30 + 26
        default: nil
        }
    }
}
