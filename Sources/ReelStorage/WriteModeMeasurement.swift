import Foundation
import ReelCore

/// How a filesystem's write modes compared when measured: the pool's own write path, paced
/// like a recording, once per mode, each beside the same competing buffered writer.
/// `reel pool create` (write mode `auto`) and `reel pool calibrate` take the pool's write
/// mode from it; it is kept in the pool's manifest and, per filesystem, in a cache so that
/// the next pool on the same filesystem needs no new measurement.
public struct WriteModeMeasurement: Codable, Sendable, Equatable {
    /// The figures of one write mode.
    public struct Mode: Codable, Sendable, Equatable {
        /// `buffered` or `direct`.
        public var name: String
        /// Write latency percentiles and the longest, in ms.
        public var p50Ms: Double, p99Ms: Double, p999Ms: Double, maxMs: Double
        /// Frames a capture ring of `ringBytes` would have dropped.
        public var ringDrops: Int
        /// The figures, as measured.
        public init(name: String, p50Ms: Double, p99Ms: Double, p999Ms: Double, maxMs: Double, ringDrops: Int) {
            self.name = name; self.p50Ms = p50Ms; self.p99Ms = p99Ms; self.p999Ms = p999Ms; self.maxMs = maxMs; self.ringDrops = ringDrops
        }
    }

    /// The filesystem measured (`WriteModeMeasurement.filesystemKey`).
    public var filesystem: String
    /// Seconds since 1970 when it was measured.
    public var measuredAt: Double
    /// What ran beside the writes.
    public var load: String
    /// The paced rate, MB/s.
    public var rateMBps: Double
    /// Seconds each mode wrote.
    public var secondsPerMode: Double
    /// The capture ring simulated.
    public var ringBytes: Int64
    /// Each mode's figures.
    public var modes: [Mode]
    /// `buffered` or `direct`: the winner (see `choose`).
    public var chosen: String
    /// Why `chosen` won, in words.
    public var reason: String

    /// A measurement of `modes`; the winner is chosen here.
    public init(filesystem: String, measuredAt: Double, load: String, rateMBps: Double, secondsPerMode: Double,
                ringBytes: Int64, modes: [Mode]) {
        self.filesystem = filesystem; self.measuredAt = measuredAt; self.load = load; self.rateMBps = rateMBps
        self.secondsPerMode = secondsPerMode; self.ringBytes = ringBytes; self.modes = modes
        (chosen, reason) = WriteModeMeasurement.choose(modes)
    }

    /// Fewer ring drops wins; then the lower p99.9. Within 10 % of each other the buffered
    /// mode is kept: it needs no alignment, and the muxer's header patches stay cheap.
    public static func choose(_ modes: [Mode]) -> (String, String) {
        guard let first = modes.first else { return ("buffered", "nothing was measured") }
        guard modes.count > 1 else { return (first.name, "the only mode this filesystem offers") }
        let fewestDrops = modes.map(\.ringDrops).min()!
        let candidates = modes.filter { $0.ringDrops == fewestDrops }
        let best = candidates.min { $0.p999Ms < $1.p999Ms }!
        let others = modes.filter { $0.name != best.name }
        func figures(_ m: Mode) -> String { String(format: "%@ p99.9 %.1f ms, %d ring drops", m.name, m.p999Ms, m.ringDrops) }
        let against = others.map(figures).joined(separator: "; ")
        if best.name != "buffered", let b = candidates.first(where: { $0.name == "buffered" }), b.p999Ms <= best.p999Ms * 1.1 {
            return ("buffered", "within 10 % of the best (\(figures(best)); \(figures(b))): buffered kept")
        }
        return (best.name, "\(figures(best)) against \(against)")
    }

    /// `ext4 on 254:0` — a filesystem as one mount of one device; a path that does not exist
    /// yet counts as the nearest directory above it that does.
    public static func filesystemKey(_ path: String) -> String {
        var p = path.isEmpty ? "." : path
        var st = stat()
        while stat(p, &st) != 0 {
            let up = parentDirectory(of: p)
            if up == p { return "unknown" }
            p = up
        }
        return "\(Sys.filesystemName(p)) on \(major(st.st_dev)):\(minor(st.st_dev))"
    }

    private static func major(_ d: dev_t) -> UInt64 { (UInt64(d) >> 8) & 0xfff | (UInt64(d) >> 32) & ~0xfff }
    private static func minor(_ d: dev_t) -> UInt64 { UInt64(d) & 0xff | (UInt64(d) >> 12) & ~0xff }

    // MARK: The per-filesystem cache

    /// `$XDG_CACHE_HOME/reel/write-modes.json`, else `~/.cache/reel/write-modes.json`.
    public static var cachePath: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? "/tmp") + "/.cache")
        return base + "/reel/write-modes.json"
    }

    /// The measurement cached for the filesystem holding `path`, if any.
    public static func cached(for path: String) -> WriteModeMeasurement? {
        guard let data = FileManager.default.contents(atPath: cachePath),
              let all = try? JSONDecoder().decode([String: WriteModeMeasurement].self, from: data) else { return nil }
        return all[filesystemKey(path)]
    }

    /// Keeps `self` as the measurement of its filesystem (written to a temporary file, then
    /// renamed; a cache that cannot be written is only a lost shortcut).
    public func remember() {
        let path = WriteModeMeasurement.cachePath
        var all = FileManager.default.contents(atPath: path).flatMap { try? JSONDecoder().decode([String: WriteModeMeasurement].self, from: $0) } ?? [:]
        all[filesystem] = self
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(all) else { return }
        try? FileManager.default.createDirectory(atPath: parentDirectory(of: path), withIntermediateDirectories: true)
        let tmp = path + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: tmp, contents: data) else { return }
        if rename(tmp, path) != 0 {
            // The cache is an optimisation: without it the next pool measures again.
            do { try Sys.unlinkIfPresent(tmp) } catch {}
        }
    }
}
