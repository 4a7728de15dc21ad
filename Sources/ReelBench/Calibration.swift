import Foundation
import ReelCore
import ReelStorage

/// Measures which write mode the pool should use on a filesystem: the pool's own write path
/// (`reel jitter`'s `pool` and `pool-direct` arms) at a recording's pace, each mode beside a
/// competing bulk buffered writer — the load under which the modes differ most.
public enum WriteModeCalibration {
    /// Long enough for the competing writer to reach the dirty-page limit (≈ 3–4 s here) so
    /// the measurement sees writeback throttling, not only a filling page cache.
    public static let defaultSeconds: Double = 8

    /// Whether a pool made in `directory` needs a measurement: the filesystem has direct I/O
    /// (so there is a choice) and none of its measurements is cached.
    public static func needed(for directory: String) -> Bool {
        WriteModeMeasurement.cached(for: directory) == nil && Jitter.directIOWorks(directory)
    }

    /// - Parameters:
    ///   - directory: where to measure (the pool's directory: its filesystem is what counts).
    ///   - executable: the `reel` binary, to run the competing writer as `reel _load bulk`.
    public static func measure(directory: String, executable: String, seconds: Double = defaultSeconds,
                               bytesPerSecond: Int64 = 150_000_000, progress: (String) -> Void) throws -> WriteModeMeasurement {
        var o = JitterOptions(directory: directory, executable: executable)
        o.seconds = seconds
        o.bytesPerSecond = bytesPerSecond
        o.floor = false
        o.arms = Jitter.directIOWorks(directory) ? [.pool, .poolDirect] : [.pool]
        let load: [ContentionKind] = o.arms.count > 1 ? [.bulk] : []
        let report = try Jitter.run(o, scenarios: [load], progress: progress)
        let modes = report.arms.map { a in
            WriteModeMeasurement.Mode(name: a.arm == JitterArm.poolDirect.rawValue ? "direct" : "buffered",
                                      p50Ms: a.latencyMs.p50, p99Ms: a.latencyMs.p99, p999Ms: a.latencyMs.p999,
                                      maxMs: a.longestStallMs, ringDrops: a.framesDroppedByRing)
        }
        return WriteModeMeasurement(filesystem: WriteModeMeasurement.filesystemKey(directory),
                                    measuredAt: Date().timeIntervalSince1970,
                                    load: load.isEmpty ? "none (one mode only)" : "a competing bulk buffered writer (reel _load bulk)",
                                    rateMBps: Double(bytesPerSecond) / 1e6, secondsPerMode: seconds, ringBytes: o.ringBytes, modes: modes)
    }
}
