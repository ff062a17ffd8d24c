/// The head of a plain-text HTTP/1 request, read from the first bytes a client sends: the hosts
/// it names — `Host` headers, an absolute-form target (`GET http://host/ HTTP/1.1`, as to a
/// proxy) and a `CONNECT host:port` authority.
///
/// The bytes are hostile, and read as the most lenient common server reads them: a request is
/// recognised by its first word (a token of letters, after any empty lines and blanks, ended by
/// a blank), where a blank is any byte some server splits a request line on (space and tab,
/// and the vertical tab, form feed, 0x1C–0x1F, 0x85 and 0xA0 that Python's `str.split` takes);
/// from then on it is HTTP, and what cannot be read — no end of the head within the limit, a
/// request line without a version, HTTP/2's clear-text preface — is `.invalid`, so the
/// connection is refused rather than passed. A request sent behind the first in the same bytes
/// is judged too, past the first one's body (by `Content-Length`, or chunk by chunk).
public struct HTTPRequestHead: Hashable, Sendable {
    public typealias Reading = OpeningReading<HTTPRequestHead>

    /// The longest head waited for.
    public static let maximumLength = 16_384

    public var method: String
    /// Every host the request names, without ports or brackets, lower-cased, in order.
    public var hosts: [[UInt8]]

    public static func read(_ bytes: ArraySlice<UInt8>) -> Reading {
        // Empty lines before a request line are ignored by servers (RFC 9112 §2.2), and blanks by
        // lenient ones, so here too.
        let start = bytes.firstIndex { $0 != 0x0D && $0 != 0x0A && !isBlank($0) } ?? bytes.endIndex
        guard start - bytes.startIndex < 256 else { return .other }
        let request = bytes[start...]
        // The method: 3 to 20 letters of either case (lenient servers take `get`) or `-`/`_`,
        // then a space or a tab.
        var index = request.startIndex
        while index < request.endIndex, index - request.startIndex <= 20, isMethodByte(request[index]) { index += 1 }
        let methodLength = index - request.startIndex
        guard index < request.endIndex else {
            // Still all letters (or nothing yet): wait, unless it is already too long for a method.
            return methodLength > 20 ? .other : .incomplete
        }
        guard methodLength >= 3, methodLength <= 20, isBlank(request[index]) else { return .other }
        let method = String(decoding: request[request.startIndex..<index], as: UTF8.self).uppercased()
        guard let headEnd = endOfHead(request) else {
            return bytes.count >= maximumLength
                ? .invalid("no end of the request head in \(bytes.count) bytes") : .incomplete
        }
        var hosts: [[UInt8]] = []
        var bodyLength = 0
        var chunked = false
        if let problem = readHosts(
            request[request.startIndex..<headEnd], method: method, into: &hosts, bodyLength: &bodyLength,
            chunked: &chunked)
        {
            return .invalid(problem)
        }
        // A server that reads no body for this method (Python's BaseHTTPRequestHandler, for a
        // GET) takes a body that is a request for the next request: a body that begins with a
        // method is judged as one too.
        if bodyLength > 0 || chunked, startsWithMethod(request[headEnd...]) {
            switch read(request[headEnd...]) {
            case .read(let inner): hosts += inner.hosts
            case .incomplete: return .incomplete
            case .invalid(let problem): return .invalid(problem)
            case .other: break
            }
        }
        // A request sent behind this one in the same bytes (pipelined) is judged too, past this
        // one's body (its Content-Length, or its chunks): the connection waits for it when it
        // has begun. A body not all here yet ends what can be judged.
        var next: Int?
        if chunked {
            switch endOfChunks(request[headEnd...]) {
            case .some(.some(let end)): next = end
            case .some(.none): return .invalid("a chunked body that cannot be read")
            case .none: next = nil
            }
        } else if bodyLength <= maximumLength, headEnd + bodyLength <= request.endIndex {
            next = headEnd + bodyLength
        }
        guard let next, next < request.endIndex else {
            return .read(HTTPRequestHead(method: method, hosts: hosts))
        }
        switch read(request[next...]) {
        case .read(let next): hosts += next.hosts
        case .incomplete: return .incomplete
        case .invalid(let problem): return .invalid(problem)
        case .other: break
        }
        return .read(HTTPRequestHead(method: method, hosts: hosts))
    }

