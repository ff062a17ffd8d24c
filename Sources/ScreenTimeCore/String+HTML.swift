extension String {
    /// The text with the five characters HTML gives meaning written as entities (`&`, `<`, `>`,
    /// and both quotes): safe in an element's text and in a quoted attribute.
    public var htmlEscaped: String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for character in self {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
