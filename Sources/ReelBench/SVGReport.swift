import Foundation

/// A small SVG writer for the jitter report: a latency CDF per arm on a log axis, and a
/// latency-over-time strip per arm.
public enum SVGReport {
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
                         "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"]

    /// An SVG page of the report: latency timelines and CDFs of every arm.
    public static func render(_ report: JitterReport, title: String? = nil) -> String {
        var arms = report.arms
        if let f = report.floor { arms.insert(f, at: 0) }
        let width = 1000.0
        let cdfHeight = max(420.0, Double(arms.count) * 36 + 20)   // room for the legend
        let stripHeight = 90.0
        let height = 80 + cdfHeight + 60 + Double(arms.count) * (stripHeight + 20) + 20
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="20" y="28" font-size="16" font-weight="bold">\(esc(title ?? "Write latency from the time each write was due"))</text>
        <text x="20" y="48">\(esc("\(report.filesystem) \(report.device) (\(report.mountOptions)) — \(fmt(report.rateMBps)) MB/s, \(report.blockBytes / 1024) KiB writes, \(fmt(report.secondsPerArm)) s per arm"))</text>

        """
        // Axis range: 0.01 ms … max latency (log).
        let maxMs = max(1, arms.map { $0.latencyMs.max }.max() ?? 1)
        let lo = log10(0.01), hi = log10(maxMs * 1.2)
        let left = 70.0, right = width - 240, top = 70.0, bottom = top + cdfHeight
        func x(_ ms: Double) -> Double { left + (log10(max(ms, 0.01)) - lo) / (hi - lo) * (right - left) }
        func y(_ f: Double) -> Double { bottom - f * (bottom - top) }
        svg += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(right - left)\" height=\"\(bottom - top)\" fill=\"none\" stroke=\"#888\"/>\n"
        var decade = floor(lo)
        while decade <= hi {
            let v = pow(10, decade)
            if v >= 0.01 {
                svg += "<line x1=\"\(x(v))\" y1=\"\(top)\" x2=\"\(x(v))\" y2=\"\(bottom)\" stroke=\"#ddd\"/>"
                svg += "<text x=\"\(x(v))\" y=\"\(bottom + 16)\" text-anchor=\"middle\">\(label(v))</text>\n"
            }
            decade += 1
        }
        for f in [0.0, 0.5, 0.9, 0.99, 1.0] {
            svg += "<line x1=\"\(left)\" y1=\"\(y(f))\" x2=\"\(right)\" y2=\"\(y(f))\" stroke=\"#eee\"/>"
            svg += "<text x=\"\(left - 6)\" y=\"\(y(f) + 4)\" text-anchor=\"end\">\(fmt(f))</text>\n"
        }
        svg += "<text x=\"\((left + right) / 2)\" y=\"\(bottom + 34)\" text-anchor=\"middle\">latency (ms, log scale)</text>\n"
        svg += "<text x=\"18\" y=\"\((top + bottom) / 2)\" transform=\"rotate(-90 18 \((top + bottom) / 2))\" text-anchor=\"middle\">fraction of writes</text>\n"
        for (k, a) in arms.enumerated() {
            let c = colors[k % colors.count]
            let pts = a.cdf.map { "\(fmt(x($0[0]))),\(fmt(y($0[1])))" }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(c)\" stroke-width=\"2\" points=\"\(pts)\"/>\n"
            let ly = top + 10 + Double(k) * 36
            svg += "<rect x=\"\(right + 12)\" y=\"\(ly)\" width=\"14\" height=\"4\" fill=\"\(c)\"/>"
            svg += "<text x=\"\(right + 32)\" y=\"\(ly + 6)\">\(esc(a.arm)) / \(esc(a.contention))\(a.round.map { " #\($0)" } ?? "")</text>"
            svg += "<text x=\"\(right + 32)\" y=\"\(ly + 20)\" fill=\"#555\">p99.9 \(fmt(a.latencyMs.p999)) ms, max \(fmt(a.latencyMs.max)) ms</text>\n"
        }
        // Strips: latency over time, log y from 0.01 ms to maxMs.
        var sy = bottom + 60
        for (k, a) in arms.enumerated() {
            let c = colors[k % colors.count]
            let h = stripHeight
            let t1 = max(a.timeline.last?[0] ?? 1, 0.001)
            func sx(_ t: Double) -> Double { left + t / t1 * (right - left) }
            func syv(_ ms: Double) -> Double { sy + h - (log10(max(ms, 0.01)) - lo) / (hi - lo) * h }
            svg += "<rect x=\"\(left)\" y=\"\(sy)\" width=\"\(right - left)\" height=\"\(h)\" fill=\"none\" stroke=\"#aaa\"/>"
            let budget = 1000 / max(report.fps, 1)
            svg += "<line x1=\"\(left)\" y1=\"\(syv(budget))\" x2=\"\(right)\" y2=\"\(syv(budget))\" stroke=\"#f99\" stroke-dasharray=\"4 3\"/>"
            let pts = a.timeline.map { "\(fmt(sx($0[0]))),\(fmt(syv($0[1])))" }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(c)\" stroke-width=\"1\" points=\"\(pts)\"/>"
            svg += "<text x=\"\(right + 12)\" y=\"\(sy + 14)\">\(esc(a.arm)) / \(esc(a.contention))\(a.round.map { " #\($0)" } ?? "")</text>"
            svg += "<text x=\"\(right + 12)\" y=\"\(sy + 30)\" fill=\"#555\">\(a.framesDroppedByRing) frames dropped by a \(a.ringBytes >> 20) MiB ring</text>"
            svg += "<text x=\"\(right + 12)\" y=\"\(sy + 46)\" fill=\"#555\">\(a.writesOverFrameBudget) writes over \(fmt(budget)) ms</text>"
            svg += "<text x=\"\(left - 6)\" y=\"\(sy + 10)\" text-anchor=\"end\" fill=\"#555\">\(label(maxMs * 1.2))</text>"
            svg += "<text x=\"\(left - 6)\" y=\"\(sy + h)\" text-anchor=\"end\" fill=\"#555\">0.01</text>\n"
            sy += h + 20
        }
        svg += "<text x=\"\(left)\" y=\"\(sy + 4)\" fill=\"#555\">strips: latency (log) over the arm's seconds; dashed: the frame budget</text>\n"
        svg += "</svg>\n"
        return svg
    }

    static func fmt(_ v: Double) -> String { String(format: v < 10 ? "%.2f" : "%.1f", v) }
    static func label(_ v: Double) -> String { v < 1 ? String(format: "%g", v) : String(format: "%.0f", v) }
    static func esc(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