    /// The hosts one head names; the problem when it cannot be read.
    private static func readHosts(
        _ head: ArraySlice<UInt8>, method: String, into hosts: inout [[UInt8]], bodyLength: inout Int,
        chunked: inout Bool
    ) -> String? {
        // Lines end at LF; a bare CR ends one too for servers that take it.
        var lines = head.split(omittingEmptySubsequences: false) { $0 == 0x0A || $0 == 0x0D }
        lines.removeAll { $0.isEmpty }
        guard let requestLine = lines.first else { return "an empty request head" }
        let words = requestLine.split(omittingEmptySubsequences: true, whereSeparator: isBlank)
        guard words.count == 3, words[2].starts(with: Array("HTTP/1.".utf8)) else {
            return "a request line that is not HTTP/1 (\(method))"
        }
        let target = words[1]
        if method == "CONNECT" {
            guard let host = host(authority: target) else { return "a CONNECT target that is not a host" }
            hosts.append(host)
        } else if let schemeEnd = target.firstRange(of: Array("://".utf8)) {
            let rest = target[schemeEnd.upperBound...]
            let authority = rest.prefix { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }
            guard let host = host(authority: authority) else { return "a request target whose host is unreadable" }
            hosts.append(host)
        }
        var sawLength = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A) else { return "a header line without a colon" }
            // `Host :` and ` Host:` are refused by careful servers and taken by others: a name.
            let name = line[line.startIndex..<colon].filter { !isBlank($0) }.map { $0 | 0x20 }
            if name == Array("content-length".utf8) {
                let digits = line[(colon + 1)...].filter { !isBlank($0) }
                let length = Int(String(decoding: digits, as: UTF8.self)) ?? Int.max
                // Two that differ: servers take either, so where the next request starts is unknown.
                if sawLength, length != bodyLength { return "conflicting Content-Length headers" }
                sawLength = true
                bodyLength = length
                continue
            }
            if name == Array("transfer-encoding".utf8) {
                chunked = true
                continue
            }
            guard name == Array("host".utf8) else { continue }
            let value = line[(colon + 1)...].drop(while: isBlank)
            let trimmed = value.reversed().drop(while: isBlank).reversed()
            guard let host = host(authority: ArraySlice(trimmed)) else { return "a Host header that is not a host" }
            hosts.append(host)
        }
        return nil
    }

    /// Whether bytes begin with an HTTP method servers know (any case) and a blank, after blanks
    /// and empty lines: what a body that is a request begins with.
    static func startsWithMethod(_ bytes: ArraySlice<UInt8>) -> Bool {
        let start = bytes.firstIndex { $0 != 0x0D && $0 != 0x0A && !isBlank($0) } ?? bytes.endIndex
        let word = bytes[start...].prefix { isMethodByte($0) }
        guard start + word.count < bytes.endIndex, isBlank(bytes[start + word.count]) else { return false }
        let method = String(decoding: word.map { $0 & ~0x20 }, as: UTF8.self)
        return ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE"].contains(method)
    }

    /// A byte some server takes for a blank between words.
    static func isBlank(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x20, 0x09, 0x0B, 0x0C, 0x1C...0x1F, 0x85, 0xA0: true
        default: false
        }
    }

    /// Where a chunked body that starts at `bytes`' start ends (past its last chunk and
    /// trailers): `.none` while it is not all here, `.some(.none)` when it cannot be read.
    private static func endOfChunks(_ bytes: ArraySlice<UInt8>) -> Int?? {
        var index = bytes.startIndex
        func line() -> ArraySlice<UInt8>? {
            guard let end = bytes[index...].firstIndex(of: 0x0A) else { return nil }
            defer { index = end + 1 }
            return bytes[index..<end]
        }
        while index - bytes.startIndex <= maximumLength {
            guard let sizeLine = line() else { return .none }
            let digits = sizeLine.prefix { $0 != 0x3B && $0 != 0x0D }.filter { !isBlank($0) }
            guard !digits.isEmpty, digits.count <= 8, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16)
            else { return .some(.none) }
            if size == 0 {
                // Trailers, up to an empty line.
                while true {
                    guard let trailer = line() else { return .none }
                    if trailer.allSatisfy({ $0 == 0x0D }) { return .some(index) }
                    if index - bytes.startIndex > maximumLength { return .some(.none) }
                }
            }
            guard size <= maximumLength else { return .none }
            index += size
            guard index < bytes.endIndex else { return .none }
            // The chunk's own line end.
            guard line() != nil else { return .none }
        }
        return .none
    }

    private static func isMethodByte(_ byte: UInt8) -> Bool {
        (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D || byte == 0x5F
    }

    /// The offset just past the blank line that ends the head (`\r\n\r\n`, or bare `\n\n`).
    private static func endOfHead(_ bytes: ArraySlice<UInt8>) -> Int? {
        var index = bytes.startIndex
        let limit = min(bytes.endIndex, bytes.startIndex + maximumLength)
        while index < limit {
            if bytes[index] == 0x0A {
                if index + 1 < bytes.endIndex, bytes[index + 1] == 0x0A { return index + 2 }
                if index + 2 < bytes.endIndex, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// The host of `host`, `host:port`, `[v6]:port` or `user@host`, lower-cased; nil when empty
    /// or holding bytes no host name has.
    static func host(authority: ArraySlice<UInt8>) -> [UInt8]? {
        var text = authority
        if let at = text.lastIndex(of: 0x40) { text = text[(at + 1)...] }
        if text.first == 0x5B {
            guard let close = text.firstIndex(of: 0x5D) else { return nil }
            text = text[(text.startIndex + 1)..<close]
        } else if let colon = text.firstIndex(of: 0x3A) {
            text = text[text.startIndex..<colon]
        }
        while text.last == 0x2E { text = text.dropLast() }
        guard !text.isEmpty, text.count <= 255,
            text.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x2F && $0 != 0x5C })
        else { return nil }
        return text.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 }
    }
}
