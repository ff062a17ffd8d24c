public import FoundationEssentials
public import ScreenTimeIPC

/// What the report page and the dashboard draw: text made safe for HTML, and a usage report's
/// segments as an SVG bar chart (no script, no style sheet of its own: it passes a strict
/// Content-Security-Policy).
public enum HTML {
    /// `text` with the five characters HTML gives meaning written as entities.
    public static func escape(_ text: String) -> String { text.htmlEscaped }

    /// Bars of the segments' seconds, with a label under each and the time over each.
    public static func barChart(
        _ segments: [UsageReport.Segment], label: (UsageReport.Segment) -> String, name: String
    ) -> String {
        guard !segments.isEmpty else { return "<p>No data.</p>\n" }
        let width = 800.0
        let height = 220.0
        let top = 20.0
        let bottom = 24.0
        let slot = width / Double(segments.count)
        let longest = max(segments.map(\.seconds).max() ?? 0, 60)
        var svg =
            "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(escape(name))\">\n"
        svg +=
            "<line x1=\"0\" y1=\"\(height - bottom)\" x2=\"\(width)\" y2=\"\(height - bottom)\" stroke=\"#9ca3af\"/>\n"
        for (index, segment) in segments.enumerated() {
            let x = Double(index) * slot
            let barHeight = (height - top - bottom) * segment.seconds / longest
            let y = height - bottom - barHeight
            svg += "<rect x=\(fixed(x + slot * 0.15)) y=\(fixed(y)) width=\(fixed(slot * 0.7)) "
            svg += "height=\(fixed(barHeight)) rx=\"2\" fill=\"#3b82f6\"><title>\(escape(label(segment))): "
            svg += "\(readable(segment.seconds))</title></rect>\n"
            if segment.seconds >= 30 {
                svg += "<text x=\(fixed(x + slot / 2)) y=\(fixed(y - 4)) font-size=\"11\" text-anchor=\"middle\" "
                svg += "fill=\"currentColor\">\(compact(segment.seconds))</text>\n"
            }
            svg += "<text x=\(fixed(x + slot / 2)) y=\(fixed(height - 6)) font-size=\"11\" text-anchor=\"middle\" "
            svg += "fill=\"currentColor\">\(escape(label(segment)))</text>\n"
        }
        return svg + "</svg>\n"
    }

    /// A coordinate to one decimal, quoted: `"12.5"`.
    private static func fixed(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\"\(sign)\(tenths.magnitude / 10).\(tenths.magnitude % 10)\""
    }
}
